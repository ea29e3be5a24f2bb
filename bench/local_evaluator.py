"""LocalEvaluator against a plain, hand-written PyTorch training loop.

    python bench/local_evaluator.py [--repeats 5] [--epochs 3] [--threads 1]
    python bench/local_evaluator.py --recipe nasbench201 warmup-clip-smooth

Both do the same job: train the same network on the same data for the same epochs, batch
size, seed and thread count, measure the validation split after each epoch (the learning
curve a search selects by) and test at the end; the two are timed alternately in the same run
and the median of the per-pair ratios (nord time / plain time) is printed, so background load
affects both sides alike. Target: at most 1.03 on Digits and on a CIFAR-sized set.

With ``--recipe`` nord trains by that recipe and the plain loop does the same with torch's own
pieces (SGD, its LR schedulers, ``clip_grad_norm_``, label-smoothed cross entropy) and crops,
flips and cutout written out by hand, drawn as nord draws them; both sides' final weights must
then be equal bit for bit (the exit status is 1 where they are not).
"""
import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.optim import lr_scheduler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nord import NeuralDescriptor  # noqa: E402
from nord.data import Digits, TensorCurator  # noqa: E402
from nord.data.sharding import epoch_order  # noqa: E402
from nord.evaluators.local import LocalEvaluator  # noqa: E402
from nord.nn.augment import augmentation_seed  # noqa: E402
from nord.nn.recipe import Recipe, get_recipe  # noqa: E402

BENCH_RECIPES = {
    "nasbench201": get_recipe("nasbench201"),
    "warmup-clip-smooth": Recipe(
        name="warmup-clip-smooth", optimizer="sgd", lr=0.05, momentum=0.9, nesterov=True,
        weight_decay=5e-4, lr_schedule="cosine", warmup_epochs=1, warmup_lr=0.005,
        clip_grad=2.0, label_smoothing=0.1, augment=("crop", "flip", "cutout"), batch_size=128,
        normalise="published"),
}
"""The recipes ``--recipe`` compares; the plain loop knows SGD and a cosine schedule after an
optional warm-up, which both use."""


def descriptor(channels):
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", [channels, 16, 3], "conv1")
    d.add_layer_sequential("relu", [], "relu1")
    d.add_layer_sequential("conv2d", [16, 32, 3], "conv2")
    d.add_layer_sequential("relu", [], "relu2")
    d.add_layer_sequential("max_pool2d", [2], "pool")
    return d


def plain_model(channels, height, classes):
    spatial = ((height - 4) // 2) ** 2
    return nn.Sequential(nn.Conv2d(channels, 16, 3), nn.ReLU(), nn.Conv2d(16, 32, 3), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * spatial, classes))


def accuracy(model, x, y):
    model.eval()
    correct = 0
    with torch.no_grad():
        for start in range(0, len(x), 1024):
            logits = model(x[start:start + 1024])
            correct += int((logits.argmax(1) == y[start:start + 1024]).sum())
    return correct / max(1, len(x))


def plain_run(x_train, y_train, x_valid, y_valid, x_test, y_test, classes, epochs, batch_size,
              seed):
    """What a researcher would write by hand: tensors, randperm, the usual loop, the
    validation accuracy after each epoch."""
    torch.manual_seed(seed)
    model = plain_model(x_train.shape[1], x_train.shape[2], classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        model.train()
        order = torch.randperm(len(x_train), generator=generator)
        for start in range(0, len(x_train), batch_size):
            index = order[start:start + batch_size]
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x_train[index]), y_train[index])
            loss.backward()
            optimizer.step()
        accuracy(model, x_valid, y_valid)
    return accuracy(model, x_test, y_test)


def curator_tensors(curator):
    """The curator's normalised tensors, so both sides train on identical data."""
    train = curator.train_loader(batch_size=10**9, shuffle=False)
    (x_train, y_train), = list(train)
    tensors = [x_train, y_train]
    for split in ("valid", "test"):
        batches = list(curator.test_loader(batch_size=10**9, split=split))
        tensors += list(batches[0]) if batches else [x_train[:0], y_train[:0]]
    return tensors


