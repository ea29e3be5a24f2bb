"""The NAS-Bench-201 comparison runner: protocol, budget, determinism, published numbers.

The statistical tests use fixed seeds, so they are deterministic; their bands are derived
from the reference numbers and the standard error at the seed count used, so a correct
implementation passes them with any seeds (a 3-standard-error band fails about 3 times in
1000), and a wrong protocol (search signal, returned architecture, REA settings, budget)
moves the mean by more than the band.
"""
import gc
import json
import math

import numpy as np
import pytest

from nord.benchmarks import BenchmarkEvaluator, NASBench201Space, load_table
from nord.comparisons.compare import (REFERENCE_RESULTS, ComparisonResult, SeedRun,
                                     evaluated_cells, load_json, run_comparison, run_seed,
                                     run_seeds)
from nord.comparisons.anytime import SimulatedSetting
from nord.comparisons.dataset_table import DatasetTable
from nord.errors import ConfigurationError
from nord.journal import Journal
from nord.report import write_report
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.engine import run_search
from nord.search.algorithms.evolution import RegularizedEvolution
from nord.search.algorithms.random_search import RandomSearch
from nord.search.algorithms.registry import ALGORITHMS, make_algorithm, register_algorithm

SPACE = NASBench201Space()
CIFAR10 = DatasetTable.of("cifar10")


@pytest.fixture(scope="module")
def arrays():
    return load_table().arrays("cifar10")


# --- the algorithms --------------------------------------------------------------------------
def test_the_comparison_names_and_the_run_names_are_one_registry():
    assert {"random", "rea", "ga", "pygmo-sga", "pygmo-de"} <= {
        label for entry in ALGORITHMS.entries() for label in (entry.name, *entry.aliases)}
    assert ALGORITHMS.canonical("rea") == ALGORITHMS.canonical("Regularized-Evolution")


def test_every_algorithm_has_a_description():
    assert all(entry.description for entry in ALGORITHMS.entries())


def test_an_unknown_name_lists_the_valid_ones():
    with pytest.raises(ConfigurationError) as error:
        run_comparison("cifar10", ("evolution",), budget=10, seeds=1)
    assert all(name in str(error.value) for name in ("random", "rea", "ga"))


def test_rea_is_the_benchmark_papers_setting():
    algorithm = make_algorithm("rea", SPACE, seed=0, budget=100)
    assert isinstance(algorithm, RegularizedEvolution)
    assert (algorithm.population_size, algorithm.sample_size) == (10, 3)


def test_pygmo_algorithms_get_enough_generations_for_the_budget():
    pytest.importorskip("pygmo")
    algorithm = make_algorithm("pygmo-sga", SPACE, seed=0, budget=95)
    try:
        assert algorithm.evaluations >= 95
    finally:
        algorithm.close()


# --- one run through the engine ----------------------------------------------------------------
def test_a_run_evaluates_exactly_the_budget_including_repeats():
    indices = evaluated_cells(make_algorithm("rea", SPACE, seed=1), CIFAR10.evaluator, 500)
    assert len(indices) == 500
    assert len(set(indices)) < 500      # REA revisits cells; each visit costs one evaluation


def test_returned_architecture_is_the_best_search_signal_evaluated(arrays):
    indices = evaluated_cells(RandomSearch(SPACE, seed=3), CIFAR10.evaluator, 200)
    run = SeedRun.from_indices(3, indices, CIFAR10)
    best = max(indices, key=lambda i: arrays.accuracy[i])
    assert run.index == best
    assert run.accuracy == arrays.accuracy[best]
    assert run.reported_accuracy == arrays.reported_accuracy[best]
    assert indices[run.found_at - 1] == best


def test_ties_in_the_search_signal_go_to_the_first_evaluated(arrays):
    values, counts = np.unique(arrays.accuracy, return_counts=True)
    tied = values[counts >= 2].max()            # the best signal shared by two cells
    a, b = (int(i) for i in np.flatnonzero(arrays.accuracy == tied)[:2])
    worse = int(np.argmin(arrays.accuracy))
    assert SeedRun.from_indices(0, [worse, b, a, worse], CIFAR10).index == b
    assert SeedRun.from_indices(0, [worse, a, b, worse], CIFAR10).index == a


