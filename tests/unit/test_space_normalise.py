"""SearchSpace.normalise remembers normal genomes: a look-up must answer exactly as the full check."""
import numpy as np
import pytest

from nord.errors import SearchSpaceError
from nord.search.spaces import base as space_module
from nord.search.spaces.base import SearchSpace


class Cells(SearchSpace):
    lower = (0, 0, 0)
    upper = (4, 4, 2)


class Halves(SearchSpace):
    lower = (0, 0, 0)
    upper = (4, 4, 2)
    integer = (True, True, False)


@pytest.fixture(autouse=True)
def empty_memory(monkeypatch):
    """A memory of its own for each test: the process-wide one holds at most
    KNOWN_NORMAL_SPACES spaces, and the tests run before this one may have filled it."""
    monkeypatch.setattr(space_module, "_KNOWN_NORMAL", {})


@pytest.fixture
def remembered():
    space = Cells()
    assert space.normalise((1, 2, 0)) == (1, 2, 0)
    return space


@pytest.mark.parametrize("genome", [(1.0, 2.0, 0.0), (np.int64(1), np.int64(2), np.int64(0)),
                                    (True, 2, False), [1, 2, 0], np.array([1, 2, 0])])
def test_equal_values_of_other_types_give_the_remembered_ints(remembered, genome):
    normal = remembered.normalise(genome)
    assert normal == (1, 2, 0)
    assert all(type(value) is int for value in normal)


def test_values_that_are_not_remembered_take_the_full_check(remembered):
    assert remembered.normalise((1.4, 2, 0)) == (1, 2, 0)
    with pytest.raises(SearchSpaceError, match="outside its bounds"):
        remembered.normalise((1, 2, 3))
    with pytest.raises(SearchSpaceError, match="not finite"):
        remembered.normalise((float("nan"), 2, 0))
    with pytest.raises(SearchSpaceError, match="3 values"):
        remembered.normalise((1, 2))


def test_instances_with_the_same_bounds_share_what_they_remember(remembered):
    known = Cells()._known_normal()
    assert known is remembered._known_normal() and known[(1, 2, 0)] == (1, 2, 0)


def test_a_space_with_a_real_gene_or_list_bounds_remembers_nothing():
    assert Halves()._known_normal() is None
    assert Halves().normalise((1, 2, 1)) == (1, 2, 1.0)
    listed = Cells()
    listed.lower, listed.upper = [0, 0, 0], [4, 4, 2]
    assert listed._known_normal() is None
    assert listed.normalise((4, 4, 2)) == (4, 4, 2)
    listed.upper[2] = 1
    with pytest.raises(SearchSpaceError, match="outside its bounds"):
        listed.normalise((4, 4, 2))


def test_remembering_stops_at_the_cap(monkeypatch):
    class Small(SearchSpace):
        lower = (0, 0)
        upper = (9, 9)

    monkeypatch.setattr(space_module, "KNOWN_NORMAL_CAP", 3)
    space = Small()
    for first in range(5):
        assert space.normalise((first, 0)) == (first, 0)
    assert len(space._known_normal()) == 3


def test_mutable_dimensions_follow_the_bounds():
    space = Cells()
    space.lower, space.upper = (0, 1, 0), (4, 1, 2)
    assert space.mutable_dimensions() == (0, 2)
    space.upper = [4, 3, 0]
    assert space.mutable_dimensions() == (0, 1)
    space.upper[2] = 2
    assert space.mutable_dimensions() == (0, 1, 2)


@pytest.mark.parametrize("space", [Cells(), Halves()])
def test_sampling_draws_what_one_draw_per_dimension_draws(space):
    class Even(SearchSpace):
        lower = (1, 1, 1, 1)
        upper = (7, 7, 7, 7)

    for sampled in (space, Even()):
        fast, slow = np.random.default_rng(5), np.random.default_rng(5)
        for _ in range(50):
            genome = sampled.sample(fast)
            expected = tuple(int(slow.integers(low, high + 1)) if is_int
                             else float(slow.uniform(low, high))
                             for low, high, is_int in zip(sampled.lower, sampled.upper,
                                                          sampled.integer_mask))
            assert genome == expected
            assert [type(value) for value in genome] == [type(value) for value in expected]


def nasbench201_space():
    from nord.benchmarks.nasbench201 import NASBench201Space
    return NASBench201Space()


def conv_space():
    from nord.search.spaces import ConvSpace
    return ConvSpace(input_shape=(1, 8, 8), layers=3)


@pytest.mark.parametrize("make", [nasbench201_space, conv_space],
                         ids=["equal-bounds", "unequal-bounds"])
def test_genomes_drawn_in_blocks_are_those_drawn_one_at_a_time(make):
    space = make()
    for seed in range(20):
        one, block = np.random.default_rng(seed), np.random.default_rng(seed)
        singly = [space.sample(one) for _ in range(150)]
        blocks = (space.sample_many(block, 64) + space.sample_many(block, 64) +
            space.sample_many(block, 22))
        assert blocks == singly
        assert one.integers(0, 2**40) == block.integers(0, 2**40)   # the same state after


def test_random_search_asks_the_genomes_of_one_draw_at_a_time():
    from nord.benchmarks.nasbench201 import NASBench201Space
    from nord.search.algorithms.random_search import RandomSearch
    space = NASBench201Space()
    search, rng = RandomSearch(space, seed=5), np.random.default_rng(5)
    assert [search.ask().genome for _ in range(200)] == [space.sample(rng) for _ in range(200)]
