"""DataCurator: a data set held in memory as tensors, with train and test loaders per rank.

    from nord.data import Digits

    data = Digits()
    data.input_shape, data.num_classes         # (1, 8, 8), 10
    train = data.train_loader(batch_size=32, rank=env.rank, size=env.size, seed=0)
    for epoch in range(5):
        train.set_epoch(epoch)                 # a new, seeded order each epoch
        for x, y in train:                     # float32 (b, C, H, W), int64 (b,)
            ...

A new data set is a subclass with a ``_load`` that returns numpy arrays or tensors.
Details (normalisation, loaders, sharding, a new data set): docs/data.md.
"""
from __future__ import annotations

import logging
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from nord.checks import check_int, check_valid_fraction
from nord.data.sharding import (
    contiguous_shard,
    has_empty_batches,
    num_batches,
    shard_batches,
    shard_indices,
    subset_indices,
)
from nord.errors import ConfigurationError

logger = logging.getLogger(__name__)

__all__ = [
    "DataCurator",
    "RawData",
    "TensorLoader",
    "shard_indices",
    "shard_batches",
    "num_batches",
    "contiguous_shard",
]

ArrayLike = Union[np.ndarray, torch.Tensor, Sequence]


class RawData(NamedTuple):
    """What ``DataCurator._load`` returns: the splits, unnormalised, and class names.

    Images: ``(N, C, H, W)``, ``(N, H, W)`` (one channel) or ``(N, F)`` (feature vectors),
    any real dtype. Labels: ``(N,)`` integers ``0..num_classes-1``. ``x_valid`` and
    ``y_valid`` are a data set's official validation split, when it has one; without them the
    curator holds a validation part out of the training split.
    """

    x_train: ArrayLike
    y_train: ArrayLike
    x_test: ArrayLike
    y_test: ArrayLike
    classes: Optional[Sequence[Any]] = None
    scale: float = 1.0
    """Samples are multiplied by this after conversion to float32 (1/255 for 8-bit pixels)."""
    x_valid: Optional[ArrayLike] = None
    y_valid: Optional[ArrayLike] = None