def test_the_search_signal_is_the_12_epoch_validation_accuracy(arrays):
    table = load_table()
    run = run_seed("random", "cifar10", 50, seed=0)
    assert run.accuracy == pytest.approx(table.column("cifar10_valid_12ep")[run.index] / 100)
    assert run.reported_accuracy == pytest.approx(
        table.column("cifar10_test_200ep")[run.index] / 100)


class Finishing(SearchAlgorithm):
    """Proposes three genomes, then is finished (and its ask returns None)."""

    @property
    def finished(self):
        return self.asked >= 3

    def _ask(self):
        return None if self.finished else Candidate((self.asked, 1, 2, 3, 4, 0))

    def _tell(self, candidate, result):
        pass


def test_a_run_stops_when_the_algorithm_finishes():
    assert len(evaluated_cells(Finishing(SPACE, seed=0), CIFAR10.evaluator, 10)) == 3


def test_a_comparison_run_proposes_what_a_journaled_run_proposes(tmp_path):
    """One engine: the same algorithm and seed evaluate the same cells with or without a journal."""
    budget = 60
    lean = evaluated_cells(RegularizedEvolution(SPACE, seed=5), CIFAR10.evaluator, budget)
    run_search(RegularizedEvolution(SPACE, seed=5), BenchmarkEvaluator(), budget=budget,
               journal=tmp_path / "rea.db")
    with Journal(tmp_path / "rea.db") as journal:
        journaled = [row["key"] for row in journal.evaluations()]
        indices = [row["metrics"]["index"] for row in journal.evaluations()]
    assert journaled == indices == lean


# --- run_search and reports on the benchmark --------------------------------------------------
def test_run_search_with_the_benchmark_journals_and_reports(tmp_path):
    summary = run_search(RegularizedEvolution(SPACE, seed=0), BenchmarkEvaluator("cifar10"),
                         budget=40, journal=tmp_path / "rea.db")
    assert summary.evaluations == 40
    with Journal(tmp_path / "rea.db") as journal:
        best = journal.best()
    assert best["reported_accuracy"] == summary.best_result.reported_accuracy
    page = write_report([tmp_path / "rea.db"], tmp_path / "report", best_count=1)
    text = page.read_text()
    assert f"{100 * summary.best_result.reported_accuracy:.2f} %" in text
    assert (tmp_path / "report" / "accuracy.png").stat().st_size > 0


# --- the comparison ---------------------------------------------------------------------------
@pytest.mark.processes
def test_seeds_give_the_same_results_whatever_the_number_of_processes():
    one = run_comparison("cifar10", ("random", "rea"), budget=30, seeds=6, processes=1)
    two = run_comparison("cifar10", ("random", "rea"), budget=30, seeds=6, processes=2)
    assert one.runs == two.runs


def test_runs_are_ordered_by_seed_from_base_seed():
    result = run_comparison("cifar100", "random,rea", budget=20, seeds=3, base_seed=7)
    assert [run.seed for run in result.runs["rea"]] == [7, 8, 9]
    assert result.runs["rea"][1] == run_seed("rea", "cifar100", 20, seed=8)


def test_progress_reaches_every_seed_of_every_algorithm():
    calls = []
    run_comparison("cifar10", ("random", "rea"), budget=10, seeds=4,
                   progress=lambda name, done, total: calls.append((name, done, total)))
    assert {call for call in calls if call[1] == call[2]} == {("random", 4, 4), ("rea", 4, 4)}


def test_table_shows_mean_and_std_in_percent():
    result = run_comparison("cifar10", ("random",), budget=20, seeds=5)
    values = 100 * result.values("random")
    assert f"{values.mean():.2f} ± {values.std():.2f}" in result.table()


def test_json_round_trip(tmp_path):
    result = run_comparison("imagenet16", ("random", "rea"), budget=20, seeds=3)
    path = result.save_json(tmp_path / "out" / "compare.json")
    loaded = load_json(path)
    assert loaded.runs == result.runs
    assert json.loads(path.read_text())["algorithms"]["rea"]["summary"]["seeds"] == 3
    assert loaded.table() == result.table()


