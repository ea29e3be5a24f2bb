"""Command-line options the three experiments share, turned once into a RunConfig.

The paper's genetic-algorithm setting is the default of every experiment: population 10,
10 generations, crossover 0.9, mutation 0.2; ``--smoke`` shrinks everything for the tests.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nord.app.cli import add_run_flags  # noqa: E402
from nord.errors import NordError, RunInterrupted  # noqa: E402
from nord.app.runner import RunConfig  # noqa: E402


SCHEDULING = ("valid_fraction", "scheduler", "min_epochs", "max_epochs", "eta")
"""``nord run`` flags the experiments take as they are: the validation split and early stopping."""


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--dataset", default="digits",
                   help="digits (built in), mnist, fashion-mnist or cifar10 (default: digits)")
    p.add_argument("--data-root", default=None,
                   help="folder holding the data set's files (default: $NORD_DATA_ROOT, else "
                        "~/.cache/nord/data)")
    p.add_argument("--seed", type=int, default=0,
                   help="seeds the algorithm and every network's training (default: 0)")
    p.add_argument("--population", type=int, default=10, help="population size (default: 10)")
    p.add_argument("--generations", type=int, default=10,
                   help="generations after the initial population (default: 10)")
    p.add_argument("--epochs", type=int, default=1,
                   help="training epochs of each network (default: 1)")
    p.add_argument("--batch-size", type=int, default=64,
                   help="training mini-batch per rank, in samples (default: 64)")
    p.add_argument("--lr", type=float, default=1e-3, help="learning rate (default: 0.001)")
    p.add_argument("--layers", type=int, default=2,
                   help="convolutional layers of the space (default: 2)")
    p.add_argument("--mode", default="sync", choices=["sync", "async"],
                   help="sync: generations, as in the paper; async: steady state, no rank "
                        "waits (default: sync)")
    p.add_argument("--journal", default=None,
                   help="the run's SQLite journal (default: runs/<experiment>.db)")
    p.add_argument("--resume", action="store_true", help="continue the run in --journal")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads per rank (default: torch's choice)")
    p.add_argument("--device", default="auto",
                   help="auto (CUDA when available), cpu, cuda or cuda:N (default: auto)")
    add_run_flags(p, SCHEDULING + ("data_checksums",))
    p.add_argument("--smoke", action="store_true",
                   help="a tiny run (population 4, 2 generations, small channel bounds)")
    return p


def config_from(args, name: str, evaluation: str, algorithm: str, **overrides) -> RunConfig:
    population, generations = (4, 2) if args.smoke else (args.population, args.generations)
    params = {"population_size": population}
    space_params = {"layers": args.layers}
    if args.smoke:
        space_params.update(channels=(1, 8), kernel_size=(1, 8))
    if algorithm == "pygmo":
        params.update(generations=generations, cr=0.9, m=0.2)
    else:
        params.update(crossover_probability=0.9, mutation_probability=0.2)
    # the initial population and the offspring of every generation, as pygmo's sga evaluates,
    # so the experiments compare at one budget
    budget = population * (generations + 1)
    values = dict(algorithm=algorithm, algorithm_params=params, space="conv",
                  space_params=space_params, evaluation=evaluation, dataset=args.dataset,
                  data_root=args.data_root, epochs=args.epochs, batch_size=args.batch_size,
                  lr=args.lr, budget=budget, seed=args.seed, threads=args.threads,
                  device=args.device, mode=args.mode,
                  journal=args.journal or os.path.join("runs", f"{name}.db"))
    values.update({name: getattr(args, name) for name in (*SCHEDULING, "data_checksums")
                   if getattr(args, name, None) is not None})
    values.update(overrides)
    os.makedirs(os.path.dirname(os.path.abspath(values["journal"])), exist_ok=True)
    return RunConfig(**values)


def launch(main, args) -> int:
    """Run an experiment's ``main(args)``: a refused or failed run ends with one line on
    rank 0 and status 2 on every rank (no traceback), an interrupted one with 128 + the
    signal's number (130 for SIGINT, 143 for SIGTERM)."""
    from nord.parallel.environment import launcher_rank

    try:
        return main(args)
    except RunInterrupted as stop:
        return stop.exit_code   # the run said how to resume it
    except NordError as error:
        if (launcher_rank() or 0) == 0:
            print(f"{os.path.basename(sys.argv[0])}: {error}", file=sys.stderr)
        return 2
