"""LocalEvaluator against a plain, hand-written PyTorch training loop.

    python bench/local_evaluator.py [--repeats 5] [--epochs 3] [--threads 1]

Both do the same job: train the same network on the same data for the same epochs, batch
size, seed and thread count, measure the validation split after each epoch (the learning
curve a search selects by) and test at the end; the two are timed alternately in the same run
and the median of the per-pair ratios (nord time / plain time) is printed, so background load
affects both sides alike. Target: at most 1.03 on Digits and on a CIFAR-sized set.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nord import NeuralDescriptor  # noqa: E402
from nord.data import Digits, TensorCurator  # noqa: E402
from nord.evaluators.local import LocalEvaluator  # noqa: E402


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


def compare(name, curator, epochs, batch_size, repeats, seed=0):
    tensors = curator_tensors(curator)
    evaluator = LocalEvaluator(curator=curator, epochs=epochs, batch_size=batch_size, seed=seed)
    network = descriptor(curator.input_shape[0])
    # warm-up both (first-call allocations, lazy imports)
    evaluator.descriptor_evaluate(network)
    plain_run(*tensors, curator.num_classes, 1, batch_size, seed)
    ratios, nord_times, plain_times = [], [], []
    for _ in range(repeats):
        started = time.perf_counter()
        result = evaluator.descriptor_evaluate(network)
        nord_time = time.perf_counter() - started
        started = time.perf_counter()
        accuracy = plain_run(*tensors, curator.num_classes, epochs, batch_size, seed)
        plain_time = time.perf_counter() - started
        assert result.ok, result.error
        nord_times.append(nord_time)
        plain_times.append(plain_time)
        ratios.append(nord_time / plain_time)
    print(f"{name:14s} nord {statistics.median(nord_times):7.3f} s  plain "
          f"{statistics.median(plain_times):7.3f} s  ratio {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})  accuracy nord {result.accuracy:.3f} "
          f"plain {accuracy:.3f}")
    return statistics.median(ratios)


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
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    sys.exit(main(args.repeats, args.epochs, args.threads, args.batch_size))
