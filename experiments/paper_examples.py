"""The NORD paper's example networks, evaluated on the built-in Digits data.

    python experiments/paper_examples.py [--epochs 5] [--seed 0] [--smoke]

Shows the descriptor API (positional and keyword parameters, named connections,
sequential layers), a layer with two inputs, and a network that cannot be built for
8x8 images, which comes back as a recorded failure instead of a crash.
"""
import argparse
import sys

from torch.nn import Conv2d, Linear, MaxPool2d, ReLU

from nord import LocalEvaluator, NeuralDescriptor
from nord.data import Digits


def paper_figure_2(channels: int) -> NeuralDescriptor:
    """One convolution feeding two max-pooling layers, as in the paper's Figure 2."""
    d = NeuralDescriptor()
    d.add_layer(Conv2d, [channels, 10, 5], "convolution")     # positional parameters
    d.add_layer(MaxPool2d, {"kernel_size": 2}, "max_pool1")    # keyword parameters
    d.add_layer(MaxPool2d, [2, 2], "max_pool2")
    d.connect_layers("convolution", "max_pool1")
    d.connect_layers("convolution", "max_pool2")
    return d


def sequential(channels: int) -> NeuralDescriptor:
    """Layers added one after the other, auto-named and auto-connected."""
    s = NeuralDescriptor()
    s.add_layer_sequential(Conv2d, (channels, 16, 3))
    s.add_layer_sequential(ReLU, [])
    s.add_layer_sequential(Conv2d, {"out_channels": 32, "kernel_size": 3})  # in_channels inferred
    s.add_layer_sequential(ReLU, [])
    s.add_layer_sequential(Linear, {"out_features": 64})        # a Flatten is inserted before it
    s.add_layer_sequential(ReLU, [])
    return s


def two_branches() -> NeuralDescriptor:
    """Two convolutions of different widths, concatenated along channels."""
    d = NeuralDescriptor()
    d.add_layer("identity", [], "stem")
    d.add_layer("conv2d", {"out_channels": 8, "kernel_size": 3, "padding": 1}, "narrow")
    d.add_layer("conv2d", {"out_channels": 16, "kernel_size": 5, "padding": 2}, "wide")
    d.add_layer("relu", [], "join", merge="concat")
    for branch in ("narrow", "wide"):
        d.connect_layers("stem", branch)
        d.connect_layers(branch, "join")
    return d


def too_large_kernel() -> NeuralDescriptor:
    """A 50x50 kernel cannot slide over an 8x8 image: a recorded failure, not a zero score."""
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {"out_channels": 4, "kernel_size": 50})
    return d


def main(epochs: int = 5, seed: int = 0, smoke: bool = False) -> int:
    curator = Digits(seed=seed)
    channels = curator.input_shape[0]
    evaluator = LocalEvaluator(curator=curator, epochs=1 if smoke else epochs, seed=seed)
    networks = {
        "figure 2 (conv -> two pools)": paper_figure_2(channels),
        "sequential conv-relu-conv-relu-linear": sequential(channels),
        "two branches, concatenated": two_branches(),
        "50x50 kernel on 8x8 images": too_large_kernel(),
    }
    print(f"Evaluating {len(networks)} networks on {curator.name}: "
          f"{evaluator.epochs} epoch(s), seed {seed}\n")
    print(f"{'network':40s} {'status':7s} {'accuracy':>8s} {'params':>8s} {'train s':>8s}")
    for label, descriptor in networks.items():
        result = evaluator.descriptor_evaluate(descriptor)
        print(f"{label:40s} {result.status:7s} {result.accuracy:8.3f} {result.n_params:8d} "
              f"{result.train_time:8.2f}")
        if not result.ok:
            print(f"{'':40s} reason: {result.error}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="one epoch, for the tests")
    args = parser.parse_args()
    sys.exit(main(args.epochs, args.seed, args.smoke))
