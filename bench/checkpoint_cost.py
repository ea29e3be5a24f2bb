"""What checkpointing every epoch costs a search, paired against a search that keeps none.

    python bench/checkpoint_cost.py [--repeats 5] [--budget 6] [--epochs 4] [--threads 1]

The same seeded search (random search over the paper's convolutional space, journaled, every
candidate trained ``--epochs`` epochs) runs with ``checkpoint_every=1`` and with
``checkpoint_every=0``, alternately, on Digits and on a CIFAR-sized synthetic set; the median
of the per-pair wall-time ratios is printed with its range, so background load affects both
sides alike, with the checkpoints written and the folder's peak size. The results of the two
are checked to be identical. Target: a ratio of at most 1.05 (checkpoints must not make a
search noticeably slower than the work they save on a kill).
"""
import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.asha import synthetic_cifar  # noqa: E402
from nord.data import Digits  # noqa: E402
from nord.evaluators.local import LocalEvaluator  # noqa: E402
from nord.journal import Journal  # noqa: E402
from nord.search.algorithms.random_search import RandomSearch  # noqa: E402
from nord.search.engine import run_search  # noqa: E402
from nord.search.spaces import make_space  # noqa: E402


def one_search(curator, every: int, budget: int, epochs: int, folder: Path):
    """Seconds, the journaled results and the checkpoint folder's peak size."""
    journal = folder / f"every-{every}-{time.monotonic_ns()}.db"
    space = make_space("conv", input_shape=tuple(curator.input_shape), layers=3)
    evaluator = LocalEvaluator(curator=curator, epochs=epochs, batch_size=64, seed=0)
    started = time.perf_counter()
    summary = run_search(RandomSearch(space, seed=0), evaluator, budget=budget, journal=journal,
                         checkpoint_every=every)
    seconds = time.perf_counter() - started
    with Journal(journal) as record:
        results = [(row["candidate"], row["accuracy"], row["reported_accuracy"])
                   for row in record.evaluations()]
    return seconds, results, summary.checkpoint_peak_bytes or 0


def compare(name, curator, repeats, budget, epochs):
    with tempfile.TemporaryDirectory() as folder:
        one_search(curator, 1, 1, 1, Path(folder))   # warm-up: first-call allocations
        ratios, with_times, without_times = [], [], []
        peak = 0
        for _ in range(repeats):
            on, on_results, peak = one_search(curator, 1, budget, epochs, Path(folder))
            off, off_results, _ = one_search(curator, 0, budget, epochs, Path(folder))
            if on_results != off_results:
                raise SystemExit(f"{name}: checkpoints changed the results")
            ratios.append(on / off)
            with_times.append(on)
            without_times.append(off)
    written = budget * (epochs - 1)   # every epoch but each candidate's last
    extra = statistics.median(with_times) - statistics.median(without_times)
    print(f"{name:12s} ratio (every 1 / none) median {statistics.median(ratios):.3f} "
          f"[{min(ratios):.3f}, {max(ratios):.3f}] | {statistics.median(with_times):.2f} s vs "
          f"{statistics.median(without_times):.2f} s | {written} checkpoints, "
          f"~{1000 * extra / written:.1f} ms each | folder peak {peak / 1024:.0f} KB")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget", type=int, default=6)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"{args.budget} candidates x {args.epochs} epochs, {args.repeats} pairs, "
          f"{args.threads} thread(s), CPU")
    compare("digits", Digits(seed=0), args.repeats, args.budget, args.epochs)
    compare("cifar-sized", synthetic_cifar(2000, test=400), args.repeats, args.budget,
            args.epochs)


if __name__ == "__main__":
    main()
