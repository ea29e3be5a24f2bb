"""Sharding: which samples each rank of a data-parallel job sees (pure; numpy only).

Every function takes ``rank`` and ``size`` with serial defaults, so the rules are tested
without MPI::

    from nord.data.sharding import shard_batches, shard_indices, num_batches

    batches = shard_batches(1000, rank=1, size=3, batch_size=64, seed=0, epoch=2)
    len(batches) == num_batches(1000, size=3, batch_size=64)    # 6, on every rank

Training shards are disjoint, cover the set and give every rank the same number of
batches; evaluation shards (:func:`contiguous_shard`) are consecutive blocks.
Details (the training and evaluation rules): docs/data.md.
"""
from __future__ import annotations

import math
import numbers
from typing import List, Optional

import numpy as np

from nord.checks import check_int
from nord.errors import ConfigurationError

__all__ = [
    "num_batches",
    "epoch_order",
    "shard_batches",
    "shard_indices",
    "has_empty_batches",
    "contiguous_shard",
    "subset_indices",
]

# Separate random streams of one seed: epoch orders and the training-subset draw must
# not reuse each other's numbers.
_ORDER_STREAM = 0
_SUBSET_STREAM = 1


def _check_rank(rank, size) -> None:
    size = check_int(size, "size", 1)
    rank = check_int(rank, "rank", 0)
    if rank >= size:
        raise ConfigurationError(
            f"rank must be in 0..size-1; got rank={rank} with size={size}. "
            "Pass the rank and size of the same communicator."
        )


def num_batches(n: int, size: int = 1, batch_size: Optional[int] = None) -> int:
    """Steps per epoch under the training rule: the same on every rank.

    Args:
        n: number of samples to shard.
        size: number of ranks.
        batch_size: the largest batch a rank may get; None means one batch per rank.

    Returns:
        ``ceil(n / (size * batch_size))``; 1 when ``batch_size`` is None; 0 when ``n == 0``.
    """
    n = check_int(n, "n", 0)
    size = check_int(size, "size", 1)
    if n == 0:
        return 0
    if batch_size is None:
        return 1
    batch_size = check_int(batch_size, "batch_size", 1)
    return math.ceil(n / (size * batch_size))


def epoch_order(n: int, seed: Optional[int] = None, epoch: int = 0) -> np.ndarray:
    """The order of ``0..n-1`` for one epoch: identity, or a permutation seeded by (seed, epoch).

    The permutation depends only on ``n``, ``seed`` and ``epoch`` -- never on the rank --
    so every rank computes the same order and the shards cut from it stay disjoint.
    """
    n = check_int(n, "n", 0)
    if seed is None:
        return np.arange(n, dtype=np.int64)
    seed = check_int(seed, "seed", 0)
    epoch = check_int(epoch, "epoch", 0)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_ORDER_STREAM, epoch)))
    return rng.permutation(n).astype(np.int64, copy=False)


def _chunk_starts(n: int, chunks: int) -> np.ndarray:
    """Start offsets (and the final end) of ``chunks`` consecutive chunks of near-equal size."""
    base, extra = divmod(n, chunks)
    k = np.arange(chunks + 1, dtype=np.int64)
    return k * base + np.minimum(k, extra)


def shard_batches(
    n: int,
    rank: int = 0,
    size: int = 1,
    batch_size: Optional[int] = None,
    seed: Optional[int] = None,
    epoch: int = 0,
) -> List[np.ndarray]:
    """Rank ``rank``'s batches for one epoch under the training rule (see the module doc).

    Args:
        n: number of samples (positions ``0..n-1`` are returned).
        rank: this rank, ``0 <= rank < size``.
        size: number of ranks.
        batch_size: largest batch size; None means one batch per rank.
        seed: None keeps the order ``0..n-1``; an integer shuffles per epoch. Must be
            the same on every rank.
        epoch: selects the permutation when ``seed`` is given.

    Returns:
        ``num_batches(n, size, batch_size)`` int64 arrays of sample positions.
    """
    _check_rank(rank, size)
    steps = num_batches(n, size, batch_size)
    if steps == 0:
        return []
    order = epoch_order(n, seed, epoch)
    starts = _chunk_starts(n, steps * size)
    return [order[starts[t * size + rank]: starts[t * size + rank + 1]] for t in range(steps)]


def shard_indices(
    n: int,
    rank: int = 0,
    size: int = 1,
    batch_size: Optional[int] = None,
    seed: Optional[int] = None,
    epoch: int = 0,
) -> np.ndarray:
    """Rank ``rank``'s whole shard for one epoch, in the order its batches visit it.

    The concatenation of :func:`shard_batches`; arguments as there. The shards of
    ranks ``0..size-1`` are disjoint and their union is ``0..n-1``.
    """
    batches = shard_batches(n, rank, size, batch_size, seed, epoch)
    if not batches:
        return np.empty(0, dtype=np.int64)
    return np.concatenate(batches)


def has_empty_batches(n: int, size: int = 1, batch_size: Optional[int] = None) -> bool:
    """Whether the training rule would give some rank an empty batch (``n < B * size``)."""
    steps = num_batches(n, size, batch_size)
    return n < steps * size


def contiguous_shard(n: int, rank: int = 0, size: int = 1) -> range:
    """Rank ``rank``'s block of ``0..n-1`` under the evaluation rule (see the module doc).

    Returns:
        A ``range``; the blocks of all ranks are consecutive, disjoint, cover ``0..n-1``
        and differ in length by at most one.
    """
    n = check_int(n, "n", 0)
    _check_rank(rank, size)
    starts = _chunk_starts(n, size)
    return range(int(starts[rank]), int(starts[rank + 1]))


def subset_indices(n: int, fraction: float = 1.0, seed: int = 0) -> np.ndarray:
    """A seeded random subset of ``0..n-1`` holding ``max(1, round(fraction * n))`` positions.

    Used to train on part of a data set (quick, low-fidelity evaluations). The subset
    depends only on ``(n, fraction, seed)``, so every rank draws the same one; it is
    returned sorted, and shuffling happens afterwards, per epoch.

    Raises:
        ConfigurationError: ``fraction`` outside ``(0, 1]``.
    """
    n = check_int(n, "n", 0)
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) or not 0 < fraction <= 1:
        raise ConfigurationError(
            f"fraction must be a number in (0, 1] (the share of the training set to use); got {fraction!r}"
        )
    if fraction == 1 or n == 0:
        return np.arange(n, dtype=np.int64)
    seed = check_int(seed, "seed", 0)
    keep = min(n, max(1, int(round(fraction * n))))
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_SUBSET_STREAM,)))
    return np.sort(rng.choice(n, size=keep, replace=False)).astype(np.int64, copy=False)
