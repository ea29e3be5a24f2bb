"""Do stopping rules pay? Random search with and without the default rules, over many seeds.

    python bench/stop_rules.py [--seeds 20] [--candidates 8] [--epochs 5] [--lr 0.03]

The planted failure: candidates are plain chains of 1 to 8 convolution+ReLU layers (no
normalisation, no skip connection) trained with Adam at a learning rate (0.03) at which the
deep ones kill most of their units in the first epoch and stay at chance, while shallow ones
train well. Each seed draws the same candidates for both sides (random search does not look
at results) and trains them with the same seed, so every pair differs only by the rules.

Printed per side: the epochs spent, and the best candidate's test accuracy (chosen by its
validation accuracy), as mean and standard error over seeds; then the candidates a rule
stopped whose unstopped run ended above 50 % test accuracy (where the rules hurt).
"""
import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nord import NeuralDescriptor  # noqa: E402
from nord.data import Digits  # noqa: E402
from nord.evaluators.callbacks import callback_classes  # noqa: E402
from nord.evaluators.local import LocalEvaluator  # noqa: E402
from nord.evaluators.stop_rules import DEFAULT_CALLBACKS, DEFAULT_RULES  # noqa: E402


def chain(depth, width):
    d = NeuralDescriptor()
    for i in range(depth):
        d.add_layer_sequential("conv2d", {"out_channels": width, "kernel_size": 3,
                                          "padding": 1}, f"conv{i}")
        d.add_layer_sequential("relu", name=f"relu{i}")
    return d


def candidates(seed, count):
    rng = np.random.default_rng(seed)
    return [(int(rng.integers(1, 9)), int(rng.choice([4, 8, 16]))) for _ in range(count)]


def search(curator, seed, count, epochs, lr, rules):
    evaluator = LocalEvaluator(curator=curator, epochs=epochs, seed=seed, lr=lr,
                               callbacks=callback_classes(list(DEFAULT_CALLBACKS)),
                               stop_rules=list(DEFAULT_RULES) if rules else [])
    results = [evaluator.descriptor_evaluate(chain(*genome)) for genome in candidates(seed, count)]
    spent = sum(r.epochs for r in results)
    ok = [r for r in results if r.ok]
    best = max(ok, key=lambda r: r.accuracy) if ok else None
    return spent, (best.reported_accuracy if best else math.nan), results


def mean_se(values):
    values = [v for v in values if not math.isnan(v)]
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.nan
    return statistics.mean(values), se


def main(seeds=20, count=8, epochs=5, lr=0.03, threads=1):
    torch.set_num_threads(threads)
    curator = Digits(seed=0)
    print(f"random search, {count} candidates of 1-8 plain conv+ReLU layers, {epochs} epochs, "
          f"adam lr {lr}, {seeds} seeds; rules: {', '.join(DEFAULT_RULES)} "
          f"(callbacks {', '.join(DEFAULT_CALLBACKS)} on both sides)")
    spent = {False: [], True: []}
    best = {False: [], True: []}
    hurt = stopped = 0
    seconds = {False: 0.0, True: 0.0}
    for seed in range(seeds):
        runs = {}
        for rules in (False, True):
            started = time.perf_counter()
            runs[rules] = search(curator, seed, count, epochs, lr, rules)
            seconds[rules] += time.perf_counter() - started
            spent[rules].append(runs[rules][0])
            best[rules].append(runs[rules][1])
        for plain, ruled in zip(runs[False][2], runs[True][2]):
            if ruled.metrics.get("stopped_by"):
                stopped += 1
                hurt += (plain.reported_accuracy or 0) > 0.5
    for rules in (False, True):
        label = "with rules   " if rules else "without rules"
        e_mean, e_se = mean_se(spent[rules])
        a_mean, a_se = mean_se(best[rules])
        print(f"{label}: epochs {e_mean:6.1f} +- {e_se:4.1f}   best test accuracy "
              f"{a_mean:.4f} +- {a_se:.4f}   ({seconds[rules]:.1f} s)")
    saved = 1 - statistics.mean(spent[True]) / statistics.mean(spent[False])
    gap = statistics.mean(best[False]) - statistics.mean(best[True])
    _, se = mean_se([a - b for a, b in zip(best[False], best[True])])
    print(f"epochs saved {saved:.1%} (target 30 %); best accuracy lost {gap:+.4f} "
          f"(paired standard error {se:.4f}); {stopped} candidates stopped, {hurt} of them "
          "above 50 % test accuracy when left to train")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.03)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    sys.exit(main(args.seeds, args.candidates, args.epochs, args.lr, args.threads))
