"""A search on two worker processes, for the kill -9 tests: ``python -m
tests.helpers.worker_program JOURNAL [--resume] [--budget N] [--sleep S]``."""
import argparse
import functools

from nord.search import ProcessExecutor, run_search
from tests.helpers.toy import ToyGenerational, ToySpace
from tests.helpers.workers import make_toy


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("journal")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--budget", type=int, default=12)
    parser.add_argument("--sleep", type=float, default=0.0)
    args = parser.parse_args()
    executor = ProcessExecutor(functools.partial(make_toy, sleep=args.sleep), workers=2)
    run_search(ToyGenerational(ToySpace(), seed=3), executor=executor, budget=args.budget,
               journal=args.journal, mode="sync", resume=args.resume)


if __name__ == "__main__":
    main()