@pytest.mark.processes
def test_settings_given_per_algorithm_change_its_runs_and_are_kept(tmp_path):
    settings = {"population_size": 20, "sample_size": 5}
    result = run_comparison("cifar10", ("random", "rea"), budget=40, seeds=3, processes=2,
                            params={"regularized_evolution": settings})   # an alias of rea
    assert result.params == {"rea": settings}
    assert result.runs["rea"] == [run_seed("rea", "cifar10", 40, seed, params=settings)
                                  for seed in range(3)]
    assert result.runs["rea"] != [run_seed("rea", "cifar10", 40, seed) for seed in range(3)]
    assert result.runs["random"] == run_comparison("cifar10", ("random",), budget=40,
                                                   seeds=3).runs["random"]
    assert "rea settings: population_size=20, sample_size=5" in result.table()
    loaded = load_json(result.save_json(tmp_path / "compare.json"))
    assert loaded.params == result.params and loaded.table() == result.table()


def test_settings_reach_simulated_runs_and_bohb():
    setting = SimulatedSetting.for_dataset("cifar10", time_budget=20_000, workers=2)
    result = run_comparison("cifar10", ("rea",), seeds=2, simulation=setting,
                            params={"rea": {"population_size": 4}})
    assert result.runs["rea"] == run_seeds("rea", "cifar10", None, [0, 1], simulation=setting,
                                           params={"population_size": 4})[0]
    assert result.runs["rea"] != run_seeds("rea", "cifar10", None, [0, 1],
                                           simulation=setting)[0]
    bohb = run_comparison("cifar10", ("bohb",), budget=100, seeds=2,
                          params={"bohb": {"random_fraction": 1.0}})
    assert bohb.runs["bohb"] == [run_seed("bohb", "cifar10", 100, seed,
                                          params={"random_fraction": 1.0}) for seed in (0, 1)]
    assert bohb.runs["bohb"] != run_comparison("cifar10", ("bohb",), budget=100,
                                               seeds=2).runs["bohb"]


@pytest.mark.parametrize("params,says", [
    ({"tpe": {"n_startup_trials": 5}}, "'tpe', which is not compared here"),
    ({"nope": {}}, "'nope', which is not compared here"),
    ({"rea": 3}, "must be a JSON object of its keyword arguments"),
    ({"rea": {"pop": 3}}, "--params (params=) for rea: search algorithm"),
    ({"rea": {"population_size": 0}}, "--params (params=) for rea"),
    ([("rea", {})], "maps each algorithm to its settings")])
def test_settings_of_an_algorithm_not_compared_or_not_taken_are_refused(params, says):
    with pytest.raises(ConfigurationError) as refused:
        run_comparison("cifar10", ("random", "rea"), budget=10, seeds=2, params=params)
    assert says in str(refused.value)


def test_from_dict_rejects_other_json():
    with pytest.raises(ConfigurationError):
        ComparisonResult.from_dict({"dataset": "cifar10"})


@pytest.mark.parametrize("kwargs", [{"budget": 0}, {"seeds": 0}, {"base_seed": -1},
                                    {"processes": 0}, {"algorithms": ()},
                                    {"algorithms": ("rea", "rea")}, {"algorithms": ("nope",)},
                                    {"budget": 1.5}])
def test_invalid_settings_are_refused(kwargs):
    with pytest.raises(ConfigurationError):
        run_comparison(**{"budget": 10, "seeds": 2, **kwargs})


class ShiftedRandom(RandomSearch):
    """Random search whose seeds are shifted by 20."""

    def __init__(self, space, seed=None):
        super().__init__(space, seed=None if seed is None else seed + 20)


def test_a_registered_algorithm_can_be_compared():
    register_algorithm("test-random-20", ShiftedRandom, description="seeds shifted by 20")
    try:
        result = run_comparison("cifar10", ("test-random-20",), budget=15, seeds=2, base_seed=0)
        shifted = run_comparison("cifar10", ("random",), budget=15, seeds=2, base_seed=20)
        assert (result.values("test-random-20", "index").tolist() ==
            shifted.values("random", "index").tolist())
    finally:
        ALGORITHMS.unregister("test-random-20")


class CollectorWatching(RandomSearch):
    """Random search that notes, at each ask, whether the cyclic collector is running."""

    seen = []

    def _ask(self):
        CollectorWatching.seen.append(gc.isenabled())
        return super()._ask()