# --------------------------------------------------------------------------------------
# the loader
# --------------------------------------------------------------------------------------
class TensorLoader:
    """Batches ``(x, y)`` of one rank, sliced from in-memory tensors.

    ``len(loader)`` is the number of batches per epoch. Each pass over the loader is one
    epoch; its order comes from ``(seed, epoch)``. The epoch advances by itself after
    every pass, and :meth:`set_epoch` sets it explicitly (as with PyTorch's
    ``DistributedSampler``), so the two styles give the same orders.

    Args:
        x: samples, first dimension = sample.
        y: labels, same length as ``x``.
        batch_size: the largest batch a rank gets.
        rank: this rank, ``0 <= rank < size``.
        size: number of ranks sharing the data.
        shuffle: draw a new order every epoch (requires the same ``seed`` on all ranks).
        seed: seed of the orders.
        indices: optional positions into ``x`` to use (a subset); default all.
        equal_batches: True: the training rule (same batch count on every rank, see
            :mod:`nord.data.sharding`); False: the evaluation rule (a consecutive block
            per rank, batched in order).

    Raises:
        ConfigurationError: bad sizes, or a training set-up in which some rank would get
            an empty batch.
    """

    def __init__(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        batch_size: int = 64,
        *,
        rank: int = 0,
        size: int = 1,
        shuffle: bool = False,
        seed: int = 0,
        indices: Optional[ArrayLike] = None,
        equal_batches: bool = True,
    ):
        if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
            raise ConfigurationError(
                f"TensorLoader needs torch tensors; got {type(x).__name__} and {type(y).__name__}. "
                "Convert with torch.as_tensor, or use TensorCurator for numpy arrays."
            )
        if x.shape[0] != y.shape[0]:
            raise ConfigurationError(
                f"x and y must hold the same number of samples; got {x.shape[0]} and {y.shape[0]}"
            )
        if y.device != x.device:
            raise ConfigurationError(f"x and y must be on one device; got {x.device} and {y.device}")
        batch_size = check_int(batch_size, "batch_size", 1)
        if shuffle:
            check_int(seed, "seed", 0, rule="an integer >= 0 when shuffle=True")
        self.x, self.y = x, y
        self.batch_size = batch_size
        self.rank, self.size = int(rank), int(size)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.equal_batches = bool(equal_batches)
        if indices is None:
            self._indices = None
            n = int(x.shape[0])
        else:
            self._indices = np.asarray(indices, dtype=np.int64).reshape(-1)
            n = len(self._indices)
            if n and (self._indices.min() < 0 or self._indices.max() >= x.shape[0]):
                raise ConfigurationError(f"indices must lie in 0..{x.shape[0] - 1}")
        self.total_samples = n
        """Samples over all ranks (the subset size when ``indices`` is given)."""
        self._epoch = 0
        if self.equal_batches:
            self._n_batches = num_batches(n, self.size, self.batch_size)  # also checks rank/size
            contiguous_shard(n, self.rank, self.size)  # checks rank < size even when n == 0
            if n == 0 or has_empty_batches(n, self.size, self.batch_size):
                raise ConfigurationError(
                    f"{n} training samples cannot be shared by {self.size} ranks in batches of at most "
                    f"{self.batch_size} with the same number of batches on every rank without an empty "
                    f"batch (that needs n >= size, and batch_size >= 2 unless n is a multiple of size). "
                    "Use a larger batch_size, fewer ranks or more data."
                )
            self._block = None
        else:
            self._block = contiguous_shard(n, self.rank, self.size)
            self._n_batches = math.ceil(len(self._block) / self.batch_size)

    # -- epochs ------------------------------------------------------------------------
    @property
    def epoch(self) -> int:
        """The epoch the next pass will use."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Use the order of ``epoch`` in the next pass (call it on every rank alike)."""
        self._epoch = check_int(epoch, "epoch", 0)

    # -- sizes -------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._n_batches

    @property
    def num_samples(self) -> int:
        """Samples this rank sees per epoch."""
        if self._block is not None:
            return len(self._block)
        base, extra = divmod(self.total_samples, self._n_batches * self.size)
        # chunk k has base + (k < extra) samples; this rank owns chunks rank, rank+size, ...
        owned = np.arange(self.rank, self._n_batches * self.size, self.size)
        return int(self._n_batches * base + np.count_nonzero(owned < extra))

    # -- batches -----------------------------------------------------------------------
    def batch_positions(self, epoch: Optional[int] = None) -> List[np.ndarray]:
        """The sample positions (into ``x``) of each batch of ``epoch`` (default: the next one)."""
        epoch = self._epoch if epoch is None else epoch
        if self._block is not None:
            start, stop = self._block.start, self._block.stop
            batches = [np.arange(a, min(a + self.batch_size, stop), dtype=np.int64)
                       for a in range(start, stop, self.batch_size)]
        else:
            batches = shard_batches(self.total_samples, self.rank, self.size, self.batch_size,
                                    self.seed if self.shuffle else None, epoch)
        if self._indices is not None:
            batches = [self._indices[b] for b in batches]
        return batches

    def __iter__(self) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        # The epoch is taken now, not at the first next(), so iter() then set_epoch()
        # cannot change an epoch already started.
        epoch = self._epoch
        self._epoch += 1
        return self._batches(self.batch_positions(epoch))

    def _batches(self, batches: List[np.ndarray]) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        if not batches:  # a test block of a rank that got no samples
            return
        if self._indices is None and not self.shuffle:
            # In order: every batch is a consecutive range, so a view does without a copy.
            for b in batches:
                start, stop = int(b[0]), int(b[-1]) + 1
                yield self.x[start:stop], self.y[start:stop]
            return
        # One index tensor per epoch on the data's device; batches are slices of it.
        order = torch.from_numpy(np.concatenate(batches)).to(self.x.device)
        start = 0
        for b in batches:
            index = order[start: start + len(b)]
            start += len(b)
            yield self.x.index_select(0, index), self.y.index_select(0, index)

    def __repr__(self) -> str:
        return (f"TensorLoader(batches={len(self)}, batch_size={self.batch_size}, rank={self.rank}, "
                f"size={self.size}, samples={self.num_samples}/{self.total_samples}, "
                f"shuffle={self.shuffle}, seed={self.seed})")


# --------------------------------------------------------------------------------------
# arrays -> validated tensors
# --------------------------------------------------------------------------------------
def _to_tensor(array: ArrayLike, what: str) -> torch.Tensor:
    if isinstance(array, torch.Tensor):
        return array.detach().cpu()
    if isinstance(array, np.ndarray):
        if array.dtype == object:
            raise ConfigurationError(f"{what} must be a numeric array; got dtype=object")
        return torch.from_numpy(np.ascontiguousarray(array))
    try:
        return torch.from_numpy(np.ascontiguousarray(np.asarray(array)))
    except (TypeError, ValueError) as error:
        raise ConfigurationError(f"{what} must be a numpy array or a torch tensor; got {type(array).__name__}") from error


