"""Compute the data-free zero-cost proxies of every NAS-Bench-201 cell, for the three data sets.

    python scripts/nasbench201_proxies.py                     # resumes where it stopped
    python scripts/nasbench201_proxies.py --jobs 2            # two processes side by side
    python scripts/nasbench201_proxies.py --device cuda       # the same on a GPU
    python scripts/nasbench201_proxies.py --pack              # write the gzipped table now

For each cell and each data set (CIFAR-10 and CIFAR-100 at 32x32 with 10 and 100 classes,
ImageNet16-120 at 16x16 with 120 classes) the script builds the benchmark's network with the
torch seed ``--seed`` and scores it with synflow, params and flops (nord.nn.proxies), the
values ZeroCostEvaluator(proxy, seed=seed) gives, and records the seconds that building the
network and scoring it with synflow took (the cost of a synflow evaluation). Rows go to a plain CSV as they are made
(``<out>.partial.csv``), so a killed run loses at most one cell and starts again where it
stopped. Cells are taken in a seeded random order, so the rows done at any moment are a
uniform sample of the space (after the cells of ``--first``, when given). When every cell is done (or with ``--pack``), the rows are
written, in index order, to the gzipped CSV ``--out``.
"""
from __future__ import annotations

import argparse
import csv
import functools
import gzip
import multiprocessing
import os
import sys
import time

import numpy as np
import torch

from nord.benchmarks.nasbench201 import INPUT_SHAPES, DATASETS, load_table, network_to_descriptor
from nord.nn.network import NeuralNet
from nord.benchmarks.nasbench201.proxy_table import COLUMNS, PROXY_TABLE_FILE, TABLE_PROXIES
from nord.nn.proxies import score

ORDER_SEED = 201
DEFAULT_OUT = os.path.join(os.path.dirname(__file__), os.pardir, "nord", "benchmarks",
                           "nasbench201", "data", PROXY_TABLE_FILE)


def cell_row(cell: str, index: int, seed: int, device: str):
    """The row of one cell: for each data set, its proxies and synflow's seconds (COLUMNS)."""
    descriptor = network_to_descriptor(cell)
    row = [index]
    for name, dataset in DATASETS.items():
        started = time.perf_counter()
        torch.manual_seed(seed)
        shape = INPUT_SHAPES[name]
        net = NeuralNet(descriptor, input_shape=shape, num_classes=dataset.num_classes)
        inputs = torch.zeros((1,) + shape)
        row.append(repr(score("synflow", net, inputs, device=device)))
        seconds = time.perf_counter() - started   # what a ZeroCostEvaluator spends on it
        row += [repr(score(proxy, net, inputs, device=device)) for proxy in TABLE_PROXIES[1:]]
        row.append(f"{seconds:.4f}")
    return row


def _init_worker(threads: int):
    torch.set_num_threads(threads)


def _cell_row_at(index: int, seed: int, device: str):
    return cell_row(load_table().cell(index), index, seed, device)


def done_indices(partial: str):
    if not os.path.exists(partial):
        return set()
    with open(partial, newline="") as handle:
        return {int(row[0]) for row in csv.reader(handle) if row and row[0] != "index"}


def pack(partial: str, out: str) -> int:
    with open(partial, newline="") as handle:
        rows = [row for row in csv.reader(handle) if row and row[0] != "index"]
    rows.sort(key=lambda row: int(row[0]))
    with gzip.open(out, "wt", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    return len(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--seed", type=int, default=0, help="torch seed of each network")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of each process")
    parser.add_argument("--jobs", type=int, default=1,
                        help="processes scoring cells side by side (one writer keeps the file whole)")
    parser.add_argument("--limit", type=int, default=None, help="stop after this many cells")
    parser.add_argument("--first", default=None, metavar="FILE",
                        help="table indices (one a line) to compute before the random order")
    parser.add_argument("--pack", action="store_true", help="only write --out from the rows done")
    args = parser.parse_args(argv)
    out = os.path.abspath(args.out)
    partial = out[:-len(".csv.gz")] + ".partial.csv" if out.endswith(".csv.gz") else out + ".partial.csv"
    if args.pack:
        print(f"{pack(partial, out)} cells written to {out}")
        return 0
    if args.jobs < 1 or args.threads < 1:
        parser.error(f"--jobs and --threads take an integer >= 1 (given {args.jobs} and {args.threads})")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: torch {torch.__version__} sees no GPU on this "
                     "machine; leave --device out to score on the CPU")
    torch.set_num_threads(args.threads)
    table = load_table()
    order = [int(i) for i in np.random.default_rng(ORDER_SEED).permutation(len(table))]
    if args.first:
        with open(args.first) as handle:
            first = [int(line) for line in handle if line.strip()]
        order = first + [i for i in order if i not in set(first)]
    done = done_indices(partial)
    todo = [i for i in order if i not in done]
    if args.limit is not None:
        todo = todo[:args.limit]
    fresh = not os.path.exists(partial)
    start = time.perf_counter()
    pool = None
    if args.jobs > 1:
        pool = multiprocessing.get_context("spawn").Pool(args.jobs, _init_worker, (args.threads,))
        rows = pool.imap(functools.partial(_cell_row_at, seed=args.seed, device=args.device), todo)
    else:
        rows = (cell_row(table.cell(index), index, args.seed, args.device) for index in todo)
    with open(partial, "a", newline="") as handle:
        writer = csv.writer(handle)
        if fresh:
            writer.writerow(COLUMNS)
        for count, row in enumerate(rows, 1):
            writer.writerow(row)
            handle.flush()
            if count % 100 == 0:
                elapsed = time.perf_counter() - start
                print(f"{len(done) + count} / {len(table)} cells, {elapsed / count:.3f} s per cell",
                      flush=True)
    if pool is not None:
        pool.close()
        pool.join()
    elapsed = time.perf_counter() - start
    print(f"{len(todo)} cells in {elapsed:.0f} s ({elapsed / max(len(todo), 1):.3f} s per cell, "
          f"device {args.device}, {args.jobs} process(es) of {args.threads} thread(s))")
    if len(done) + len(todo) == len(table):
        print(f"{pack(partial, out)} cells written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
