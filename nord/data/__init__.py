"""DataCurators: data sets in memory as tensors, sharded across ranks, batched by slicing.

::

    from nord.data import Digits, MNIST, CIFAR10, TensorCurator, get_curator

    data = Digits()                                   # built in, no download
    train = data.train_loader(batch_size=64, rank=rank, size=size, seed=0)
    test = data.test_loader(batch_size=256, rank=rank, size=size)
    data.input_shape, data.num_classes, data.classes

Names are imported on first use, so that ``nord.data.registry`` can be read without torch.

Details (the modules, curators, sharding, files, downloads): docs/data.md.
"""
import importlib

from nord.data.registry import get_curator, list_curators, register_curator

_LAZY = {
    "DataCurator": "nord.data.curator",
    "RawData": "nord.data.curator",
    "TensorLoader": "nord.data.curator",
    "Digits": "nord.data.builtin",
    "TensorCurator": "nord.data.builtin",
    "FileCurator": "nord.data.datasets",
    "MNIST": "nord.data.datasets",
    "FashionMNIST": "nord.data.datasets",
    "CIFAR10": "nord.data.datasets",
    "shard_indices": "nord.data.sharding",
    "shard_batches": "nord.data.sharding",
    "num_batches": "nord.data.sharding",
    "contiguous_shard": "nord.data.sharding",
    "subset_indices": "nord.data.sharding",
}

__all__ = ["get_curator", "list_curators", "register_curator", *_LAZY]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nord.data' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
