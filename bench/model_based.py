"""What a proposal costs the model-based algorithms: ask + tell time, against random search.

    .venv/bin/python bench/model_based.py                          # budgets 100 and 300, 3 seeds
    .venv/bin/python bench/model_based.py --budgets 100 --seeds 5 --algorithms random,tpe,gp-bo

Each algorithm runs ``--seeds`` seeded runs of each budget on NAS-Bench-201 (CIFAR-10 table
look-ups, made outside the timer); the time of ``ask`` and ``tell`` together is summed over
each run, and the least run's is printed per proposal, with its ratio to random search's
measured in the same run (one untimed proposal first, so that imports are not counted).
CMA-ES needs ordered genes, so it runs on ``ConvSpace`` (ordered integers) against a synthetic
fitness, beside random search on the same space. The evaluation itself (training, or a
table look-up) is not counted: these are the costs the algorithm adds to every evaluation.
"""
import argparse
import os
import time


def load() -> str:
    try:
        return "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "load average unknown"


def per_proposal(name, space, evaluate, budget: int, seeds: int) -> float:
    """Seconds of ask + tell per proposal: the least over ``seeds`` runs of ``budget``
    proposals of a run's mean (the least, as timeit takes, since other work on a shared
    machine only ever adds time)."""
    from nord.search.algorithms.registry import make_algorithm
    warm_up = make_algorithm(name, space, seed=0, budget=budget)   # imports, first calls
    candidate = warm_up.ask()
    warm_up.tell(candidate, evaluate(candidate.genome))
    warm_up.close()
    runs = []
    for seed in range(seeds):
        spent = 0.0
        algorithm = make_algorithm(name, space, seed=seed, budget=budget)
        for _ in range(budget):
            started = time.perf_counter()
            candidate = algorithm.ask()
            spent += time.perf_counter() - started
            result = evaluate(candidate.genome)
            started = time.perf_counter()
            algorithm.tell(candidate, result)
            spent += time.perf_counter() - started
        algorithm.close()
        runs.append(spent / budget)
    return min(runs)


def show(seconds: float) -> str:
    return f"{seconds * 1e6:9.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:9.2f} ms"


def main(algorithms, budgets, seeds: int) -> None:
    from nord.benchmarks.nasbench201 import NASBench201Space
    from nord.comparisons.compare import benchmark_evaluator
    from nord.evaluators.result import EvaluationResult
    from nord.search.spaces.conv import ConvSpace

    table = benchmark_evaluator("cifar10")
    nasbench = (NASBench201Space(), table.evaluate_genome)
    conv = ConvSpace()
    target = [(low + high) / 3 for low, high in zip(conv.lower, conv.upper)]
    numeric = (conv, lambda genome: EvaluationResult(accuracy=1 / (1 + sum(
        abs(g - t) for g, t in zip(genome, target)))))
    print(f"{seeds} seeds per budget; {os.cpu_count()} CPUs; {load()}")
    for budget in budgets:
        print(f"\nbudget {budget}: ask + tell per proposal (ratio to random search)")
        for label, (space, evaluate), names in (
                ("NAS-Bench-201", nasbench, [n for n in algorithms if n != "cmaes"]),
                ("ConvSpace", numeric, ["cmaes"] if "cmaes" in algorithms else [])):
            if not names:
                continue
            baseline = per_proposal("random", space, evaluate, budget, seeds)
            print(f"  {label}")
            for name in names:
                try:
                    seconds = (baseline if name == "random"
                               else per_proposal(name, space, evaluate, budget, seeds))
                except ImportError as error:
                    print(f"    {name:12s} not measured: {str(error).split(';')[0]}")
                    continue
                print(f"    {name:12s} {show(seconds)} {seconds / baseline:10.1f} x")
    print(f"\n{load()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithms", default="random,rea,reinforce,tpe,gp-bo,cmaes",
                        help="comma-separated registered names")
    parser.add_argument("--budgets", default="100,300", help="comma-separated")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    main([name for name in args.algorithms.split(",") if name],
         [int(budget) for budget in args.budgets.split(",") if budget], args.seeds)