def timed(side):
    started = time.perf_counter()
    returned = side()
    return time.perf_counter() - started, returned


def paired(nord_side, plain_side, repeats):
    """Time the two sides alternately ``repeats`` times, the side that goes first taking
    turns (whichever runs first in a pair pays for caches the other finds warm): their times,
    the per-pair ratios, and what each side returned last."""
    ratios, nord_times, plain_times = [], [], []
    for repeat in range(repeats):
        if repeat % 2 == 0:
            nord_time, nord_returned = timed(nord_side)
            plain_time, plain_returned = timed(plain_side)
        else:
            plain_time, plain_returned = timed(plain_side)
            nord_time, nord_returned = timed(nord_side)
        nord_times.append(nord_time)
        plain_times.append(plain_time)
        ratios.append(nord_time / plain_time)
    return nord_times, plain_times, ratios, nord_returned, plain_returned


def evaluated(evaluator, network):
    """The evaluator's result for ``network``, which must have trained."""
    result = evaluator.descriptor_evaluate(network)
    assert result.ok, result.error
    return result


def summary(name, nord_times, plain_times, ratios, nord_accuracy, plain_accuracy):
    """One data set's line: both sides' median times, the median ratio and its spread."""
    return (f"{name:14s} nord {statistics.median(nord_times):7.3f} s  plain "
            f"{statistics.median(plain_times):7.3f} s  ratio {statistics.median(ratios):.3f} "
            f"(min {min(ratios):.3f}, max {max(ratios):.3f})  accuracy nord {nord_accuracy:.3f} "
            f"plain {plain_accuracy:.3f}")


def compare(name, curator, epochs, batch_size, repeats, seed=0):
    tensors = curator_tensors(curator)
    evaluator = LocalEvaluator(curator=curator, epochs=epochs, batch_size=batch_size, seed=seed)
    network = descriptor(curator.input_shape[0])
    # warm-up both (first-call allocations, lazy imports)
    evaluator.descriptor_evaluate(network)
    plain_run(*tensors, curator.num_classes, 1, batch_size, seed)
    nord_times, plain_times, ratios, result, accuracy = paired(
        lambda: evaluated(evaluator, network),
        lambda: plain_run(*tensors, curator.num_classes, epochs, batch_size, seed), repeats)
    print(summary(name, nord_times, plain_times, ratios, result.accuracy, accuracy))
    return statistics.median(ratios)


# --- the recipe mode: the plain loop doing what the recipe says -------------------------------
def plain_crop(x, offsets, padding, fill):
    """Each sample cut out of its padded copy at its (row, column) offset."""
    n, c, h, w = x.shape
    canvas = fill.expand(n, c, h + 2 * padding, w + 2 * padding).clone()
    canvas[:, :, padding:padding + h, padding:padding + w] = x
    windows = canvas.unfold(2, h, 1).unfold(3, w, 1)    # (n, c, rows, columns, h, w)
    return windows[torch.arange(n), :, offsets[:, 0], offsets[:, 1]]


