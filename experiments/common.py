"""Command-line options the three experiments share, turned once into a RunConfig.

The paper's genetic-algorithm setting is the default of every experiment: population 10,
10 generations, crossover 0.9, mutation 0.2; ``--smoke`` shrinks everything for the tests.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nord.app.commands.run import RUN_FLAGS, add_run_flags  # noqa: E402
from nord.errors import NordError, RunInterrupted  # noqa: E402
from nord.app.settings import RunConfig  # noqa: E402


SHARED_FLAGS = ("dataset", "data_root", "data_checksums", "valid_fraction", "population",
                "generations", "epochs", "batch_size", "lr", "scheduler", "min_epochs",
                "max_epochs", "eta", "mode", "threads", "device", "seed", "journal", "resume")
"""``nord run`` flags every experiment takes, defined once in :mod:`nord.app.commands.run`."""

PAPER = {"population": 10, "generations": 10}
"""The experiments' defaults that differ from nord run's on purpose: the paper's setting."""


def parser(name: str, description: str, flags=(), defaults=None) -> argparse.ArgumentParser:
    """The parser of experiment ``name``: the shared flags, ``flags`` (more ``nord run``
    flags), --layers and --smoke. Its journal defaults to runs/NAME.db, population and
    generations to :data:`PAPER`, and the flags of ``defaults`` to their values there."""
    p = argparse.ArgumentParser(description=description)
    add_run_flags(p, SHARED_FLAGS + tuple(flags), defaults={
        **PAPER, "journal": os.path.join("runs", f"{name}.db"), **(defaults or {})})
    p.add_argument("--layers", type=int, default=2,
                   help="convolutional layers of the space (default: 2)")
    p.add_argument("--smoke", action="store_true",
                   help="a tiny run (population 4, 2 generations, small channel bounds)")
    return p


def config_from(args, evaluation: str, algorithm: str) -> RunConfig:
    """The RunConfig of an experiment: the paper's genetic algorithm (``algorithm``:
    'pygmo' or 'genetic') with ``evaluation``, and every ``nord run`` flag given."""
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
    values = {name: getattr(args, name) for name, *_ in RUN_FLAGS
              if getattr(args, name, None) is not None}
    values.update(algorithm=algorithm, algorithm_params=params, space="conv",
                  space_params=space_params, evaluation=evaluation, budget=budget)
    os.makedirs(os.path.dirname(os.path.abspath(values["journal"])), exist_ok=True)
    return RunConfig(**values)


def launch(main, args) -> int:
    """Run an experiment's ``main(args)``: a refused or failed run ends with one line on
    rank 0 and status 2 on every rank (no traceback), an interrupted one with 128 + the
    signal's number (130 for SIGINT, 143 for SIGTERM)."""
    from nord.parallel import launcher_rank

    try:
        return main(args)
    except RunInterrupted as stop:
        return stop.exit_code   # the run said how to resume it
    except NordError as error:
        if (launcher_rank() or 0) == 0:
            print(f"{os.path.basename(sys.argv[0])}: {error}", file=sys.stderr)
        return 2
