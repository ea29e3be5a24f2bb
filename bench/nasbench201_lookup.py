"""How fast the built-in NAS-Bench-201 table loads and answers, in one process.

    .venv/bin/python bench/nasbench201_lookup.py            # about 5 seconds
    .venv/bin/python bench/nasbench201_lookup.py --n 1000000

Prints the time to read the packaged table and the costs file (first call in a fresh process,
then the cached call; the target is both under a second) and look-ups per second through each path of ``BenchmarkEvaluator``: the fast
paths (genome, index, cell string; no descriptor is built) and ``descriptor_evaluate``
(descriptors built beforehand; the first evaluation of a descriptor object computes its
canonical hash, repeated ones reuse it). The target of the benchmark issue is at least
100,000 look-ups per second for the fast path.
"""
import argparse
import time

import numpy as np


def rate(function, keys):
    """Calls per second of ``function`` over ``keys``."""
    started = time.perf_counter()
    for key in keys:
        function(key)
    return len(keys) / (time.perf_counter() - started)


def main(n: int, n_descriptors: int, seed: int) -> None:
    started = time.perf_counter()
    from nord.benchmarks import BenchmarkEvaluator, NASBench201Space, load_costs, load_table
    imported = time.perf_counter()
    table = load_table()
    loaded = time.perf_counter()
    load_table()
    cached = time.perf_counter()
    load_costs()
    costs_loaded = time.perf_counter()
    print(f"import nord.benchmarks          {imported - started:8.3f} s")
    print(f"load_table() first call         {loaded - imported:8.3f} s")
    print(f"load_table() cached             {(cached - loaded) * 1e6:8.1f} us")
    print(f"load_costs() first call         {costs_loaded - cached:8.3f} s (SHA-256 checked)")
    print(f"both tables                     {costs_loaded - imported - (cached - loaded):8.3f} s")

    rng = np.random.default_rng(seed)
    indices = rng.integers(0, len(table), size=n).tolist()
    genomes = [tuple(g) for g in table.genomes[indices].tolist()]
    cells = [table.cells[i] for i in indices]
    evaluator = BenchmarkEvaluator("cifar10")
    evaluator.query(0)  # per-data-set value lists are built on first use
    print(f"evaluate_genome(genome)         {rate(evaluator.evaluate_genome, genomes):12,.0f} /s")
    print(f"query(index)                    {rate(evaluator.query, indices):12,.0f} /s")
    print(f"query(cell string)              {rate(evaluator.query, cells):12,.0f} /s")

    space = NASBench201Space()
    chosen = genomes[:n_descriptors]
    started = time.perf_counter()
    descriptors = [space.decode(genome) for genome in chosen]
    built = len(chosen) / (time.perf_counter() - started)
    print(f"space.decode(genome)            {built:12,.0f} /s")
    print(f"descriptor_evaluate, new object {rate(evaluator.descriptor_evaluate, descriptors):12,.0f} /s")
    print(f"descriptor_evaluate, seen       {rate(evaluator.descriptor_evaluate, descriptors):12,.0f} /s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300_000, help="look-ups per fast path")
    parser.add_argument("--descriptors", type=int, default=2_000,
                        help="descriptors for the descriptor_evaluate measurement")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.n, args.descriptors, args.seed)
