"""Multi-objective NAS-Bench-201: the exact Pareto front, hypervolumes, nsga2 and its report;
latency objectives and the latency limit."""
import importlib.util
import itertools
import json

import numpy as np
import pytest

from nord.benchmarks import load_table
from nord.comparisons.compare import run_comparison
from nord.comparisons.hardware import LatencyEvaluator, LatencyLimit, Objective, parse_objectives
from nord.comparisons.multiobjective import (EXACT_HYPERVOLUME, REFERENCE_POINT, exact_front,
                                            front_of, make_nsga2, normalised_hypervolume,
                                            reference_point_of, run_nsga2, run_nsga2_seed,
                                            write_nsga2_report)
from nord.benchmarks.nasbench201 import DEVICES, BenchmarkEvaluator, NASBench201Space, load_costs
from nord.errors import BenchmarkError, ConfigurationError


@pytest.fixture(scope="module")
def arrays():
    return load_table().arrays("cifar10")


def dominated_by_another(arrays, index, accuracy):
    """Whether some cell has no more parameters and no less accuracy, and is better in one."""
    p, a = arrays.n_params, accuracy
    better = (p <= p[index]) & (a >= a[index]) & ((p < p[index]) | (a > a[index]))
    return bool(better.any())


# --- the exact front ---------------------------------------------------------------------------
def test_exact_front_scores_the_documented_hypervolume():
    front = exact_front("cifar10")
    assert len(front) == 14
    assert round(front.hypervolume, 5) == EXACT_HYPERVOLUME["cifar10"] == 0.89318


def test_exact_front_cells_are_not_dominated(arrays):
    front = exact_front("cifar10")
    assert not any(dominated_by_another(arrays, i, arrays.reported_accuracy)
                   for i in front.indices)


def test_every_cell_off_the_front_is_dominated_or_equal_to_a_front_point(arrays):
    front = set(exact_front("cifar10").indices)
    off = [i for i in range(len(arrays.n_params)) if i not in front]
    points = np.array(exact_front("cifar10").points)
    p, a = arrays.n_params[off], arrays.reported_accuracy[off]
    covered = ((points[:, 0][None, :] <= p[:, None]) & (points[:, 1][None, :] >= a[:, None]))
    assert covered.any(axis=1).all()


def test_exact_front_points_increase_in_both_objectives():
    points = exact_front("cifar10").points
    assert all(p1 < p2 and a1 < a2 for (p1, a1), (p2, a2) in zip(points, points[1:]))


def test_exact_front_of_the_search_signal_is_a_different_front():
    front = exact_front("cifar10", accuracy="search")
    assert (len(front), round(front.hypervolume, 4)) == (17, 0.7969)


@pytest.mark.parametrize("dataset", ["cifar100", "imagenet16"])
def test_exact_fronts_exist_for_every_dataset(dataset):
    front = exact_front(dataset)
    assert 0 < front.hypervolume < 1 and len(front) > 5


def test_the_issues_0_8935_is_not_reached_by_the_tried_definitions(arrays):
    """No accuracy column, parameter unit or box tried gives the issue's 13 cells / 0.8935.

    This documents the search (see the module docstring): if a later table makes one of them
    hit the figure, this test says which, and the definition should change to it."""
    table = load_table()
    params = table.column("params_mb")
    hits = []
    for column, scale, reference in itertools.product(
            [c for c in table.columns if c.endswith("ep")], (1e6, 2 ** 20), (1.6e6, 1.6 * 2 ** 20)):
        accuracy = table.column(column) / 100
        order = np.lexsort((-accuracy, params))          # by parameters, best accuracy first
        running = np.maximum.accumulate(accuracy[order])
        keep = order[np.r_[True, running[1:] > running[:-1]]]
        front = list(zip(params[keep] * scale, accuracy[keep]))
        for box in ((0.0, 1.0), (params.min() * scale, 1.0), (0.0, accuracy.max())):
            area = normalised_hypervolume(front, (reference, 0.0))
            value = area * reference * 1.0 / ((reference - box[0]) * box[1])
            if round(value, 4) == 0.8935:
                hits.append((column, scale, reference, box))
    assert hits == []


# --- hypervolume and the front of a run -----------------------------------------------------------
def test_normalised_hypervolume_by_hand():
    points = [(0.4e6, 0.9), (0.8e6, 0.95), (1.0e6, 0.5)]   # the last is dominated
    expected = ((0.8e6 - 0.4e6) * 0.9 + (1.6e6 - 0.8e6) * 0.95) / (1.6e6 * 1.0)
    assert normalised_hypervolume(points) == pytest.approx(expected)
    assert REFERENCE_POINT == (1.6e6, 0.0)


