"""The sharding rules of nord.data.sharding: pure functions, no MPI."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nord.data.sharding import (
    contiguous_shard,
    epoch_order,
    has_empty_batches,
    num_batches,
    shard_batches,
    shard_indices,
    subset_indices,
)
from nord.errors import ConfigurationError

# sizes that can hold a non-empty batch on every rank: n >= size, and batch_size >= 2
# unless size divides n (see the module's rule)
usable = st.tuples(
    st.integers(1, 400), st.integers(1, 9), st.integers(1, 70), st.one_of(st.none(), st.integers(0, 5)),
    st.integers(0, 4),
).filter(lambda t: t[0] >= t[1] and (t[2] >= 2 or t[0] % t[1] == 0))
anything = st.tuples(st.integers(0, 300), st.integers(1, 9), st.integers(1, 70),
                     st.one_of(st.none(), st.integers(0, 5)), st.integers(0, 4))


def all_shards(n, size, batch_size, seed, epoch):
    return [shard_batches(n, r, size, batch_size, seed, epoch) for r in range(size)]


@settings(max_examples=300, deadline=None)
@given(anything)
def test_shards_are_disjoint_and_cover_the_set(case):
    n, size, batch_size, seed, epoch = case
    flat = np.concatenate([np.concatenate(b) if b else np.empty(0, np.int64)
                           for b in all_shards(n, size, batch_size, seed, epoch)])
    assert len(flat) == n
    assert np.array_equal(np.sort(flat), np.arange(n))


@settings(max_examples=300, deadline=None)
@given(anything)
def test_every_rank_has_the_same_number_of_batches(case):
    n, size, batch_size, seed, epoch = case
    counts = {len(b) for b in all_shards(n, size, batch_size, seed, epoch)}
    assert counts == {num_batches(n, size, batch_size)}


@settings(max_examples=300, deadline=None)
@given(anything)
def test_no_batch_exceeds_batch_size(case):
    n, size, batch_size, seed, epoch = case
    sizes = [len(b) for shard in all_shards(n, size, batch_size, seed, epoch) for b in shard]
    assert max(sizes, default=0) <= batch_size


@settings(max_examples=300, deadline=None)
@given(usable)
def test_usable_set_ups_have_no_empty_batch_and_even_sizes(case):
    n, size, batch_size, seed, epoch = case
    sizes = [len(b) for shard in all_shards(n, size, batch_size, seed, epoch) for b in shard]
    assert not has_empty_batches(n, size, batch_size)
    assert min(sizes) >= 1
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=200, deadline=None)
@given(anything)
def test_shard_sizes_differ_by_at_most_one(case):
    n, size, batch_size, seed, epoch = case
    sizes = [len(shard_indices(n, r, size, batch_size, seed, epoch)) for r in range(size)]
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("n,size,batch_size", [(10, 3, 4), (7, 2, 64), (3, 3, 1), (5, 4, 2), (100, 3, 7)])
def test_examples_not_divisible_and_smaller_than_one_global_batch(n, size, batch_size):
    shards = [shard_indices(n, r, size, batch_size, seed=1) for r in range(size)]
    assert sorted(np.concatenate(shards).tolist()) == list(range(n))
    assert ({len(shard_batches(n, r, size, batch_size, seed=1)) for r in range(size)} ==
        {math.ceil(n / (size * batch_size))})


def test_batch_count_rule():
    assert num_batches(1000, size=3, batch_size=64) == 6
    assert num_batches(10, size=1, batch_size=3) == 4
    assert num_batches(0, size=2, batch_size=3) == 0
    assert num_batches(10, size=2) == 1


def test_empty_batches_only_in_degenerate_set_ups():
    assert has_empty_batches(1, size=2, batch_size=8)       # fewer samples than ranks
    assert has_empty_batches(3, size=2, batch_size=1)       # batch 1, n not a multiple of size
    assert not has_empty_batches(4, size=2, batch_size=1)
    assert not has_empty_batches(3, size=2, batch_size=2)


def test_without_seed_the_order_is_kept():
    assert shard_batches(7, rank=0, size=1, batch_size=3)[0].tolist() == [0, 1, 2]
    # 6 samples, 2 ranks, batches of at most 2: two steps, chunks [0 1] [2 3] [4] [5]
    assert shard_indices(6, rank=1, size=2, batch_size=2).tolist() == [2, 3, 5]


def test_same_seed_and_epoch_give_the_same_shard():
    a = shard_indices(50, 1, 3, 4, seed=7, epoch=2)
    b = shard_indices(50, 1, 3, 4, seed=7, epoch=2)
    assert np.array_equal(a, b)


def test_epochs_reshuffle():
    assert not np.array_equal(epoch_order(200, seed=3, epoch=0), epoch_order(200, seed=3, epoch=1))


def test_seeds_differ():
    assert not np.array_equal(epoch_order(200, seed=0), epoch_order(200, seed=1))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 300), st.integers(1, 9))
def test_contiguous_shards_are_consecutive_blocks_covering_the_set(n, size):
    blocks = [contiguous_shard(n, r, size) for r in range(size)]
    assert [i for b in blocks for i in b] == list(range(n))
    assert max(map(len, blocks)) - min(map(len, blocks)) <= 1


@pytest.mark.parametrize("rank,size", [(2, 2), (-1, 2), (0, 0)])
def test_bad_rank_or_size_is_refused(rank, size):
    with pytest.raises(ConfigurationError):
        shard_indices(10, rank, size, 2)


def test_subset_has_the_requested_share_and_is_seeded():
    a = subset_indices(1000, 0.1, seed=4)
    assert len(a) == 100
    assert len(np.unique(a)) == 100
    assert np.array_equal(a, subset_indices(1000, 0.1, seed=4))
    assert not np.array_equal(a, subset_indices(1000, 0.1, seed=5))


def test_subset_keeps_at_least_one_sample():
    assert len(subset_indices(10, 0.001)) == 1


@pytest.mark.parametrize("fraction", [0, -0.5, 1.5, "half"])
def test_subset_refuses_bad_fractions(fraction):
    with pytest.raises(ConfigurationError, match="fraction"):
        subset_indices(10, fraction)
