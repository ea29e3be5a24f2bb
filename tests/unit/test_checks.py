"""check_int, the one integer check: its rule and message, then every argument checked with it
refusing a bool (``True`` is an int to Python, never a size or a seed to nord)."""
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

from nord.benchmarks.nasbench201 import NASBench201Space, cell_to_descriptor
from nord.checks import check_int
from nord.data.builtin import Digits
from nord.data.curator import TensorLoader
from nord.errors import ConfigurationError
from nord.report.summary import write_report
from nord.search.algorithms.evolution import RegularizedEvolution
from nord.search.algorithms.genetic import GeneticAlgorithm
from nord.search.algorithms.random_search import RandomSearch
from nord.search.executors.pool import ProcessPool
from nord.search.schedulers import ASHA, MedianStopping, make_scheduler
from nord.search.spaces import ConvSpace, SearchSpace


class Grid(SearchSpace):
    lower, upper = (0, 0), (4, 4)


def test_an_integer_in_bounds_comes_back_as_an_int():
    assert check_int(np.int64(3), "n", 1, 3) == 3 and type(check_int(np.int64(3), "n")) is int


@pytest.mark.parametrize("value, message", [
    (True, "n must be an integer >= 1; got True"),
    (2.0, "n must be an integer >= 1; got 2.0"),
    ("2", "n must be an integer >= 1; got '2'"),
    (0, "n must be an integer >= 1; got 0"),
])
def test_a_value_that_is_no_integer_or_too_small_is_refused_with_the_rule(value, message):
    with pytest.raises(ConfigurationError) as error:
        check_int(value, "n", 1)
    assert str(error.value) == message


def test_both_bounds_read_as_an_interval():
    with pytest.raises(ConfigurationError, match=r"n must be an integer in \[1, 3\]; got 4"):
        check_int(4, "n", 1, 3)


def test_a_rule_in_words_replaces_the_bounds_in_the_message():
    with pytest.raises(ConfigurationError, match="n must be a power of two; got 3"):
        check_int(3, "n", 4, rule="a power of two")


def loader(**settings):
    return TensorLoader(torch.zeros(8, 2), torch.zeros(8, dtype=torch.int64), **settings)


@pytest.mark.parametrize("make", [
    lambda: RegularizedEvolution(Grid(), population_size=True),
    lambda: RegularizedEvolution(Grid(), sample_size=True),
    lambda: GeneticAlgorithm(Grid(), population_size=True),
    lambda: GeneticAlgorithm(Grid(), tournament_size=True),
    lambda: GeneticAlgorithm(Grid(), elitism=True),
    lambda: RandomSearch(Grid(), generation_size=True),
    lambda: ConvSpace(input_shape=(1, 8, 8), layers=True),
    lambda: ConvSpace(input_shape=(True, 8, 8)),
    lambda: NASBench201Space(channels=True),
    lambda: cell_to_descriptor((0,) * 6, channels=True),
    lambda: make_scheduler("asha", eta=True),
    lambda: MedianStopping(min_candidates=True),
    lambda: ASHA(brackets=True),
    lambda: ProcessPool(processes=True),
    lambda: Digits(seed=True),
    lambda: loader(batch_size=True),
    lambda: loader(shuffle=True, seed=True),
    lambda: loader().set_epoch(True),
    lambda: write_report([], Path(tempfile.gettempdir()) / "never-written", best_count=True),
], ids=["rea-population", "rea-sample", "ga-population", "ga-tournament", "ga-elitism",
        "random-generation", "conv-layers", "conv-input-shape", "nb201-space-channels",
        "nb201-cell-channels", "scheduler-eta", "median-min-candidates", "asha-brackets",
        "pool-processes", "digits-seed", "loader-batch-size", "loader-seed", "loader-epoch",
        "report-best-count"])
def test_a_bool_is_refused_where_an_integer_is_expected(make):
    with pytest.raises(ConfigurationError, match="must be an integer"):
        make()