def test_front_of_a_run_is_chosen_by_the_search_signal(arrays):
    indices = list(np.random.default_rng(0).integers(0, len(arrays.n_params), size=300))
    front = front_of(indices, "cifar10")
    assert not any(
        (arrays.n_params[j] <= arrays.n_params[i]) and (arrays.accuracy[j] >= arrays.accuracy[i])
        and (arrays.n_params[j] < arrays.n_params[i] or arrays.accuracy[j] > arrays.accuracy[i])
        for i in front.indices for j in indices)
    assert front.points == [(float(arrays.n_params[i]), float(arrays.reported_accuracy[i]))
                            for i in front.indices]


def test_no_set_of_cells_beats_the_exact_front(arrays):
    indices = np.random.default_rng(1).integers(0, len(arrays.n_params), size=3000)
    assert front_of(indices, "cifar10").hypervolume <= exact_front("cifar10").hypervolume


def test_unknown_accuracy_is_refused():
    with pytest.raises(ConfigurationError, match="reported"):
        exact_front("cifar10", accuracy="test")


# --- nsga2 ---------------------------------------------------------------------------------------
needs_pygmo = pytest.mark.skipif(importlib.util.find_spec("pygmo") is None,
                                 reason="pygmo is not installed")


@needs_pygmo
def test_nsga2_approaches_the_exact_front():
    result = run_nsga2("cifar10", budget=300, seeds=4)
    assert result.hypervolumes.shape == (4,)
    assert (result.hypervolumes <= result.exact.hypervolume).all()
    # random cells score about 0.86 at this budget; nsga2 gets within 1 % of the exact front
    assert result.mean > 0.99 * result.exact.hypervolume
    assert all(run.evaluations == 300 for run in result.runs)


@pytest.mark.processes
@needs_pygmo
def test_nsga2_seeds_do_not_depend_on_the_number_of_processes():
    one = run_nsga2("cifar10", budget=100, seeds=4, processes=1)
    two = run_nsga2("cifar10", budget=100, seeds=4, processes=2)
    assert [r.indices for r in one.runs] == [r.indices for r in two.runs]


@needs_pygmo
def test_nsga2_table_and_json(tmp_path):
    result = run_nsga2("cifar10", budget=60, seeds=2, base_seed=3)
    assert f"{result.mean:.4f} ± {result.std:.4f}" in result.table()
    data = json.loads(result.save_json(tmp_path / "mo.json").read_text())
    assert [run["seed"] for run in data["runs"]] == [3, 4]
    assert len(data["exact"]["indices"]) == 14


@needs_pygmo
@pytest.mark.parametrize("population_size, reason", [(4, "at least 5 individuals"),
                                                     (8.0, "positive integer")])
def test_an_nsga2_population_pygmo_refuses_is_refused_before_the_run(population_size, reason):
    with pytest.raises(ConfigurationError, match=reason):
        make_nsga2(NASBench201Space(), 0, 100, population_size)


@pytest.mark.slow
@needs_pygmo
def test_the_journaled_report_run_matches_the_comparison_run(tmp_path):
    report = write_nsga2_report(tmp_path / "report", "cifar10", budget=120, seed=2)
    lean = run_nsga2_seed("cifar10", budget=120, seed=2)
    assert report.hypervolume == pytest.approx(lean.hypervolume)
    assert report.front.indices == lean.indices
    assert report.figure.stat().st_size > 10_000
    page = report.page.read_text()
    assert "Pareto" in page and (tmp_path / "report" / "pareto-nsga2-cifar10-seed2.png").exists()


# --- hardware-aware objectives -------------------------------------------------------------------
def test_objectives_are_parsed_with_the_cost_second():
    assert parse_objectives("accuracy,parameters") == Objective("parameters")
    latency = parse_objectives("accuracy, latency:pixel3")
    assert (latency.device, latency.metric, latency.name) == ("pixel3", "latency_ms",
                                                              "latency:pixel3")


@pytest.mark.parametrize("text, error, message", [
    ("accuracy,latency:pixel9", BenchmarkError, "pixel3, raspi4, eyeriss"),
    ("accuracy,energy", ConfigurationError, "accuracy,latency:DEVICE"),
    ("latency:pixel3,accuracy", ConfigurationError, "accuracy first"),
    ("accuracy", ConfigurationError, "two"),
])
def test_bad_objectives_name_the_valid_ones(text, error, message):
    with pytest.raises(error, match=message):
        parse_objectives(text)


@pytest.mark.parametrize("device", DEVICES)
def test_a_latency_reference_point_lies_beyond_every_cell(device):
    reference, accuracy = reference_point_of(f"accuracy,latency:{device}")
    slowest = load_costs().latency(device).max()
    assert accuracy == 0.0 and 1.05 * slowest <= reference < 1.2 * slowest