def plain_cutout(x, centre_rows, centre_cols, length):
    """A square of zeros of side ``length`` around each sample's centre, clipped at the edges."""
    _, _, h, w = x.shape
    down = torch.arange(h) - (centre_rows - length // 2)          # (n, h)
    across = torch.arange(w) - (centre_cols - length // 2)        # (n, w)
    square = (((down >= 0) & (down < length))[:, None, :, None]
              & ((across >= 0) & (across < length))[:, None, None, :])
    return torch.where(square, torch.zeros((), dtype=x.dtype), x)


def plain_augment(x, recipe, generator, fill):
    """The recipe's augmentations, in its order, drawing from ``generator`` what nord draws."""
    n, _, h, w = x.shape
    for part in recipe.augment:
        if part == "crop":
            padding = recipe.crop_padding_for(min(h, w))
            offsets = torch.randint(0, 2 * padding + 1, (n, 2), generator=generator)
            x = plain_crop(x, offsets, padding, fill)
        elif part == "flip":
            flipped = torch.rand(n, generator=generator) < 0.5
            x = x.clone()
            x[flipped] = x[flipped].flip(3)
        else:   # 'cutout', the one other part a recipe may name
            centre_rows = torch.randint(0, h, (n, 1), generator=generator)
            centre_cols = torch.randint(0, w, (n, 1), generator=generator)
            x = plain_cutout(x, centre_rows, centre_cols, recipe.cutout_length_for(min(h, w)))
    return x


def plain_schedule(optimizer, recipe, epochs):
    """Torch's schedulers for the recipe: a linear warm-up, then cosine to ``min_lr``."""
    cosine_epochs = max(1, epochs - recipe.warmup_epochs)
    if not recipe.warmup_epochs:
        return lr_scheduler.CosineAnnealingLR(optimizer, T_max=cosine_epochs,
                                              eta_min=recipe.min_lr)
    warmup = lr_scheduler.LinearLR(optimizer, start_factor=recipe.warmup_lr / recipe.lr,
                                   total_iters=recipe.warmup_epochs)
    cosine = lr_scheduler.CosineAnnealingLR(optimizer, T_max=cosine_epochs, eta_min=recipe.min_lr)
    return lr_scheduler.SequentialLR(optimizer, [warmup, cosine],
                                     milestones=[recipe.warmup_epochs])


def plain_recipe_run(x_train, y_train, x_valid, y_valid, x_test, y_test, classes, epochs,
                     recipe, fill, seed):
    """The loop a researcher would write for ``recipe``; the batches are nord's (its seeded
    order, cut into near-equal batches) so that the final weights can be compared.

    Returns:
        (test accuracy, the trained network).
    """
    torch.manual_seed(seed)
    model = plain_model(x_train.shape[1], x_train.shape[2], classes)
    optimizer = torch.optim.SGD(model.parameters(), lr=recipe.lr, momentum=recipe.momentum,
                                nesterov=recipe.nesterov, weight_decay=recipe.weight_decay)
    schedule = plain_schedule(optimizer, recipe, epochs)
    generator = torch.Generator()
    steps = math.ceil(len(x_train) / recipe.batch_size)
    for epoch in range(epochs):
        model.train()
        generator.manual_seed(augmentation_seed(seed, epoch))
        for index in np.array_split(epoch_order(len(x_train), seed, epoch), steps):
            index = torch.from_numpy(index)
            inputs = plain_augment(x_train[index], recipe, generator, fill)
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(inputs), y_train[index],
                                               label_smoothing=recipe.label_smoothing)
            loss.backward()
            if recipe.clip_grad:
                nn.utils.clip_grad_norm_(model.parameters(), recipe.clip_grad)
            optimizer.step()
        accuracy(model, x_valid, y_valid)
        schedule.step()
    return accuracy(model, x_test, y_test), model


def same_weights(first, second):
    """Whether two networks' parameters and buffers are equal bit for bit, in order."""
    first, second = list(first.state_dict().values()), list(second.state_dict().values())
    return len(first) == len(second) and all(torch.equal(a, b) for a, b in zip(first, second))


def compare_recipe(name, curator, recipe, epochs, repeats, seed=0):
    """One data set under ``recipe``: the median ratio, and whether the final weights agree
    (both sides' printed accuracies are test accuracies, equal where the weights are)."""
    checked = LocalEvaluator(curator=curator, epochs=epochs, recipe=recipe, seed=seed,
                             keep_model=True)
    curator = checked.get_curator()        # normalised as the recipe says, for both sides
    tensors = curator_tensors(curator)
    fill = ((torch.zeros(len(curator.mean)) - torch.tensor(curator.mean))
            / torch.tensor(curator.std)).view(1, -1, 1, 1)   # a black pixel, normalised
    network = descriptor(curator.input_shape[0])

    def plain_side():
        return plain_recipe_run(*tensors, curator.num_classes, epochs, recipe, fill, seed)

    # the warm-up of both sides (first-call allocations, lazy imports) checks their weights
    evaluated(checked, network)
    identical = same_weights(checked.model, plain_side()[1])
    evaluator = LocalEvaluator(curator=curator, epochs=epochs, recipe=recipe, seed=seed)
    nord_times, plain_times, ratios, result, (accuracy, _) = paired(
        lambda: evaluated(evaluator, network), plain_side, repeats)
    print(summary(name, nord_times, plain_times, ratios, result.reported_accuracy, accuracy)
          + f"  weights {'identical' if identical else 'DIFFER'}")
    return statistics.median(ratios), identical


def cifar_sized_images(samples=2600):
    """Random pixels in [0, 1) of CIFAR-10's shape, named so that its published statistics
    normalise them; a fifth of them for testing."""
    rng = np.random.default_rng(0)
    x = rng.random(size=(samples, 3, 32, 32), dtype=np.float32)
    y = rng.integers(0, 10, samples)
    train = samples - samples // 5
    return TensorCurator(x[:train], y[:train], x[train:], y[train:], name="cifar10")


def main_recipes(recipes, repeats=5, epochs=3, threads=1, batch_size=None, samples=2600):
    """The recipe mode: each recipe on Digits for ``epochs`` epochs and on ``samples``
    CIFAR-sized images for half as many (at least 2: a warm-up and an epoch of the schedule
    after it); 1 where a recipe leaves nord's weights different from the plain loop's."""
    torch.set_num_threads(threads)
    cifar_epochs = max(2, epochs // 2)
    worst, identical = 0.0, True
    for name in recipes:
        recipe = BENCH_RECIPES[name].replace(batch_size=batch_size)
        print(f"LocalEvaluator with recipe {name} vs plain PyTorch: {epochs} epochs (CIFAR-sized "
              f"{cifar_epochs}), batch {recipe.batch_size}, {threads} thread(s), median of "
              f"{repeats} alternating pairs")
        ratios = {}
        for label, curator, trained in (("digits", Digits(seed=0), epochs),
                                        ("cifar10-sized", cifar_sized_images(samples),
                                         cifar_epochs)):
            ratios[label], same = compare_recipe(label, curator, recipe, trained, repeats)
            identical = identical and same
        worst = max(worst, *ratios.values())
    print(f"worst ratio {worst:.3f} (target <= 1.03): {'met' if worst <= 1.03 else 'NOT met'}; "
          f"final weights {'identical' if identical else 'DIFFER (a bug in nord)'}")
    return 0 if identical else 1


def main(repeats=5, epochs=3, threads=1, batch_size=64):
    torch.set_num_threads(threads)
    print(f"LocalEvaluator vs plain PyTorch: {epochs} epochs, batch {batch_size}, "
          f"{threads} thread(s), median of {repeats} alternating pairs")
    ratios = {"digits": compare("digits", Digits(seed=0), epochs, batch_size, repeats)}
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2600, 3, 32, 32)).astype("float32")
    y = rng.integers(0, 10, 2600)
    cifar_like = TensorCurator(x[:2048], y[:2048], x[2048:], y[2048:])
    ratios["cifar-sized"] = compare("cifar-sized", cifar_like, max(1, epochs // 3), batch_size,
                                    repeats)
    worst = max(ratios.values())
    print(f"worst ratio {worst:.3f} (target <= 1.03): {'met' if worst <= 1.03 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=None,
                        help="default 64, or with --recipe the recipe's")
    parser.add_argument("--recipe", nargs="+", choices=sorted(BENCH_RECIPES),
                        help="train by these recipes instead of nord's default")
    args = parser.parse_args()
    if args.recipe:
        sys.exit(main_recipes(args.recipe, args.repeats, args.epochs, args.threads,
                              args.batch_size))
    sys.exit(main(args.repeats, args.epochs, args.threads, args.batch_size or 64))