@pytest.mark.parametrize("simulated", [False, True])
@pytest.mark.parametrize("enabled", [True, False])
def test_each_run_of_a_comparison_pauses_the_cyclic_collector_and_restores_it(simulated,
                                                                             enabled):
    register_algorithm("test-collector", CollectorWatching)
    CollectorWatching.seen = []
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        simulation = (SimulatedSetting.for_dataset("cifar10", 3_000, workers=2)
            if simulated else None)
        runs, _ = run_seeds("test-collector", "cifar10", 12, [0, 1], simulation=simulation)
        assert len(runs) == 2 and CollectorWatching.seen and not any(CollectorWatching.seen)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
        ALGORITHMS.unregister("test-collector")


def test_a_taken_name_is_refused():
    with pytest.raises(ConfigurationError, match="taken"):
        register_algorithm("REA", ShiftedRandom)


def test_an_alias_and_its_name_are_one_algorithm_in_a_comparison():
    with pytest.raises(ConfigurationError, match="listed twice"):
        run_comparison("cifar10", ("rea", "regularized_evolution"), budget=10, seeds=1)


# --- against the published numbers -------------------------------------------------------------
def _within_reference(result, algorithm, budget, standard_errors=3.0):
    mean, std = REFERENCE_RESULTS[("cifar10", algorithm, budget)]  # by the names given
    values = 100 * result.values(algorithm)
    # the reference mean itself comes from 500 seeds
    band = standard_errors * std * math.sqrt(1 / values.size + 1 / 500)
    return abs(values.mean() - mean), band


@pytest.mark.parametrize("algorithm", ["random", "rea"])
def test_budget_100_matches_the_reference_within_3_standard_errors(algorithm):
    result = run_comparison("cifar10", (algorithm,), budget=100, seeds=100, base_seed=1000)
    distance, band = _within_reference(result, algorithm, 100)
    assert distance <= band, f"{algorithm}: {distance:.3f} points from the reference, band {band:.3f}"


def test_rea_beats_random_search_at_budget_500():
    result = run_comparison("cifar10", ("random", "rea"), budget=500, seeds=50, base_seed=2000)
    random_mean = result.values("random").mean()
    rea_mean = result.values("rea").mean()
    # expected difference 0.31 points (fractions: 0.0031); its standard error at 50 seeds is
    # about 0.04 points, so 0.15 points is 4 standard errors below the expectation
    assert rea_mean - random_mean > 0.0015
    distance, band = _within_reference(result, "rea", 500)
    assert distance <= band


def test_long_runs_go_fewer_to_a_job_so_that_progress_comes_as_each_finishes():
    from nord.comparisons.compare import CHUNK_RESULTS, CHUNK_SEEDS, chunks
    seeds = list(range(1000))
    assert {len(job) for job in chunks(seeds, 2)} == {CHUNK_SEEDS}
    assert {len(job) for job in chunks(seeds, 2, results_per_seed=100)} == {CHUNK_SEEDS}
    assert {len(job) for job in chunks(seeds, 2, results_per_seed=CHUNK_RESULTS / 4)} == {4}
    assert {len(job) for job in chunks(seeds, 2, results_per_seed=10 ** 7)} == {1}
    assert sum(chunks(seeds, 2, results_per_seed=CHUNK_RESULTS / 3), []) == seeds


def test_progress_comes_after_each_seed_of_a_simulated_run_with_many_workers(monkeypatch):
    """Jobs hold about CHUNK_RESULTS results: made small here, each seed is a job of its own
    (8 seeds on one process would otherwise go two to a job)."""
    from nord.comparisons import compare
    from nord.comparisons.anytime import SimulatedSetting
    setting = SimulatedSetting.for_dataset("cifar10", workers=64, time_budget=1200)
    monkeypatch.setattr(compare, "CHUNK_RESULTS", setting.results_per_run("cifar10") * 1.5)
    calls = []
    run_comparison("cifar10", ("random",), seeds=8, processes=1, simulation=setting,
                   progress=lambda name, done, total: calls.append(done))
    assert calls == list(range(1, 9))


def test_the_results_a_simulated_run_is_expected_to_tell_match_a_run():
    from nord.comparisons.anytime import SimulatedSetting, run_simulated_seed
    setting = SimulatedSetting.for_dataset("cifar10", workers=8)
    run = run_simulated_seed("random", "cifar10", seed=0, setting=setting)
    assert 0.5 < run.evaluations / setting.results_per_run("cifar10") < 2