def test_the_pixel3_reference_point_is_the_documented_one():
    assert reference_point_of("accuracy,latency:pixel3") == (39.0, 0.0)
    assert reference_point_of("accuracy,parameters") == REFERENCE_POINT


def test_the_exact_latency_front_is_the_undominated_cells(arrays):
    latency = load_costs().latency("pixel3")
    front = exact_front("cifar10", objectives="accuracy,latency:pixel3")
    accuracy = arrays.reported_accuracy
    for index in front.indices:
        better = (latency <= latency[index]) & (accuracy >= accuracy[index]) & (
            (latency < latency[index]) | (accuracy > accuracy[index]))
        assert not better.any()
    assert [p for p, _ in front.points] == [latency[i] for i in front.indices]
    assert 0 < front.hypervolume < 1
    off_front = np.setdiff1d(np.arange(len(latency)), front.indices)[::97]
    assert all(front_of(list(front.indices) + [int(i)], "cifar10",
                        objectives="accuracy,latency:pixel3").hypervolume
               <= front.hypervolume + 1e-12 for i in off_front)


def test_a_cell_over_the_latency_limit_is_a_failure_that_says_why():
    evaluator = LatencyEvaluator(BenchmarkEvaluator("cifar10"), limit=LatencyLimit("pixel3", 10))
    slow = evaluator.evaluate_genome((3, 3, 4, 1, 3, 1))       # 17.2 ms on a Pixel 3
    assert not slow.ok and "17.2381 ms on pixel3 exceeds the limit of 10 ms" in slow.error
    assert slow.metrics["latency_ms"] == pytest.approx(17.2381)
    fast = evaluator.evaluate_genome((1, 1, 1, 1, 1, 1))
    assert fast.ok and fast.metrics["latency_ms"] <= 10


def test_the_exact_front_under_a_limit_holds_only_cells_within_it():
    limit = LatencyLimit("pixel3", 8.0)
    front = exact_front("cifar10", objectives="accuracy,latency:pixel3", limit=limit)
    assert front.indices and max(p for p, _ in front.points) <= 8.0
    assert front.hypervolume < exact_front("cifar10",
                                           objectives="accuracy,latency:pixel3").hypervolume


def test_a_limit_no_cell_meets_is_refused():
    with pytest.raises(ConfigurationError, match="fastest takes 0.0033 ms"):
        LatencyLimit("pixel3", 1e-4).check_reachable()


def test_latency_on_imagenet_is_refused():
    with pytest.raises(BenchmarkError, match="cifar10 or cifar100"):
        exact_front("imagenet16", objectives="accuracy,latency:fpga")


def test_every_algorithm_returns_a_cell_within_the_latency_limit():
    result = run_comparison("cifar10", "random,rea,local_search", budget=60, seeds=3,
                            max_latency_ms=6.0, latency_device="pixel3")
    latency = load_costs().latency("pixel3")
    for name in result.algorithms:
        assert all(latency[run.index] <= 6.0 for run in result.runs[name])
    assert json.loads(result.to_json())["max_latency"] == {"device": "pixel3",
                                                           "max_latency_ms": 6.0}


def test_a_latency_limit_without_a_device_is_refused():
    with pytest.raises(ConfigurationError, match="--latency-device"):
        run_comparison("cifar10", "random", budget=10, seeds=1, max_latency_ms=6.0)


@needs_pygmo
def test_nsga2_on_latency_names_its_objectives_and_approaches_the_exact_front(tmp_path):
    result = run_nsga2("cifar10", budget=300, seeds=2, objectives="accuracy,latency:pixel3")
    latency = load_costs().latency("pixel3")
    assert (result.hypervolumes <= result.exact.hypervolume).all()
    assert result.mean > 0.97 * result.exact.hypervolume
    for run in result.runs:
        assert [p for p, _ in run.points] == [latency[i] for i in run.indices]
    data = json.loads(result.save_json(tmp_path / "mo.json").read_text())
    assert data["objectives"] == ["accuracy", "latency:pixel3"]
    assert data["reference_point"] == [39.0, 0.0]
    assert "latency on pixel3" in result.table()


@needs_pygmo
def test_nsga2_under_a_limit_returns_fronts_within_it():
    result = run_nsga2("cifar10", budget=100, seeds=1, objectives="accuracy,latency:pixel3",
                       max_latency_ms=8.0)
    assert max(p for p, _ in result.runs[0].points) <= 8.0
    assert "slower than 8 ms on pixel3" in result.table()


def test_the_cli_refuses_an_unknown_device_and_lists_the_devices(capsys):
    from nord.app.cli import main
    assert main(["compare", "--multi-objective", "--objectives", "accuracy,latency:phone"]) == 2
    assert "pixel3, raspi4" in capsys.readouterr().err
