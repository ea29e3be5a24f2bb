"""Queries local search needs to reach NAS-Bench-201's global optimum, over many seeds.

    .venv/bin/python bench/local_search.py             # CIFAR-100, 200-epoch validation, 500 seeds
    .venv/bin/python bench/local_search.py --quick     # 50 seeds
    .venv/bin/python bench/local_search.py --dataset cifar10 --signal valid12
    .venv/bin/python bench/local_search.py --starts 10   # each climb from the best of 10

The published claim (White, Nolen and Savani, "Exploring the loss landscape in neural
architecture search", UAI 2021): on CIFAR-100 with the 200-epoch validation accuracy as the
signal, local search reaches the global validation optimum after 127 queries on average.

Each seed runs ``nord.search.LocalSearch`` through the search engine (``run_search``) on
``BenchmarkEvaluator(dataset, signal=...)`` until its best signal equals the table's global
optimum of that signal. Queries = distinct architectures evaluated up to and including the
first one at the optimum (local search never asks for a cell twice, and the run checks that
the engine reused no result). The table's optimum is found by querying all 15,625 cells
through the same evaluator, so the comparison is exact. Random search, for scale, needs
(N + 1) / (k + 1) queries on average to draw one of k optimal cells among N without
replacement.
"""
import argparse
import math
import os
import time

import numpy as np


def main(dataset: str, signal: str, seeds: int, base_seed: int, starts: int = 1) -> None:
    from nord.benchmarks import N_CELLS, BenchmarkEvaluator, NASBench201Space
    from nord.search.engine import run_search
    from nord.search.algorithms.local_search import LocalSearch

    evaluator = BenchmarkEvaluator(dataset, signal=signal)
    values = np.array([evaluator.query(index).accuracy for index in range(N_CELLS)])
    optimum = float(values.max())
    optimal = int(np.sum(values == optimum))

    class UntilOptimum(LocalSearch):
        """Local search that stops once it has been told the optimum."""

        @property
        def finished(self) -> bool:
            reached = self.best_result is not None and self.best_result.accuracy >= optimum
            return reached or super().finished

    queries, climbs = [], []
    started = time.perf_counter()
    for seed in range(base_seed, base_seed + seeds):
        algorithm = UntilOptimum(NASBench201Space(), seed=seed, starts=starts)
        summary = run_search(algorithm, evaluator, budget=N_CELLS)
        if summary.cached:
            raise AssertionError(f"seed {seed}: the engine reused {summary.cached} results")
        if algorithm.best_result.accuracy < optimum:
            raise AssertionError(f"seed {seed}: the optimum was not reached in {N_CELLS} queries")
        queries.append(summary.evaluations)
        climbs.append(algorithm.climbs)
    wall = time.perf_counter() - started
    queries = np.array(queries)
    mean, std = queries.mean(), queries.std()
    print(f"NAS-Bench-201 {dataset}, signal {signal}: global optimum {100 * optimum:.4f} % "
          f"({optimal} cell{'s' if optimal != 1 else ''}); {seeds} seeds "
          f"({base_seed}..{base_seed + seeds - 1}) in {wall:.1f} s, {os.cpu_count()} CPUs")
    print(f"local search ({starts} random start{'s' if starts != 1 else ''} per climb), "
          f"queries to reach it: mean {mean:.1f} ± {std / math.sqrt(seeds):.1f} "
          f"(standard error; std {std:.1f}), median {np.median(queries):.0f}, "
          f"quartiles {np.percentile(queries, 25):.0f}..{np.percentile(queries, 75):.0f}, "
          f"min {queries.min()}, max {queries.max()}; climbs per run: mean "
          f"{np.mean(climbs):.1f}")
    print(f"published (White, Nolen and Savani, UAI 2021; CIFAR-100, valid200): 127 on average; "
          f"random search, expected: {(N_CELLS + 1) / (optimal + 1):.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="cifar100",
                        choices=["cifar10", "cifar100", "imagenet16"])
    parser.add_argument("--signal", default="valid200", choices=["valid12", "valid200"])
    parser.add_argument("--seeds", type=int, default=500)
    parser.add_argument("--base-seed", type=int, default=0)
    parser.add_argument("--starts", type=int, default=1,
                        help="random cells evaluated to start each climb (from the best)")
    parser.add_argument("--quick", action="store_true", help="50 seeds")
    args = parser.parse_args()
    main(args.dataset, args.signal, 50 if args.quick else args.seeds, args.base_seed,
         args.starts)
