"""How well a trained supernet ranks cells: inherited accuracies against stand-alone training.

    python bench/supernet_ranking.py [--cells 100] [--search-epochs 10] [--epochs 3]
                                     [--channels 8] [--cells-per-stage 1] [--method rsps]

On Digits (the machine has no CIFAR files), a supernet is trained by a weight-sharing method
(random sampling with parameter sharing by default, which trains every path alike); ``--cells``
distinct random cells are then scored twice on the validation split:
- with the weights they inherit from the supernet, batch norms recalibrated
  (``SupernetEvaluator``, no training);
- by nord's own short training of each cell's stand-alone network of the same size
  (``LocalEvaluator``, the nasbench201 recipe for ``--epochs``).
Kendall's tau and Spearman's rho between the two rankings are printed, and the rank (among the
cells) of the cell the supernet likes best. On the table's data sets the stand-alone figures
would be the table's; Digits is not one of them.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import kendalltau, spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nord.benchmarks.nasbench201 import cell_to_descriptor, network_to_descriptor  # noqa: E402
from nord.data import Digits  # noqa: E402
from nord.evaluators.local import LocalEvaluator  # noqa: E402
from nord.nn.recipe import get_recipe  # noqa: E402
from nord.oneshot.evaluator import SupernetEvaluator  # noqa: E402
from nord.oneshot.search import OneShotSearch, OneShotSettings  # noqa: E402
from nord.oneshot.settings import MethodSettings  # noqa: E402


def sample_cells(count, seed=0):
    """``count`` distinct cells drawn uniformly."""
    rng = np.random.default_rng(seed)
    cells = []
    while len(cells) < count:
        cell = tuple(int(op) for op in rng.integers(0, 5, 6))
        if cell not in cells:
            cells.append(cell)
    return cells


def main(cells, search_epochs, epochs, channels, cells_per_stage, method, threads, seed=0):
    torch.set_num_threads(threads)
    curator = Digits()
    started = time.perf_counter()
    settings = OneShotSettings(method, search_epochs=search_epochs, channels=channels,
                               cells_per_stage=cells_per_stage, seed=seed,
                               method_settings=MethodSettings(candidates=10))
    search = OneShotSearch(settings, curator)
    search.run()
    searched = time.perf_counter() - started
    evaluator = SupernetEvaluator(search.supernet, curator)
    trainer = LocalEvaluator(curator, epochs=epochs, recipe=get_recipe("nasbench201"),
                             seed=seed)
    chosen = sample_cells(cells, seed)
    inherited, standalone = [], []
    started = time.perf_counter()
    for cell in chosen:
        inherited.append(evaluator.descriptor_evaluate(cell_to_descriptor(cell)).accuracy)
    scored = time.perf_counter() - started
    started = time.perf_counter()
    for cell in chosen:
        network = network_to_descriptor(cell, channels, cells_per_stage)
        standalone.append(trainer.descriptor_evaluate(network).accuracy)
    trained = time.perf_counter() - started
    tau, tau_p = kendalltau(inherited, standalone)
    rho, _ = spearmanr(inherited, standalone)
    best = int(np.argmax(inherited))
    rank = 1 + int(np.sum(np.array(standalone) > standalone[best]))
    print(f"{method} supernet on Digits (C={channels}, N={cells_per_stage}, {search_epochs} "
          f"search epochs, {searched:.0f} s); {cells} random cells: inherited accuracy "
          f"({scored:.1f} s in all) against {epochs}-epoch stand-alone training "
          f"({trained:.0f} s in all), validation split")
    print(f"Kendall tau {tau:.3f} (p {tau_p:.2g}), Spearman rho {rho:.3f}; the supernet's "
          f"best cell is {rank} of {cells} stand-alone "
          f"(inherited {inherited[best]:.3f}, stand-alone {standalone[best]:.3f}; best "
          f"stand-alone {max(standalone):.3f})")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=100)
    parser.add_argument("--search-epochs", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=3, help="stand-alone training epochs")
    parser.add_argument("--channels", type=int, default=8)
    parser.add_argument("--cells-per-stage", type=int, default=1)
    parser.add_argument("--method", default="rsps")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    sys.exit(main(args.cells, args.search_epochs, args.epochs, args.channels,
                  args.cells_per_stage, args.method, args.threads))
