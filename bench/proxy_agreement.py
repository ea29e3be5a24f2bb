"""How closely do nord's proxies agree with NASLib's precomputed ones on NAS-Bench-201?

    .venv/bin/python bench/proxy_agreement.py --cells 30          # CIFAR-10, a few minutes

For ``--cells`` cells of NASLib's sample (tests/fixtures/README.md), drawn at random (seeded),
nord builds each cell's CIFAR-10 network (torch seed 0) and scores it with every proxy on one
batch of ``--batch`` images and labels, then prints the Spearman rank correlation with
NASLib's scores of the same cells. Offline, the batch is Gaussian noise with random labels
(NASLib used a CIFAR-10 batch): data-free proxies (synflow, params, flops) should agree
closely, data-dependent ones only as far as noise images stand in for real ones. ``--data
cifar10 --data-root DIR`` uses the first training batch of CIFAR-10 instead.
"""
import argparse
import sys
from pathlib import Path
import time

import numpy as np
import torch
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's nord and tests.helpers
from nord.benchmarks.nasbench201 import load_table, network_to_descriptor  # noqa: E402
from nord.data.registry import get_curator  # noqa: E402
from nord.nn.network import NeuralNet  # noqa: E402
from nord.nn.proxies import PROXIES, score  # noqa: E402
from tests.helpers.naslib import naslib_sample  # noqa: E402


def noise_batch(size: int):
    generator = torch.Generator().manual_seed(0)
    return (torch.randn((size, 3, 32, 32), generator=generator),
            torch.randint(0, 10, (size,), generator=generator))


def cifar10_batch(size: int, root: str):
    curator = get_curator("cifar10", root=root)
    return next(iter(curator.train_loader(batch_size=size, shuffle=True, seed=0)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--data", default="noise", choices=["noise", "cifar10"])
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    sample = naslib_sample("cifar10")
    cells = sorted(int(i) for i in np.random.default_rng(0).choice(
        sorted(sample), args.cells, replace=False))
    inputs, targets = (noise_batch(args.batch) if args.data == "noise"
                       else cifar10_batch(args.batch, args.data_root))
    table = load_table()
    ours = {name: [] for name in PROXIES}
    started = time.perf_counter()
    for index in cells:
        torch.manual_seed(0)
        net = NeuralNet(network_to_descriptor(table.cell(index)), (3, 32, 32), 10)
        for name in PROXIES:
            try:
                ours[name].append(score(name, net, inputs, targets))
            except Exception as error:  # noqa: BLE001 - a proxy's failure is reported, not fatal
                ours[name].append(float("nan"))
                print(f"cell {index}: {name} failed: {error}", file=sys.stderr)
    print(f"{len(cells)} NASLib sample cells, CIFAR-10 networks, a {args.data} batch of "
          f"{args.batch}, {time.perf_counter() - started:.0f} s")
    for name in PROXIES:
        pairs = [(mine, sample[index][name]) for mine, index in zip(ours[name], cells)
                 if name in sample[index] and np.isfinite(mine)]
        rho = spearmanr(*zip(*pairs)).statistic if len(pairs) > 2 else float("nan")
        print(f"{name:<10} Spearman with NASLib {rho:+.3f} over {len(pairs)} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