def as_sample_tensor(array: ArrayLike, what: str) -> torch.Tensor:
    """Samples as a float32 tensor ``(N, C, H, W)`` or ``(N, F)``; a copy the caller owns.

    ``(N, H, W)`` gets a channel dimension. Rejects other ranks, non-real dtypes,
    empty sets and non-finite values, naming ``what``.
    """
    tensor = _to_tensor(array, what)
    if tensor.dtype == torch.bool or tensor.is_complex():
        raise ConfigurationError(f"{what} must hold real numbers; got dtype {tensor.dtype}")
    if tensor.dim() == 3:
        tensor = tensor.unsqueeze(1)
    if tensor.dim() not in (2, 4):
        raise ConfigurationError(
            f"{what} must have shape (N, C, H, W), (N, H, W) or (N, F); got shape {tuple(tensor.shape)}"
        )
    if tensor.shape[0] == 0 or any(d == 0 for d in tensor.shape[1:]):
        raise ConfigurationError(f"{what} is empty: shape {tuple(tensor.shape)}")
    # .to(float32) shares memory when the dtype already matches: clone so in-place
    # normalisation never writes into the caller's array.
    out = tensor.to(torch.float32)
    if out.data_ptr() == tensor.data_ptr():
        out = out.clone()
    out = out.contiguous()
    if not torch.isfinite(out).all():
        raise ConfigurationError(f"{what} contains NaN or infinite values")
    return out


def as_label_tensor(array: ArrayLike, what: str, n: int) -> torch.Tensor:
    """Labels as an int64 tensor ``(n,)`` of values >= 0, naming ``what`` in errors."""
    tensor = _to_tensor(array, what)
    if tensor.dim() == 2 and tensor.shape[1] == 1:
        tensor = tensor[:, 0]
    if tensor.dim() != 1:
        raise ConfigurationError(
            f"{what} must be a vector of class indices, shape ({n},); got shape {tuple(tensor.shape)}"
        )
    if tensor.dtype == torch.bool or tensor.is_floating_point() or tensor.is_complex():
        raise ConfigurationError(
            f"{what} must hold integer class indices; got dtype {tensor.dtype}. "
            "Convert with y.astype('int64') (numpy) or y.long() (torch)."
        )
    if tensor.shape[0] != n:
        raise ConfigurationError(f"{what} has {tensor.shape[0]} labels for {n} samples; they must match")
    tensor = tensor.to(torch.int64).contiguous()
    if len(tensor) and int(tensor.min()) < 0:
        raise ConfigurationError(f"{what} holds negative labels (min {int(tensor.min())}); classes are 0..K-1")
    return tensor


