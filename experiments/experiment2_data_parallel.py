"""Experiment 2 of the NORD paper: pygmo's genetic algorithm, every network data-parallel on all ranks.

    mpirun -np 2 python experiments/experiment2_data_parallel.py [--backend horovod] [--smoke]

Rank 0 runs pygmo's ``sga`` (crossover 0.9, mutation 0.2, population 10, 10 generations);
each candidate is trained by every rank together: Horovod's DistributedOptimizer (or
torch.distributed with ``--backend torch``), each rank on its shard of the data.
"""
import sys

from common import config_from, launch, parser

from nord.app.runner import run


def main(args) -> int:
    config = config_from(args, evaluation="data-parallel", algorithm="pygmo")
    run(config, resume=args.resume)
    return 0


if __name__ == "__main__":
    p = parser("experiment2", __doc__.splitlines()[0], flags=("backend",))
    sys.exit(launch(main, p.parse_args()))
