"""How long does a zero-cost proxy take on one NAS-Bench-201 network? Against a forward pass.

    .venv/bin/python bench/proxies.py                          # synflow, 5 cells, 1 thread
    .venv/bin/python bench/proxies.py --proxies synflow,snip,nwot --repeats 5

For ``--cells`` cells drawn at random (seeded), the CIFAR-10 benchmark network is built once
and then timed ``--repeats`` times each: one forward pass of a single 32x32 image (float32,
no gradient; the baseline, measured in the same run) and each proxy (data-dependent ones on
a batch of ``--batch`` random images and labels). Prints the median milliseconds over all
cells and repeats, and each proxy's median ratio to the forward pass of the same network.
"""
import argparse
import statistics
import sys
import time

import numpy as np
import torch

from nord.benchmarks.nasbench201 import load_table, network_to_descriptor
from nord.nn.network import NeuralNet
from nord.nn.proxies import score


def milliseconds(work, repeats: int):
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proxies", default="synflow")
    parser.add_argument("--cells", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    table = load_table()
    cells = np.random.default_rng(0).choice(len(table), args.cells, replace=False)
    proxies = args.proxies.split(",")
    forward_ms, proxy_ms = [], {name: [] for name in proxies}
    ratios = {name: [] for name in proxies}
    generator = torch.Generator().manual_seed(0)
    images = torch.randn((args.batch, 3, 32, 32), generator=generator)
    labels = torch.randint(0, 10, (args.batch,), generator=generator)
    one = images[:1]
    for index in cells:
        torch.manual_seed(0)
        net = NeuralNet(network_to_descriptor(table.cell(int(index))), (3, 32, 32), 10)
        net.eval()
        with torch.no_grad():
            net(one)   # warm-up
            forward = statistics.median(milliseconds(lambda: net(one), args.repeats))
        forward_ms.append(forward)
        net.train()
        for name in proxies:
            timed = statistics.median(milliseconds(
                lambda: score(name, net, images, labels), args.repeats))
            proxy_ms[name].append(timed)
            ratios[name].append(timed / forward)
    print(f"{len(cells)} NAS-Bench-201 CIFAR-10 networks, {args.repeats} repeats, "
          f"{args.threads} thread(s), torch {torch.__version__}")
    print(f"forward pass, 1 image: median {statistics.median(forward_ms):.1f} ms")
    for name in proxies:
        print(f"{name:<10} median {statistics.median(proxy_ms[name]):.1f} ms, "
              f"{statistics.median(ratios[name]):.1f}x the forward pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
