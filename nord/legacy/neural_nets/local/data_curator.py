"""CIFAR-10 as the 2018 evaluators saw it, read by nord's curator (no torchvision).

    trainloader, testloader, classes = get_cifar10()   # batches of 128, pixels in [-1, 1]
    for images, labels in trainloader:                 # (128, 3, 32, 32) float32, (128,) int64
        ...

2018 scaled each channel as ``(x - 0.5) / 0.5`` (pixels in [-1, 1]); nord's own
``CIFAR10`` standardises with the training set's statistics instead, so the 2018
evaluators read the data through :class:`LegacyCIFAR10`. Where the files come from:

* ``$NORD_LEGACY_DATA`` set: the CIFAR-10 files in the official python format in that
  folder (``cifar-10-batches-py/`` or ``cifar-10-python.tar.gz``), read as they are: a small
  or modified copy is accepted, nothing is downloaded.
* otherwise, where 2018 left it: ``./neural_nets/data`` (torchvision's download, in a 2018
  checkout), when it holds the CIFAR-10 files; checked against the official checksums.
* otherwise: the official CIFAR-10 in ``$NORD_DATA_ROOT`` (default ``~/.cache/nord/data``),
  downloaded there when missing and checked against the official checksums.
"""
from __future__ import annotations

import os

import numpy as np

from nord.data import CIFAR10
from nord.data.files import find_cifar10
from nord.errors import ConfigurationError
from nord.legacy import DATA_ENV

__all__ = ["LegacyCIFAR10", "default_curator", "get_cifar10", "CLASSES", "FOLDER_2018"]

CLASSES = ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
"""The short class names 2018's loaders returned."""


class LegacyCIFAR10(CIFAR10):
    """CIFAR-10 with pixels scaled to [-1, 1] per channel, as in 2018.

    Args: those of :class:`nord.data.CIFAR10`, but ``download`` defaults to True (as in
    2018), the scaling replaces ``normalise``, and nothing is held out for validation by
    default (2018 trained on the whole training split and scored the test split).
    """

    def __init__(self, root=None, download=True, valid_fraction=0.0, **kwargs):
        if "normalise" in kwargs:
            raise ConfigurationError("LegacyCIFAR10 scales pixels to [-1, 1] as 2018 did; it takes no "
                            "'normalise' (use nord.data.CIFAR10 for standardised data)")
        super().__init__(root, download=download, normalise=False, valid_fraction=valid_fraction,
                         **kwargs)

    def _load(self):
        raw = super()._load()
        return raw._replace(x_train=_to_unit_range(raw.x_train), x_test=_to_unit_range(raw.x_test),
                            scale=1.0)


def _to_unit_range(pixels):
    """8-bit pixels -> float32 in [-1, 1]: (x / 255 - 0.5) / 0.5."""
    out = np.asarray(pixels).astype(np.float32)
    out /= 127.5
    out -= 1.0
    return out


FOLDER_2018 = os.path.join("neural_nets", "data")
"""Where 2018's torchvision downloaded CIFAR-10, relative to the working directory."""


def default_curator() -> LegacyCIFAR10:
    """The data of 2018 evaluators built without one: see the module documentation."""
    folder = os.environ.get(DATA_ENV)
    if folder:
        return LegacyCIFAR10(folder, download=False, verify=False)
    if find_cifar10(FOLDER_2018) is not None:
        return LegacyCIFAR10(os.path.abspath(FOLDER_2018), download=False)
    return LegacyCIFAR10()


def get_cifar10(train_batch=128, test_batch=128, curator=None):
    """``(trainloader, testloader, classes)``: shuffled training batches, ordered test batches.

    The loaders are nord ``TensorLoader``s: iterate them for ``(images, labels)``.
    """
    curator = default_curator() if curator is None else curator
    return (curator.train_loader(batch_size=train_batch, shuffle=True),
            curator.test_loader(batch_size=test_batch), CLASSES)
