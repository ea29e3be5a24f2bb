"""A search run for the tests: serial (``--serial``) or under mpirun, killable and resumable.

    python tests/parallel/programs/search_run.py --journal run.db --budget 30 --serial
    mpirun -np 3 python tests/parallel/programs/search_run.py --journal run.db --mode async

Rank 0 writes the summary as JSON to ``--summary``; with ``--log`` every evaluating rank
appends ``"<world rank> <hash>"`` per evaluation (see tests/helpers/toy.py).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.helpers.toy import (ToyCurves, ToyEvaluator, ToyGenerational,  # noqa: E402
                               ToyGroupEvaluator, ToySpace)


def make_algorithm(name: str, seed: int, population: int):
    space = ToySpace()
    if name == "toy":
        return ToyGenerational(space, seed=seed, population=population)
    if name == "bohb":   # a model after 3 results at a budget: it proposes within a short run
        from nord.search.algorithms.bohb import BOHB

        return BOHB(space, seed=seed, min_points_in_model=1)
    from nord.search.algorithms.random_search import RandomSearch

    return RandomSearch(space, seed=seed, generation_size=population)


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--journal", required=True)
    parser.add_argument("--budget", type=int, default=20)
    parser.add_argument("--mode", choices=("sync", "async"), default="sync")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--algorithm", choices=("toy", "random", "bohb"), default="toy")
    parser.add_argument("--population", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--log", default=None)
    parser.add_argument("--summary", default=None)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--serial", action="store_true", help="SerialExecutor, no MPI at all")
    parser.add_argument("--group-size", default="1", help="ranks per group, or 'all'")
    parser.add_argument("--dedicated-root", action="store_true")
    parser.add_argument("--poll-interval", type=float, default=None)
    parser.add_argument("--prefetch", type=int, default=0)
    parser.add_argument("--scheduler", default=None,
                        help="train ToyCurves in legs under this scheduler (rungs 1, 3, 9)")
    return parser.parse_args(argv)


def write_summary(path, summary):
    if path is None or summary is None:
        return
    data = {
        "evaluations": summary.evaluations, "evaluated": summary.evaluated, "cached": summary.cached,
        "failed": summary.failed, "replayed": summary.replayed, "wall_time": summary.wall_time,
        "busy_time": summary.busy_time, "workers": summary.workers, "mode": summary.mode,
        "best_accuracy": None if summary.best_result is None else summary.best_result.accuracy,
        "epochs_trained": getattr(summary, "epochs_trained", None),
    }
    Path(path).write_text(json.dumps(data))


def main(args):
    from nord.search.engine import run_search

    algorithm = make_algorithm(args.algorithm, args.seed, args.population)
    evaluator = ToyEvaluator(sleep=args.sleep, log=args.log)
    common = dict(budget=args.budget, journal=args.journal, mode=args.mode, resume=args.resume,
                  batch_size=args.batch_size)
    if args.scheduler is not None:
        from nord.search.schedulers import make_scheduler
        evaluator = ToyCurves(max_epochs=9, sleep=args.sleep, log=args.log)
        common["scheduler"] = make_scheduler(args.scheduler, min_epochs=1, max_epochs=9, eta=3)
    if args.serial:
        write_summary(args.summary, run_search(algorithm, evaluator, **common))
        return
    from nord.parallel.environment import Environment
    from nord.search.executors import MPIExecutor

    group_size = None if args.group_size == "all" else int(args.group_size)
    with Environment(group_size=group_size, dedicated_root=args.dedicated_root) as env:
        if not env.is_root:
            algorithm = None  # only rank 0 needs one
        if env.group is not None and env.group.size > 1:
            evaluator = ToyGroupEvaluator(env.group.comm, sleep=args.sleep, log=args.log)
        options = {} if args.poll_interval is None else {"poll_interval": args.poll_interval}
        executor = MPIExecutor(evaluator, env, prefetch=args.prefetch, **options)
        summary = run_search(algorithm, executor=executor, **common)
        if env.is_root:
            write_summary(args.summary, summary)


if __name__ == "__main__":
    main(parse())
