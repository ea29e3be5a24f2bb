"""What augmenting the training batches costs, as a share of a training epoch.

    python bench/augmentation_cost.py [--repeats 3] [--batches 2] [--cells-per-stage 5]

On CIFAR-sized batches (256 images of 3 x 32 x 32), ``Augmentation.__call__`` with the
nasbench201 recipe's flip and crop, and with cutout after them, is timed over the batches of an
epoch and set against one training epoch of NAS-Bench-201's network (C = 16, N cells per stage)
trained by that recipe, its flip and crop included. The three are timed in turn in each round,
and the median of the per-round fractions is printed, so background load affects them alike.
An epoch of the whole data set takes tens of minutes on a CPU core, so an epoch here is
``--batches`` batches: augmentation and training both take a time per batch, and the fraction
does not depend on how many.
Target: at most 5 %.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nord.benchmarks.nasbench201 import network_to_descriptor  # noqa: E402
from nord.nn.augment import Augmentation, black_pixel  # noqa: E402
from nord.nn.network import NeuralNet  # noqa: E402
from nord.nn.recipe import get_recipe  # noqa: E402
from nord.nn.training import TrainingStep, make_optimizer, train_epoch  # noqa: E402

CELL = (3, 3, 4, 1, 3, 1)
"""The cell of the measured network: the one nord's NAS-Bench-201 examples train."""

SHAPE = (3, 32, 32)


def augmentations(recipe):
    """The recipe's augmentation, and the same with cutout after it, for CIFAR-sized images
    normalised with CIFAR-10's published statistics."""
    mean, std = recipe.statistics_for("cifar10")
    side = SHAPE[1]
    made = {}
    for label, parts in (("flip+crop", recipe.augment), ("+cutout", (*recipe.augment, "cutout"))):
        made[label] = Augmentation(parts, SHAPE, recipe.crop_padding_for(side),
                                   recipe.cutout_length_for(side),
                                   black_pixel(mean, std, SHAPE[0]))
    return made


def augmenting_time(augment, batches, epoch, seed=0):
    """Seconds ``augment`` takes over the inputs of one epoch's ``batches``."""
    augment.start_epoch(seed, epoch)
    started = time.perf_counter()
    for inputs, _ in batches:
        augment(inputs)
    return time.perf_counter() - started


def measure(repeats=3, batches=2, batch_size=256, cells_per_stage=5, channels=16, seed=0):
    """Time a training epoch and both augmentations of its batches, in turn, ``repeats`` times.

    Returns:
        a dict: per round, the epoch's seconds (``'epoch'``) and each augmentation's
        (``'flip+crop'``, ``'+cutout'``); and the network's ``'parameters'``.
    """
    recipe = get_recipe("nasbench201")
    generator = torch.Generator().manual_seed(seed)
    data = [(torch.randn(batch_size, *SHAPE, generator=generator),
             torch.randint(0, 10, (batch_size,), generator=generator)) for _ in range(batches)]
    torch.manual_seed(seed)
    model = NeuralNet(network_to_descriptor(CELL, channels, cells_per_stage), SHAPE, 10)
    optimizer = make_optimizer(recipe.optimizer, model.parameters(), recipe.lr,
                               **recipe.optimizer_kwargs())
    augments = augmentations(recipe)
    step = TrainingStep(augments["flip+crop"], recipe.label_smoothing, recipe.clip_grad)
    device = torch.device("cpu")
    train_epoch(model, data[:1], optimizer, device, step=step)   # first-call allocations
    times = {"epoch": [], **{label: [] for label in augments}}
    for epoch in range(repeats):
        augments["flip+crop"].start_epoch(seed, epoch)
        started = time.perf_counter()
        train_epoch(model, data, optimizer, device, step=step)
        times["epoch"].append(time.perf_counter() - started)
        for label, augment in augments.items():
            times[label].append(augmenting_time(augment, data, epoch, seed))
    return {**times, "parameters": model.count_parameters()}


def fraction(figures, label):
    """The median over rounds of augmentation ``label``'s time over the epoch's."""
    return statistics.median(a / e for a, e in zip(figures[label], figures["epoch"]))


def main(repeats=3, batches=2, batch_size=256, cells_per_stage=5, channels=16, threads=1):
    torch.set_num_threads(threads)
    figures = measure(repeats, batches, batch_size, cells_per_stage, channels)
    print(f"Augmentation against a training epoch: NAS-Bench-201 network (C={channels}, "
          f"N={cells_per_stage}, {figures['parameters']:,} parameters), epochs of {batches} "
          f"batch(es) of {batch_size} images 3x32x32, {threads} thread(s), median of {repeats} "
          "rounds")
    print(f"epoch {statistics.median(figures['epoch']):.3f} s (its flip+crop included); "
          f"Augmentation.__call__ per epoch: flip+crop "
          f"{1e3 * statistics.median(figures['flip+crop']):.2f} ms, flip+crop+cutout "
          f"{1e3 * statistics.median(figures['+cutout']):.2f} ms")
    worst = max(fraction(figures, "flip+crop"), fraction(figures, "+cutout"))
    print(f"augmentation: {100 * fraction(figures, 'flip+crop'):.3f} % of an epoch (flip+crop), "
          f"{100 * fraction(figures, '+cutout'):.3f} % (+cutout) (target <= 5 %): "
          f"{'met' if worst <= 0.05 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batches", type=int, default=2, help="batches in an epoch")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--cells-per-stage", type=int, default=5, help="N (the benchmark's: 5)")
    parser.add_argument("--channels", type=int, default=16, help="C (the benchmark's: 16)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    sys.exit(main(args.repeats, args.batches, args.batch_size, args.cells_per_stage,
                  args.channels, args.threads))
