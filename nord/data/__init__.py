"""DataCurators: data sets in memory as tensors, sharded across ranks, batched by slicing.

::

    from nord.data import Digits, MNIST, CIFAR10, TensorCurator, get_curator

    data = Digits()                                   # built in, no download
    train = data.train_loader(batch_size=64, rank=rank, size=size, seed=0)
    test = data.test_loader(batch_size=256, rank=rank, size=size)
    data.input_shape, data.num_classes, data.classes

Modules: :mod:`~nord.data.sharding` (pure rules: who gets which samples),
:mod:`~nord.data.curator` (the base class and :class:`TensorLoader`),
:mod:`~nord.data.builtin` (Digits, TensorCurator), :mod:`~nord.data.datasets` (MNIST,
Fashion-MNIST, CIFAR-10), :mod:`~nord.data.files` (official-format readers) and
:mod:`~nord.data.download` (URLs, checksums, verified downloads).
"""
from nord.data.builtin import Digits, TensorCurator
from nord.data.curator import DataCurator, RawData, TensorLoader, get_curator, list_curators, register_curator
from nord.data.datasets import CIFAR10, MNIST, FashionMNIST, FileCurator
from nord.data.sharding import contiguous_shard, num_batches, shard_batches, shard_indices, subset_indices

__all__ = [
    "DataCurator",
    "RawData",
    "TensorLoader",
    "Digits",
    "TensorCurator",
    "FileCurator",
    "MNIST",
    "FashionMNIST",
    "CIFAR10",
    "get_curator",
    "list_curators",
    "register_curator",
    "shard_indices",
    "shard_batches",
    "num_batches",
    "contiguous_shard",
    "subset_indices",
]
