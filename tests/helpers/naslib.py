"""NASLib's NAS-Bench-201 proxy sample (tests/fixtures/README.md), keyed by nord's table index.

NASLib encodes a cell as 6 operation indices in its own orders: operations (skip_connect,
none, nor_conv_3x3, nor_conv_1x1, avg_pool_3x3) and edges (0-1, 0-2, 0-3, 1-2, 1-3, 2-3),
where the benchmark's cell string orders edges 0-1, 0-2, 1-2, 0-3, 1-3, 2-3.
"""
import gzip
import json
from pathlib import Path

from nord.benchmarks.nasbench201 import OPS, load_table

SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "naslib_zc_nasbench201_sample.json.gz"
NASLIB_OPS = ("skip_connect", "none", "nor_conv_3x3", "nor_conv_1x1", "avg_pool_3x3")
NASLIB_EDGE_OF = (0, 1, 3, 2, 4, 5)
"""For each of the benchmark's edges, its position in NASLib's tuple."""
DATASETS = {"cifar10": "cifar10", "cifar100": "cifar100", "imagenet16": "ImageNet16-120"}


def naslib_genome(key: str):
    """nord's genome of a NASLib key such as '(0, 2, 3, 2, 3, 1)'."""
    naslib = [int(value) for value in key.strip("()").split(",")]
    return tuple(OPS.index(NASLIB_OPS[naslib[position]]) for position in NASLIB_EDGE_OF)


def naslib_sample(dataset: str):
    """{table index: {proxy: NASLib's score}} of the sample's cells for nord's ``dataset``."""
    with gzip.open(SAMPLE, "rt") as handle:
        records = json.load(handle)[DATASETS[dataset]]
    table = load_table()
    return {table.index_of_genome(naslib_genome(key)): scores for key, scores in records.items()}
