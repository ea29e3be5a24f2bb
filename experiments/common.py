"""Command-line options the three experiments share, turned once into a RunConfig.

The paper's genetic-algorithm setting is the default of every experiment: population 10,
10 generations, crossover 0.9, mutation 0.2; ``--smoke`` shrinks everything for the tests.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nord.runner import RunConfig  # noqa: E402


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--dataset", default="digits",
                   help="digits (built in, default), mnist, fashion-mnist or cifar10")
    p.add_argument("--data-root", default=None, help="folder holding the data set's files")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--population", type=int, default=10)
    p.add_argument("--generations", type=int, default=10)
    p.add_argument("--epochs", type=int, default=1, help="training epochs of each network")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--layers", type=int, default=2, help="convolutional layers of the space")
    p.add_argument("--journal", default=None, help="SQLite journal (default runs/<name>.db)")
    p.add_argument("--resume", action="store_true", help="continue the run in --journal")
    p.add_argument("--threads", type=int, default=None, help="torch threads per rank")
    p.add_argument("--device", default="auto")
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
                  device=args.device, journal=args.journal or os.path.join("runs", f"{name}.db"))
    values.update(overrides)
    os.makedirs(os.path.dirname(os.path.abspath(values["journal"])), exist_ok=True)
    return RunConfig(**values)
