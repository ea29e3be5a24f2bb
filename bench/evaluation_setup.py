"""What LocalEvaluator spends on one candidate before it trains: the memory estimate and the
network's build, against the same work done the straightforward way.

    python bench/evaluation_setup.py [--pairs 300]

"two passes" builds the network on the meta device (shape probes of 2 samples), runs a second
meta forward pass at the training batch to count activation bytes, and builds the real
network probing its shapes again. "one pass" is what the evaluator does: one meta build whose
probes run at the training batch (``nord.nn.memory.measure_on_meta``), made the real network
(``NeuralNet.on_device``: no module constructed twice), seeding the CPU's generator
alone (``seed_generators``). Both give the same figures and the same seeded weights (checked
here). The two are timed alternately in one process; the median of the per-pair ratios is
printed, with a hand-written ``nn.Sequential`` build as the floor.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nord.nn.memory import measure_on_meta  # noqa: E402
from nord.nn.network import NeuralNet  # noqa: E402
from nord.nn.training import seed_generators  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_evaluator import descriptor, plain_model  # noqa: E402

SHAPE, CLASSES, BATCH = (1, 8, 8), 10, 64     # Digits, as bench/local_evaluator.py trains it
CPU = torch.device("cpu")


def activations_by_a_second_pass(network):
    """Every leaf's output bytes in a separate training forward pass on the meta device."""
    with torch.device("meta"):
        model = NeuralNet(network, SHAPE, CLASSES)
    outputs = {}

    def keep(module, inputs, output):
        storage = output.untyped_storage()
        outputs[storage._cdata] = (storage, storage.nbytes())

    hooks = [m.register_forward_hook(keep) for m in model.modules() if not list(m.children())]
    with torch.no_grad(), torch.device("meta"):
        batch = torch.zeros((BATCH,) + SHAPE)
        model(batch)
    for hook in hooks:
        hook.remove()
    return sum(size for _, size in outputs.values()) + batch.numel() * batch.element_size()


def two_passes(network):
    activations = activations_by_a_second_pass(network)
    torch.manual_seed(0)
    return activations, NeuralNet(network, SHAPE, CLASSES)


def one_pass(network):
    need, meta = measure_on_meta(network, SHAPE, CLASSES, BATCH)
    seed_generators(0, CPU)
    return need.activation_bytes, NeuralNet.on_device(network, SHAPE, CLASSES, CPU, meta)


def floor(_network):
    torch.manual_seed(0)
    return 0, plain_model(SHAPE[0], SHAPE[1], CLASSES)


def timed(work, network):
    started = time.perf_counter()
    work(network)
    return time.perf_counter() - started


def main(pairs=300):
    torch.set_num_threads(1)
    network = descriptor(SHAPE[0])
    (old_bytes, old_net), (new_bytes, new_net) = two_passes(network), one_pass(network)
    assert old_bytes == new_bytes, (old_bytes, new_bytes)
    assert all(torch.equal(a, b) for a, b in zip(old_net.state_dict().values(),
                                                 new_net.state_dict().values()))
    floor(network)
    times = {"two passes": [], "one pass": [], "nn.Sequential": []}
    ratios = []
    for _ in range(pairs):
        old, new = timed(two_passes, network), timed(one_pass, network)
        times["two passes"].append(old)
        times["one pass"].append(new)
        times["nn.Sequential"].append(timed(floor, network))
        ratios.append(new / old)
    print(f"set-up of one evaluation (bench network, batch {BATCH}), median of {pairs} "
          "alternating pairs:")
    for name, values in times.items():
        print(f"  {name:14s} {statistics.median(values) * 1e3:7.3f} ms")
    low, high = min(ratios), max(ratios)
    print(f"  ratio one pass / two passes {statistics.median(ratios):.3f} "
          f"(pairs from {low:.3f} to {high:.3f})")
    return 0


if __name__ == "__main__":
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--pairs", type=int, default=300, help="alternating pairs timed")
    sys.exit(main(options.parse_args().pairs))
