"""Experiment 3 of the NORD paper: a distributed genetic algorithm, each rank training whole networks.

    mpirun -np 3 python experiments/experiment3_distributed_ga.py [--mode sync|async] [--smoke]

Rank 0 runs nord's genetic algorithm with the paper's parameters (crossover 0.9, mutation
0.2, population 10, 10 generations) and hands candidates to the other ranks, each of which
trains whole networks (groups of one rank; ``--group-size k`` trains each network on k
ranks). ``--mode sync`` waits for each generation, as in the paper; ``--mode async`` is the
steady-state variant, where a rank that finishes gets the next candidate at once.
(pygmo's ``sga`` proposes one candidate at a time, so it could not keep several ranks busy.)
"""
import sys

from common import config_from, launch, parser

from nord.app.runner import run


def main(args) -> int:
    config = config_from(args, evaluation="distributed", algorithm="genetic")
    config.algorithm_params["steady_state"] = config.mode == "async"
    run(config, resume=args.resume)
    return 0


if __name__ == "__main__":
    # group_size 1, as recorded in this experiment's journals before (nord run's is None: 1)
    p = parser("experiment3", __doc__.splitlines()[0], flags=("group_size",),
               defaults={"group_size": 1})
    sys.exit(launch(main, p.parse_args()))
