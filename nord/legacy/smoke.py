"""A small CIFAR-10-shaped data set in the official python format, for quick checks.

    from nord.legacy.smoke import write_cifar10
    write_cifar10('runs/legacy-data')      # runs/legacy-data/cifar-10-batches-py/...
    # NORD_LEGACY_DATA=runs/legacy-data python experiments/legacy/genetic_example.py -e 1 --untrained

Each class has its own random colour pattern and every image is its class's pattern plus
noise, so a network can learn them: accuracy above chance shows that training happened.
"""
from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Union

import numpy as np

from nord.errors import ConfigurationError

__all__ = ["write_cifar10"]

_FOLDER = "cifar-10-batches-py"
_NAMES = (b"airplane", b"automobile", b"bird", b"cat", b"deer", b"dog", b"frog", b"horse",
          b"ship", b"truck")
_PIXELS = 3 * 32 * 32


def write_cifar10(root: Union[str, os.PathLike], n_train: int = 100, n_test: int = 40,
                  seed: int = 0, noise: float = 0.5) -> Path:
    """Write ``<root>/cifar-10-batches-py/`` with ``n_train`` training and ``n_test`` test images.

    Args:
        root: the folder to write into (made when missing).
        n_train: training images, shared out over the five training batches (at least 5).
        n_test: test images (at least 1).
        seed: seeds the class patterns, the labels and the noise.
        noise: share of each pixel that is noise rather than the class pattern, in [0, 1].

    Returns:
        The ``cifar-10-batches-py`` folder.
    """
    if n_train < 5 or n_test < 1:
        raise ConfigurationError(
            f"n_train must be at least 5 (one image per training batch file) and n_test at least "
            f"1; got n_train={n_train}, n_test={n_test}")
    if not 0 <= noise <= 1:
        raise ConfigurationError(f"noise must be in [0, 1]; got {noise}")
    rng = np.random.default_rng(seed)
    patterns = rng.uniform(0, 255, (len(_NAMES), _PIXELS))

    def images(count):
        labels = rng.integers(0, len(_NAMES), count)
        pixels = (1 - noise) * patterns[labels] + noise * rng.uniform(0, 255, (count, _PIXELS))
        return pixels.round().astype(np.uint8), labels

    folder = Path(root) / _FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    x_train, y_train = images(n_train)
    parts = np.array_split(np.arange(n_train), 5)
    for index, part in enumerate(parts, start=1):
        _write_batch(folder / f"data_batch_{index}", f"training batch {index} of 5",
                     x_train[part], y_train[part])
    _write_batch(folder / "test_batch", "testing batch 1 of 1", *images(n_test))
    meta = {b"num_cases_per_batch": len(parts[0]), b"label_names": list(_NAMES),
            b"num_vis": _PIXELS}
    (folder / "batches.meta").write_bytes(pickle.dumps(meta, protocol=2))
    return folder


def _write_batch(path: Path, label: str, data: np.ndarray, labels: np.ndarray) -> None:
    # the official layout: a protocol-2 pickle of a dict with bytes keys; each row holds the
    # red, green and blue 32x32 planes one after the other
    batch = {b"batch_label": label.encode(), b"labels": [int(v) for v in labels], b"data": data,
             b"filenames": [f"smoke_{path.name}_{i}.png".encode() for i in range(len(labels))]}
    path.write_bytes(pickle.dumps(batch, protocol=2))