def channel_statistics(x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Per-channel (dimension 1) mean and standard deviation, shaped to broadcast over ``x``.

    A constant channel gets std 1, so normalising it gives zeros instead of NaN.
    """
    dims = [d for d in range(x.dim()) if d != 1]
    std, mean = torch.std_mean(x, dim=dims, correction=0, keepdim=True)
    std = torch.where(std > 0, std, torch.ones_like(std))
    return mean, std


def given_statistics(statistics: Tuple[Sequence[float], Sequence[float]], x: torch.Tensor,
                     source: str) -> Tuple[torch.Tensor, torch.Tensor]:
    """Published per-channel ``(mean, std)`` shaped to broadcast over ``x``, like
    :func:`channel_statistics`.

    Raises:
        ConfigurationError: not one positive deviation and one mean per channel of ``x``.
    """
    mean, std = (torch.as_tensor(values, dtype=x.dtype).flatten() for values in statistics)
    channels = x.shape[1]
    if len(mean) != channels or len(std) != channels or not bool((std > 0).all()):
        raise ConfigurationError(
            f"{source}: normalising statistics need one mean and one positive deviation per "
            f"channel ({channels}); got mean {mean.tolist()} and std {std.tolist()}")
    shape = [1, channels] + [1] * (x.dim() - 2)
    return mean.view(shape), std.view(shape)


@dataclass
class _Loaded:
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_valid: torch.Tensor
    y_valid: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    classes: Tuple[str, ...]
    mean: Optional[Tuple[float, ...]]
    std: Optional[Tuple[float, ...]]
    split: Dict[str, Any]


def validation_indices(labels: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Positions of a seeded, stratified hold-out of ``fraction`` of the samples, sorted.

    Each class gives ``round(fraction * its count)`` samples (at least one when it has two or
    more and ``fraction`` > 0), drawn by a generator seeded with ``seed``: the same labels,
    fraction and seed always give the same positions.
    """
    labels = np.asarray(labels)
    if fraction <= 0:
        return np.zeros(0, dtype=np.int64)
    rng = np.random.default_rng(seed)
    chosen = []
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        count = int(round(fraction * len(members)))
        if len(members) >= 2:
            count = min(max(count, 1), len(members) - 1)
        else:
            count = 0
        chosen.append(rng.permutation(members)[:count])
    return np.sort(np.concatenate(chosen)).astype(np.int64) if chosen else np.zeros(0, np.int64)


def prepare(raw: RawData, normalise: bool = True, source: str = "data",
            valid_fraction: float = 0.0, split_seed: int = 0,
            statistics: Optional[Tuple[Sequence[float], Sequence[float]]] = None) -> _Loaded:
    """Validate and convert a :class:`RawData`; split off the validation part (the official
    one, or a stratified hold-out of ``valid_fraction`` of the training split, seeded by
    ``split_seed``); normalise every split with the statistics of what remains for training,
    or with ``statistics`` (per-channel mean and standard deviation) when given."""
    x_train = as_sample_tensor(raw.x_train, f"{source}: x_train")
    x_test = as_sample_tensor(raw.x_test, f"{source}: x_test")
    official = raw.x_valid is not None or raw.y_valid is not None
    if official and (raw.x_valid is None or raw.y_valid is None):
        raise ConfigurationError(f"{source}: give both x_valid and y_valid, or neither")
    x_valid = as_sample_tensor(raw.x_valid, f"{source}: x_valid") if official else None
    for tensor in (x_train, x_test) + ((x_valid,) if official else ()):
        if raw.scale != 1:
            tensor.mul_(raw.scale)
    if x_train.shape[1:] != x_test.shape[1:] or (official and x_valid.shape[1:] != x_train.shape[1:]):
        raise ConfigurationError(
            f"{source}: train, validation and test samples must have one shape; got "
            f"{tuple(x_train.shape[1:])}, {tuple(x_valid.shape[1:]) if official else '-'} and "
            f"{tuple(x_test.shape[1:])}"
        )
    y_train = as_label_tensor(raw.y_train, f"{source}: y_train", len(x_train))
    y_test = as_label_tensor(raw.y_test, f"{source}: y_test", len(x_test))
    if official:
        y_valid = as_label_tensor(raw.y_valid, f"{source}: y_valid", len(x_valid))
        split = {"source": "official", "n_valid": len(x_valid)}
    else:
        fraction = check_valid_fraction(valid_fraction)
        held = validation_indices(y_train.numpy(), fraction, split_seed)
        keep = np.setdiff1d(np.arange(len(y_train)), held, assume_unique=True)
        x_valid, y_valid = x_train[held], y_train[held]
        x_train, y_train = x_train[keep].contiguous(), y_train[keep].contiguous()
        split = {"source": "held out of the training split, stratified" if fraction else "none",
                 "fraction": fraction, "seed": int(split_seed), "n_valid": len(held)}
    top = int(max(y_train.max(), y_test.max(), y_valid.max() if len(y_valid) else 0))
    if raw.classes is None:
        classes = tuple(str(k) for k in range(top + 1))
    else:
        classes = tuple(c.decode() if isinstance(c, bytes) else str(c) for c in raw.classes)
        if len(classes) == 0:
            raise ConfigurationError(f"{source}: classes is empty")
        if top >= len(classes):
            raise ConfigurationError(
                f"{source}: a label is {top} but there are only {len(classes)} classes (labels are 0..K-1); "
                "pass the full list of classes, or classes=None to count them from the labels"
            )
    mean = std = None
    if normalise:
        mean_t, std_t = (channel_statistics(x_train) if statistics is None
                         else given_statistics(statistics, x_train, source))
        for tensor in (x_train, x_valid, x_test):
            tensor.sub_(mean_t).div_(std_t)
        mean = tuple(float(v) for v in mean_t.flatten())
        std = tuple(float(v) for v in std_t.flatten())
    return _Loaded(x_train, y_train, x_valid, y_valid, x_test, y_test, classes, mean, std, split)


# --------------------------------------------------------------------------------------
# the curator
# --------------------------------------------------------------------------------------
class DataCurator(ABC):
    """Base of data sets: loads once, normalises, shards, and gives loaders.

    Subclasses set ``name`` and implement ``_load() -> RawData``; loading happens on
    first use (or on :meth:`load`), not in the constructor. Registered, a data set is known
    by name to :func:`~nord.data.get_curator` and ``nord run --dataset``::

        import numpy as np
        from nord.data import DataCurator, RawData, get_curator, register_curator

        @register_curator("noise", description="Gaussian noise in 4 classes")
        class Noise(DataCurator):
            name = "noise"

            def _load(self):
                rng = np.random.default_rng(0)
                x = rng.normal(size=(120, 3, 8, 8)).astype("float32")
                y = rng.integers(0, 4, 120)
                return RawData(x[:100], y[:100], x[100:], y[100:], classes=None)

        data = get_curator("noise", valid_fraction=0.2)

    Args:
        normalise: subtract the per-channel mean and divide by the per-channel standard
            deviation of the training split (applied to every split), so that networks
            see zero-mean, unit-variance inputs whatever the data set's pixel range.
        valid_fraction: the share of the training split held out, stratified, for validation
            (the search signal), when the data set has no official validation split. 0
            holds out nothing: evaluators then select on the test split, and say so.
        split_seed: seeds the hold-out (the same seed, the same split on every rank and run).
    """

    name: str = "data"

    def __init__(self, normalise: bool = True, valid_fraction: float = 0.1, split_seed: int = 0):
        self.normalise = bool(normalise)
        self.valid_fraction = check_valid_fraction(valid_fraction)
        self.split_seed = check_int(split_seed, "split_seed", 0)
        self._data: Optional[_Loaded] = None
        self._on_device: Dict[str, Tuple[torch.Tensor, ...]] = {}
        self._statistics: Optional[Tuple[Tuple[float, ...], Tuple[float, ...]]] = None

    def normalise_with(self, mean: Optional[Sequence[float]] = None,
                       std: Optional[Sequence[float]] = None) -> "DataCurator":
        """Normalise with these per-channel statistics (of the samples as scaled, e.g. pixels in
        [0, 1]) instead of the training split's: a published protocol's figures; neither given:
        the training split's own again. Data already loaded otherwise is loaded again on next
        use; returns self."""
        statistics = (None if mean is None and std is None
                      else (tuple(float(v) for v in mean), tuple(float(v) for v in std)))
        if statistics != self._statistics:
            self._statistics = statistics
            self._data = None
            self._on_device = {}
        return self

    @abstractmethod
    def _load(self) -> RawData:
        """Read the data set; may raise MissingDataError, CorruptDataError, ConfigurationError."""

    # -- loading -----------------------------------------------------------------------
    def load(self) -> "DataCurator":
        """Load the data now (idempotent) and return self: raises here, not mid-training."""
        if self._data is None:
            self._data = prepare(self._load(), self.normalise, source=type(self).__name__,
                                 valid_fraction=self.valid_fraction, split_seed=self.split_seed,
                                 statistics=self._statistics)
            logger.debug("%s loaded: %d train, %d test samples of shape %s", self.name,
                         len(self._data.x_train), len(self._data.x_test), self.input_shape)
        return self

    @property
    def loaded(self) -> bool:
        return self._data is not None

    @property
    def _loaded(self) -> _Loaded:
        self.load()
        return self._data

    # -- description ---------------------------------------------------------------------
    @property
    def classes(self) -> Tuple[str, ...]:
        """Class names, index = label."""
        return self._loaded.classes

    @property
    def num_classes(self) -> int:
        return len(self._loaded.classes)

    @property
    def input_shape(self) -> Tuple[int, ...]:
        """Shape of one sample: ``(C, H, W)`` for images, ``(F,)`` for feature vectors."""
        return tuple(int(d) for d in self._loaded.x_train.shape[1:])

    @property
    def n_train(self) -> int:
        return int(self._loaded.x_train.shape[0])

    @property
    def n_valid(self) -> int:
        return int(self._loaded.x_valid.shape[0])

    @property
    def n_test(self) -> int:
        return int(self._loaded.x_test.shape[0])

    @property
    def split(self) -> Dict[str, Any]:
        """How the validation split was made: its source, fraction, seed and size."""
        return dict(self._loaded.split)

    @property
    def mean(self) -> Optional[Tuple[float, ...]]:
        """Per-channel mean used to normalise (None when not normalised): the training
        split's, or the statistics given to :meth:`normalise_with`."""
        return self._loaded.mean

    @property
    def std(self) -> Optional[Tuple[float, ...]]:
        """Per-channel training standard deviation used to normalise (None when not normalised)."""
        return self._loaded.std

    def describe(self) -> Dict[str, Any]:
        """A JSON-friendly summary, for logs and run journals."""
        return {
            "name": self.name,
            "n_train": self.n_train,
            "n_valid": self.n_valid,
            "n_test": self.n_test,
            "validation": self.split,
            "input_shape": list(self.input_shape),
            "num_classes": self.num_classes,
            "classes": list(self.classes),
            "normalised": self.normalise,
        }

    def tensors(self, split: str = "train", device: Union[str, torch.device, None] = None
                ) -> Tuple[torch.Tensor, torch.Tensor]:
        """The whole split ``'train'``, ``'valid'`` or ``'test'`` as ``(x, y)``, on ``device``
        (cached per device).

        Moving the set to an accelerator once makes every batch a device-side gather.
        """
        if split not in ("train", "valid", "test"):
            raise ConfigurationError(f"split must be 'train', 'valid' or 'test'; got {split!r}")
        data = self._loaded
        x, y = {"train": (data.x_train, data.y_train), "valid": (data.x_valid, data.y_valid),
                "test": (data.x_test, data.y_test)}[split]
        if device is None or torch.device(device) == x.device:
            return x, y
        key = f"{split}:{torch.device(device)}"
        if key not in self._on_device:
            self._on_device[key] = (x.to(device), y.to(device))
        return self._on_device[key]

    # -- loaders -----------------------------------------------------------------------
    def train_loader(
        self,
        batch_size: int = 64,
        rank: int = 0,
        size: int = 1,
        shuffle: bool = True,
        seed: int = 0,
        fraction: float = 1.0,
        device: Union[str, torch.device, None] = None,
    ) -> TensorLoader:
        """Training batches of rank ``rank`` out of ``size``: same batch count on every rank.

        Args:
            batch_size: largest batch per rank (batches of an epoch differ by at most one).
            rank: this rank; size: number of ranks training together.
            shuffle: a new seeded order each epoch (``set_epoch``, or automatically per pass).
            seed: seed of the orders and of the subset; must be equal on every rank.
            fraction: train on a seeded random subset of this share of the training set
                (the same subset on every rank), e.g. 0.1 for a quick evaluation.
            device: where the tensors live (the whole set is copied there once).

        Raises:
            ConfigurationError: bad arguments, or a set-up that would give some rank an
                empty batch (see :mod:`nord.data.sharding`).
        """
        x, y = self.tensors("train", device)
        subset = subset_indices(len(x), fraction, seed)  # also validates fraction
        indices = None if len(subset) == len(x) else subset
        return TensorLoader(x, y, batch_size, rank=rank, size=size, shuffle=shuffle, seed=seed,
                            indices=indices, equal_batches=True)

    def test_loader(
        self,
        batch_size: int = 256,
        rank: int = 0,
        size: int = 1,
        device: Union[str, torch.device, None] = None,
        split: str = "test",
    ) -> TensorLoader:
        """Evaluation batches of rank ``rank``: a consecutive block of the test set (or of the
        validation set, ``split='valid'``), in order.

        Blocks of the ranks are disjoint and cover the set, so exact accuracy is the sum of
        correct predictions over the sum of samples of all ranks. Batch counts may differ by
        one between ranks (a rank gets no batch when there are fewer samples than ranks):
        reduce per-rank totals once, after the loop.
        """
        if split not in ("valid", "test"):
            raise ConfigurationError(f"an evaluation split is 'valid' or 'test'; got {split!r}")
        x, y = self.tensors(split, device)
        return TensorLoader(x, y, batch_size, rank=rank, size=size, shuffle=False, equal_batches=False)

    def __repr__(self) -> str:
        if self._data is None:
            return f"{type(self).__name__}(not loaded)"
        return (f"{type(self).__name__}(n_train={self.n_train}, n_valid={self.n_valid}, "
                f"n_test={self.n_test}, "
                f"input_shape={self.input_shape}, num_classes={self.num_classes})")
