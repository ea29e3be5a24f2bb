"""Experiment 1 of the NORD paper: pygmo's genetic algorithm, every network trained locally.

    python experiments/experiment1_local.py [--dataset digits] [--seed 0] [--smoke]

pygmo's ``sga`` (crossover 0.9, mutation 0.2, population 10, 10 generations) searches the
paper's space of convolutional layers; one process trains each candidate in turn.
"""
import sys

from common import config_from, launch, parser

from nord.app.runner import run


def main(args) -> int:
    config = config_from(args, evaluation="local", algorithm="pygmo")
    run(config, resume=args.resume)
    return 0


if __name__ == "__main__":
    sys.exit(launch(main, parser("experiment1", __doc__.splitlines()[0]).parse_args()))
