"""Curators that need no files: scikit-learn's Digits, and a user's own arrays.

::

    from nord.data import Digits, TensorCurator

    digits = Digits()                         # 1,797 8x8 images, 10 classes, no download
    digits.input_shape                        # (1, 8, 8)

    mine = TensorCurator(x_train, y_train, x_test, y_test, classes=['cat', 'dog'])
"""
from __future__ import annotations

import numbers
from typing import Any, Optional, Sequence

import numpy as np

from nord.checks import check_int
from nord.data.curator import ArrayLike, DataCurator, RawData, prepare
from nord.errors import ConfigurationError

__all__ = ["Digits", "TensorCurator"]


class Digits(DataCurator):
    """The 8x8 handwritten digits bundled with scikit-learn: nord's built-in default.

    1,797 grey images of 10 classes, split into train and test with a seed. Pixel values
    0..16 are scaled to 0..1 and then normalised with training statistics.

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
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        bunch = load_digits()
        images = bunch.images.astype(np.float32)
        labels = bunch.target.astype(np.int64)
        x_train, x_test, y_train, y_test = train_test_split(
            images, labels, test_size=self.test_fraction, random_state=self.seed,
            stratify=labels if self.stratify else None,
        )
        return RawData(x_train, y_train, x_test, y_test, classes=[str(k) for k in range(10)], scale=1 / 16)


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
        self._data = prepare(RawData(x_train, y_train, x_test, y_test, classes,
                                     x_valid=x_valid, y_valid=y_valid),
                             self.normalise, source="TensorCurator",
                             valid_fraction=self.valid_fraction, split_seed=self.split_seed)

    def _load(self) -> RawData:  # pragma: no cover - data is prepared in __init__
        raise AssertionError("TensorCurator holds its data from construction")
