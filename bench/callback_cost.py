"""What watching costs: training with each built-in callback against training without any.

    python bench/callback_cost.py [--repeats 5] [--epochs 2] [--threads 1]

For each built-in (at its default sampling, and those sampled at steps also at every step)
and for the default set of ``nord.evaluators.stop_rules.DEFAULT_CALLBACKS``, the evaluator
with it and the evaluator without callbacks train the same network alternately in the same
run; printed is the median of the per-pair ratios (with / without). Target: the defaults
at most 1.05 on the CPU.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nord.data import Digits  # noqa: E402
from nord.evaluators.callbacks import CALLBACKS, callback_classes  # noqa: E402
from nord.evaluators.local import LocalEvaluator  # noqa: E402
from nord.evaluators.stop_rules import DEFAULT_CALLBACKS  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_evaluator import descriptor  # noqa: E402


def every_step(cls):
    return lambda: cls(every_steps=1)


def timed(evaluator, network):
    started = time.perf_counter()
    result = evaluator.descriptor_evaluate(network)
    assert result.ok, result.error
    return time.perf_counter() - started


def main(repeats=5, epochs=2, threads=1):
    torch.set_num_threads(threads)
    curator = Digits(seed=0)
    network = descriptor(1)
    settings = dict(curator=curator, epochs=epochs, seed=0, batch_size=64)
    plain = LocalEvaluator(**settings)
    cases = {"defaults (" + ",".join(DEFAULT_CALLBACKS) + ")":
             callback_classes(list(DEFAULT_CALLBACKS))}
    for name in CALLBACKS.names():
        cls = CALLBACKS.load(name)
        cases[name] = [cls]
        if cls().every_steps:
            cases[f"{name} every step"] = [every_step(cls)]
    print(f"training with a callback / without, Digits, {epochs} epochs, batch 64, {threads} "
          f"thread(s), median of {repeats} alternating pairs")
    timed(plain, network)
    for label, callbacks in cases.items():
        watched = LocalEvaluator(callbacks=callbacks, **settings)
        timed(watched, network)   # warm-up
        ratios = []
        for _ in range(repeats):
            base = timed(plain, network)
            ratios.append(timed(watched, network) / base)
        print(f"{label:34s} ratio {statistics.median(ratios):.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    sys.exit(main(args.repeats, args.epochs, args.threads))
