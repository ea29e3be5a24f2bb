"""Does a synflow warm-up help REA on NAS-Bench-201? Warm-started against plain REA.

    .venv/bin/python bench/proxy_warmup.py --seeds 200           # budgets 50 and 100
    .venv/bin/python bench/proxy_warmup.py --seeds 5 --candidates 100   # a smoke run

For each data set, budget and seed: plain REA (population 10, sample 3) and REA whose first
population is the ``--keep`` best of ``--candidates`` random cells by the packaged synflow
table (nord.comparisons.warmup), with the same seed. While the table is incomplete, candidates
are drawn from its uniform part only: the cells it holds beyond NASLib's sample (computed
first, and better than the space on average). Each returns the cell with the best
12-epoch validation accuracy it evaluated, judged by its 200-epoch test accuracy. Prints,
per data set and budget, both means with their standard errors, the mean paired difference
and the share of seeds where the warm start does better / worse. Also writes the figures as
JSON (``--out``). With ``--simulated``, the same comparison in simulated time on ``--workers``
simulated GPUs (``--mode`` async or sync; the NATS-Bench time budget of each data set; the
warm-up's proxy seconds, spread over the workers, come first, out of the budget): the
incumbent's test accuracy at the fractions of the budget ``--fractions`` (mean over seeds) and
the mean paired difference.
"""
import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's nord and tests.helpers
from nord.comparisons.anytime import SimulatedSetting, run_simulated_seed  # noqa: E402
from nord.comparisons.compare import run_seed  # noqa: E402
from nord.benchmarks.nasbench201.proxy_table import load_proxies  # noqa: E402
from nord.comparisons.warmup import WarmUp, run_simulated_warm_seed, run_warm_seed  # noqa: E402
from tests.helpers.naslib import naslib_sample  # noqa: E402

DATASETS = ("cifar10", "cifar100", "imagenet16")


def compare(dataset: str, budget: int, seeds: int, warm_up: WarmUp):
    plain = np.array([run_seed("rea", dataset, budget, seed).reported_accuracy
                      for seed in range(seeds)]) * 100
    warm = np.array([run_warm_seed(dataset, budget, seed, warm_up).reported_accuracy
                     for seed in range(seeds)]) * 100
    difference = warm - plain
    error = lambda values: float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.nan  # noqa: E731
    return {"dataset": dataset, "budget": budget, "seeds": seeds,
            "rea": float(plain.mean()), "rea_se": error(plain),
            "warm": float(warm.mean()), "warm_se": error(warm),
            "difference": float(difference.mean()), "difference_se": error(difference),
            "warm_better": float((difference > 0).mean()),
            "warm_worse": float((difference < 0).mean())}


def incumbent_at(curve, time):
    """The incumbent's test accuracy (%) at simulated ``time`` (NaN before the first result)."""
    reached = [accuracy for moment, accuracy in curve if moment <= time]
    return reached[-1] * 100 if reached else math.nan


def compare_simulated(dataset: str, seeds: int, warm_up: WarmUp, workers: int = 1,
                      mode: str = "async", fractions=(0.25,)):
    """At each fraction of the time budget (1: its end): both incumbents' mean test accuracy
    (%) over seeds, and the mean paired difference with its standard error."""
    setting = SimulatedSetting.for_dataset(dataset, workers=workers, mode=mode).check(dataset)
    plain = [run_simulated_seed("rea", dataset, seed, setting) for seed in range(seeds)]
    warm = [run_simulated_warm_seed(dataset, seed, setting, warm_up) for seed in range(seeds)]
    points = {}
    for fraction in fractions:
        moment = setting.time_budget * fraction
        a = np.array([incumbent_at(run.curve, moment) for run in plain])
        b = np.array([incumbent_at(run.curve, moment) for run in warm])
        both = ~np.isnan(a) & ~np.isnan(b)
        difference = b[both] - a[both]
        points[f"{fraction:g}"] = {
            "rea": float(np.nanmean(a)), "warm": float(np.nanmean(b)),
            "difference": float(difference.mean()),
            "difference_se": float(difference.std(ddof=1) / math.sqrt(len(difference)))
            if len(difference) > 1 else math.nan}
    return {"dataset": dataset, "seeds": seeds, "time_budget": setting.time_budget,
            "workers": workers, "mode": mode, "points": points}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--budgets", default="50,100")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--keep", type=int, default=10)
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    parser.add_argument("--simulated", action="store_true")
    parser.add_argument("--workers", type=int, default=1, help="simulated GPUs (--simulated)")
    parser.add_argument("--mode", default="async", choices=("async", "sync"),
                        help="how the simulated workers are kept busy (--simulated)")
    parser.add_argument("--fractions", default="0.25,1",
                        help="fractions of the time budget to compare at (--simulated)")
    args = parser.parse_args(argv)
    proxies = load_proxies()
    pool = None
    if len(proxies) < len(proxies.computed):
        held = proxies.computed.copy()
        held[list(naslib_sample("cifar10"))] = False
        pool = tuple(int(i) for i in np.flatnonzero(held))
        print(f"the proxy table holds {len(proxies)} cells; drawing from its uniform part, "
              f"{len(pool)} cells")
    warm_up = WarmUp(candidates=args.candidates, keep=args.keep, pool=pool)
    rows = []
    if args.simulated:
        fractions = [float(f) for f in args.fractions.split(",")]
        for dataset in args.datasets.split(","):
            row = compare_simulated(dataset, args.seeds, warm_up, args.workers, args.mode,
                                    fractions)
            rows.append(row)
            print(f"{dataset:<11} {row['time_budget']:,.0f} s on {args.workers} {args.mode} "
                  "worker(s), REA -> warm REA (difference) at a fraction of the budget: "
                  + "; ".join(f"{key}: {point['rea']:.2f} -> {point['warm']:.2f} "
                              f"({point['difference']:+.2f} ± {point['difference_se']:.2f})"
                              for key, point in row["points"].items()), flush=True)
        write(args, rows)
        return 0
    print(f"{'data set':<11}{'budget':>7}{'REA':>16}{'warm REA':>16}{'difference':>16}"
          f"{'better':>8}{'worse':>7}")
    for dataset in args.datasets.split(","):
        for budget in (int(b) for b in args.budgets.split(",")):
            row = compare(dataset, budget, args.seeds, warm_up)
            rows.append(row)
            print(f"{dataset:<11}{budget:>7}{row['rea']:>9.2f} ± {row['rea_se']:.2f}"
                  f"{row['warm']:>9.2f} ± {row['warm_se']:.2f}"
                  f"{row['difference']:>+9.2f} ± {row['difference_se']:.2f}"
                  f"{row['warm_better']:>8.0%}{row['warm_worse']:>7.0%}", flush=True)
    write(args, rows)
    return 0


def write(args, rows) -> None:
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"candidates": args.candidates, "keep": args.keep, "rows": rows},
                      handle, indent=2)


if __name__ == "__main__":
    sys.exit(main())
