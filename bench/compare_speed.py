"""How fast the NAS-Bench-201 comparison runner is: seeds x evaluations per second.

    .venv/bin/python bench/compare_speed.py                        # random and rea, 500 x 500
    .venv/bin/python bench/compare_speed.py --algorithms random,rea,ga,pygmo-sga \\
        --seeds 100 --budget 500 --processes 2
    .venv/bin/python bench/compare_speed.py --simulated --processes 2   # 500 seeds x 8 workers

With ``--simulated``, each run is in simulated time instead (``nord compare --workers 8``): 8
virtual workers, asynchronous, the CIFAR-10 budget of 20,000 simulated seconds; the target is
random search and REA together in under 10 s.

For each algorithm, runs ``--seeds`` seeds at ``--budget`` evaluations through
``nord.comparisons.compare.run_comparison`` and prints the wall time, seeds x evaluations per
second and the result (mean ± std of the returned architecture's 200-epoch test accuracy).
The target of the benchmark issue: 500 seeds x 500 evaluations of one algorithm in under a
minute. The machine's load average is printed before and after, since a shared machine
slows the figures down.
"""
import argparse
import os
import time


def load() -> str:
    try:
        return "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "load average unknown"


def main(algorithms, seeds: int, budget: int, processes: int, dataset: str,
         simulated: bool = False, workers: int = 8) -> None:
    from nord.comparisons.compare import run_comparison
    from nord.benchmarks.nasbench201 import load_costs, load_table
    from nord.comparisons.anytime import SimulatedSetting
    load_table()
    load_costs()
    setting = SimulatedSetting.for_dataset(dataset, workers=workers) if simulated else None
    size = (f"{workers} simulated workers x {setting.time_budget:,.0f} s" if simulated
            else f"{budget} evaluations")
    print(f"{dataset}: {seeds} seeds x {size}, {processes} process(es), "
          f"{os.cpu_count()} CPUs; {load()}")
    print(f"{'algorithm':12s} {'wall (s)':>9s} {'evals/s':>10s}  test accuracy (%)")
    total = 0.0
    for name in algorithms:
        started = time.perf_counter()
        result = run_comparison(dataset, (name,), budget=None if simulated else budget,
                                seeds=seeds, processes=processes, simulation=setting)
        wall = time.perf_counter() - started
        total += wall
        numbers = result.summary()[name]
        evaluations = numbers["evaluations"] * numbers["seeds"]
        print(f"{name:12s} {wall:9.2f} {evaluations / wall:10,.0f}  "
              f"{numbers['test']['mean']:.2f} ± {numbers['test']['std']:.2f}")
    print(f"{'total':12s} {total:9.2f}")
    print(load())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithms", default="random,rea",
                        help="comma-separated short names (nord.comparisons.compare)")
    parser.add_argument("--seeds", type=int, default=500)
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--dataset", default="cifar10")
    parser.add_argument("--simulated", action="store_true",
                        help="runs in simulated time (the data set's NATS-Bench budget)")
    parser.add_argument("--workers", type=int, default=8, help="(--simulated) virtual workers")
    args = parser.parse_args()
    main([name for name in args.algorithms.split(",") if name], args.seeds, args.budget,
         args.processes, args.dataset, args.simulated, args.workers)
