"""Curators that need no download: scikit-learn's Digits, and a user's own arrays.

::

    from nord.data import Digits, TensorCurator

    digits = Digits()                         # 1,797 8x8 images, 10 classes, no download
    digits.input_shape                        # (1, 8, 8)

    mine = TensorCurator(x_train, y_train, x_test, y_test, classes=['cat', 'dog'])
"""
from __future__ import annotations

import hashlib
import logging
import numbers
import os
import tempfile
from contextlib import suppress
from importlib import metadata
from pathlib import Path
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from nord.checks import check_int
from nord.data.curator import ArrayLike, DataCurator, RawData
from nord.data.download import default_root
from nord.errors import ConfigurationError

logger = logging.getLogger(__name__)

__all__ = ["Digits", "TensorCurator"]


class Digits(DataCurator):
    """The 8x8 handwritten digits bundled with scikit-learn: nord's built-in default.

    1,797 grey images of 10 classes, split into train and test with a seed. Pixel values
    0..16 are scaled to 0..1 and then normalised with training statistics.

    The split is kept in the data root (``$NORD_DATA_ROOT``, else ``~/.cache/nord/data``),
    under ``digits/``, one small file per seed, fraction and scikit-learn version: a process
    that finds it there loads the same arrays without importing scikit-learn, which costs
    each rank and worker of a run most of a second of CPU. A file that is damaged or is
    another split's (its SHA-256 covers its arrays and its name) is replaced; where the root
    cannot be written, every process splits anew.

    Args:
        test_fraction: share of the images held out for testing, in (0, 1).
        seed: seed of the split.
        stratify: keep class proportions equal in both splits.
        normalise, valid_fraction: see :class:`~nord.data.curator.DataCurator`; the
            validation hold-out is seeded by ``seed`` too.
    """

    name = "digits"

    def __init__(self, test_fraction: float = 0.2, seed: int = 0, stratify: bool = True,
                 normalise: bool = True, valid_fraction: float = 0.1):
        seed = check_int(seed, "seed", 0)
        super().__init__(normalise=normalise, valid_fraction=valid_fraction, split_seed=seed)
        if (isinstance(test_fraction, bool) or not isinstance(test_fraction, numbers.Real)
                or not 0 < test_fraction < 1):
            raise ConfigurationError(f"test_fraction must be a number in (0, 1); got {test_fraction!r}")
        self.test_fraction = float(test_fraction)
        self.seed = seed
        self.stratify = bool(stratify)

    def _load(self) -> RawData:
        kept = self.kept_split()
        split = _read_split(kept) if kept is not None else None
        if split is None:
            split = self._split()
            if kept is not None:
                _keep_split(kept, split)
        x_train, y_train, x_test, y_test = split
        return RawData(x_train, y_train, x_test, y_test, classes=[str(k) for k in range(10)], scale=1 / 16)

    def kept_split(self) -> Optional[Path]:
        """Where this split is kept; None without an installed scikit-learn to name it by."""
        try:
            version = metadata.version("scikit-learn")
        except metadata.PackageNotFoundError:
            return None
        kind = "stratified" if self.stratify else "shuffled"
        return default_root() / "digits" / (
            f"split-seed{self.seed}-test{self.test_fraction!r}-{kind}-sklearn{version}.npz")

    def _split(self) -> Tuple[np.ndarray, ...]:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        bunch = load_digits()
        images = bunch.images.astype(np.float32)
        labels = bunch.target.astype(np.int64)
        x_train, x_test, y_train, y_test = train_test_split(
            images, labels, test_size=self.test_fraction, random_state=self.seed,
            stratify=labels if self.stratify else None,
        )
        return x_train, y_train, x_test, y_test


_SPLIT = ("x_train", "y_train", "x_test", "y_test")


def _digest(split: Tuple[np.ndarray, ...], key: str) -> str:
    """SHA-256 of the arrays and of the split they are (the file's name: seed, fraction,
    stratification, scikit-learn version), so that another split's file renamed is refused."""
    digest = hashlib.sha256(key.encode())
    for array in split:
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def _read_split(path: Path) -> Optional[Tuple[np.ndarray, ...]]:
    """The kept split at ``path``; None where there is none, or where what is there is not
    the split it was written as (damaged, another split's file, or written by other code)."""
    try:
        with np.load(path, allow_pickle=False) as kept:   # a lone array has no `with`: refused
            split = tuple(kept[name] for name in _SPLIT)
            digest = str(kept["sha256"])
        x_train, y_train, x_test, y_test = split
        whole = (digest == _digest(split, path.stem) and x_train.dtype == np.float32
                 and y_train.dtype == np.int64 and x_train.shape[1:] == (8, 8)
                 and len(x_train) + len(x_test) == 1797)
    except FileNotFoundError:
        return None
    except Exception as error:  # noqa: BLE001 - whatever a damaged file raises: split anew
        logger.debug("the kept Digits split %s is unreadable (%s): splitting anew", path, error)
        return None
    if not whole:
        logger.debug("the kept Digits split %s holds other arrays: splitting anew", path)
        return None
    return split


def _keep_split(path: Path, split: Tuple[np.ndarray, ...]) -> None:
    """Write the split whole or not at all (ranks may write it at the same moment)."""
    part = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.",
                                         suffix=".part", delete=False) as file:
            part = file.name
            np.savez(file, **dict(zip(_SPLIT, split)),
                     sha256=np.array(_digest(split, path.stem)))
        os.chmod(part, 0o644)       # readable by whoever shares the data root, as downloads are
        os.replace(part, path)
    except OSError as error:
        logger.debug("the Digits split is not kept at %s: %s", path, error)
        if part is not None:
            with suppress(OSError):
                os.remove(part)


class TensorCurator(DataCurator):
    """A curator for a user's own arrays (numpy or torch), validated at construction.

    Args:
        x_train, x_test: samples ``(N, C, H, W)``, ``(N, H, W)`` (one channel is added) or
            ``(N, F)``; any real dtype (converted to float32); train and test alike.
        y_train, y_test: integer class indices ``(N,)`` in ``0..K-1``.
        classes: class names (K of them); default the label values counted from the data.
        normalise: see :class:`~nord.data.curator.DataCurator`.
        name: a name for logs and journals.
        x_valid, y_valid: your own validation split; without them ``valid_fraction`` of the
            training arrays is held out (see :class:`~nord.data.curator.DataCurator`).
        valid_fraction, split_seed: see :class:`~nord.data.curator.DataCurator`.

    Raises:
        ConfigurationError: shapes or dtypes that do not fit, NaN or infinite samples,
            labels outside ``0..len(classes)-1``. The message names the array.
    """

    def __init__(self, x_train: ArrayLike, y_train: ArrayLike, x_test: ArrayLike, y_test: ArrayLike,
                 classes: Optional[Sequence[Any]] = None, normalise: bool = True, name: str = "tensors",
                 x_valid: Optional[ArrayLike] = None, y_valid: Optional[ArrayLike] = None,
                 valid_fraction: float = 0.1, split_seed: int = 0):
        super().__init__(normalise=normalise, valid_fraction=valid_fraction, split_seed=split_seed)
        self.name = str(name)
        # The arrays are given here, so checking them here reports mistakes at the line
        # that made them, not at the first training step.
        self._raw = RawData(x_train, y_train, x_test, y_test, classes, x_valid=x_valid,
                            y_valid=y_valid)
        self.load()

    def _load(self) -> RawData:
        """The arrays given (prepared again when the normalisation changes)."""
        return self._raw
