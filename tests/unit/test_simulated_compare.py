"""Comparisons in simulated time: settings, results, anytime curves, JSON and the CLI flags."""
import json
import math

import numpy as np
import pytest

from nord.benchmarks import load_table
from nord.comparisons.compare import ComparisonResult, load_json, run_comparison
from nord.comparisons.anytime import (TIME_BUDGETS, SimulatedSetting, anytime_curves,
                                            curve_on_grid, incumbent_curve,
                                            run_simulated_seed, time_to_reach)
from nord.app.cli import main
from nord.errors import ConfigurationError

SMALL = SimulatedSetting(time_budget=3000, workers=4, mode="async")


@pytest.fixture(scope="module")
def result():
    return run_comparison("cifar10", ("random", "rea"), seeds=3, simulation=SMALL)


# --- one run -----------------------------------------------------------------------------------
def test_the_default_budgets_are_nats_benchs():
    assert TIME_BUDGETS == {"cifar10": 20_000, "cifar100": 40_000, "imagenet16": 120_000}
    assert SimulatedSetting.for_dataset("cifar100", workers=8).time_budget == 40_000


def test_a_run_stays_within_its_budget_and_returns_its_best_signal():
    run = run_simulated_seed("random", "cifar10", 0, SMALL)
    arrays = load_table().arrays("cifar10")
    assert run.simulated_time == 3000 and 0.9 < run.utilisation <= 1
    assert run.accuracy == arrays.accuracy[run.index]
    assert run.curve[-1][1] == run.reported_accuracy
    assert all(0 < time <= 3000 for time, _ in run.curve)


def test_more_workers_do_more_evaluations():
    one = run_simulated_seed("random", "cifar10", 0, SimulatedSetting(3000, workers=1))
    four = run_simulated_seed("random", "cifar10", 0, SMALL)
    assert 3 * one.evaluations < four.evaluations


def test_sync_loses_time_to_stragglers():
    sync = run_simulated_seed("random", "cifar10", 0, SimulatedSetting(20_000, 8, mode="sync"))
    free = run_simulated_seed("random", "cifar10", 0, SimulatedSetting(20_000, 8, mode="async"))
    assert sync.utilisation < 0.9 < free.utilisation


def test_data_parallel_training_divides_the_cost():
    setting = SimulatedSetting(3000, workers=4, train_workers=4, scaling_efficiency=0.5)
    assert setting.virtual_workers == 1 and setting.cost_scale == 0.5
    run = run_simulated_seed("random", "cifar10", 0, setting)
    alone = run_simulated_seed("random", "cifar10", 0, SimulatedSetting(3000, workers=1))
    assert run.evaluations >= 2 * alone.evaluations - 1


def test_seed_noise_is_reproducible_per_run_seed():
    setting = SimulatedSetting(40_000, workers=4, signal="valid200", noise="seed")
    first = run_simulated_seed("rea", "cifar100", 7, setting)
    assert first == run_simulated_seed("rea", "cifar100", 7, setting)
    assert first != run_simulated_seed("rea", "cifar100", 8, setting)


@pytest.mark.parametrize("settings, message", [
    ({"workers": 0}, "workers"), ({"mode": "steady"}, "mode"), ({"overhead": -1}, "overhead"),
    ({"workers": 6, "train_workers": 4}, "multiple"), ({"scaling_efficiency": 1.5}, "scaling"),
    ({"time_budget": 100}, "too small for one evaluation")])
def test_bad_settings_are_refused_with_the_rule(settings, message):
    values = {"time_budget": 3000, **settings}
    with pytest.raises(ConfigurationError, match=message):
        SimulatedSetting(**values).check("cifar10")


# --- curves --------------------------------------------------------------------------------
def test_the_incumbent_changes_only_on_a_strictly_better_signal():
    position, curve = incumbent_curve([0.5, 0.7, 0.7, 0.6, 0.8], [0.1, 0.2, 0.3, 0.4, 0.5],
                                      [1, 2, 3, 4, 5])
    assert position == 4 and curve == [(1, 0.1), (2, 0.2), (5, 0.5)]


def test_curves_on_a_grid_and_their_band():
    grid = np.array([0, 1, 2, 3])
    assert np.isnan(curve_on_grid([(1, 0.5)], grid)[0])
    assert curve_on_grid([(1, 0.5), (2.5, 0.7)], grid)[1:].tolist() == [0.5, 0.5, 0.7]
    curves = anytime_curves([[(1, 0.5)], [(1, 0.7), (2, 0.9)]], 2, points=3)
    assert curves["runs"] == [0, 2, 2]
    assert curves["mean"][1:] == pytest.approx([60, 70])
    assert curves["high"][2] - curves["mean"][2] == pytest.approx(20)


def test_time_to_reach():
    assert time_to_reach([(1, 0.5), (4, 0.9)], 0.8) == 4
    assert time_to_reach([(1, 0.5)], 0.8) == math.inf


# --- the comparison's result ------------------------------------------------------------------
def test_the_table_adds_evaluations_time_and_utilisation(result):
    text = result.table()
    assert "simulated seconds on 4 workers (async)" in text
    assert "sim. time (h)" in text and "utilisation" in text


def test_the_json_has_the_setting_the_summary_and_the_curves(result, tmp_path):
    data = json.loads(result.to_json())
    assert data["simulation"]["workers"] == 4 and data["budget"] is None
    entry = data["algorithms"]["rea"]
    assert {"simulated_time", "utilisation", "evaluations"} <= set(entry["summary"])
    assert set(entry["curve"]) == {"time", "mean", "low", "high", "runs"}
    assert entry["curve"]["time"][-1] == 3000
    assert entry["runs"][0]["curve"]
    again = load_json(result.save_json(tmp_path / "c.json"))
    assert again.simulation == SMALL and again.runs == result.runs


def test_a_budget_of_evaluations_has_no_simulation_fields():
    data = run_comparison("cifar10", ("random",), budget=20, seeds=2).to_dict()
    assert "simulation" not in data and "curve" not in data["algorithms"]["random"]


# --- the command ---------------------------------------------------------------------------
def test_compare_in_simulated_time_writes_table_json_and_curves(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["compare", "--workers", "4", "--time-budget", "3000", "--mode", "sync",
                 "--algorithms", "random,ga", "--seeds", "2", "--json", str(out),
                 "--report", str(tmp_path / "report")]) == 0
    text = capsys.readouterr().out
    assert "3,000 simulated seconds on 4 workers (sync)" in text
    assert load_json(out).simulation.mode == "sync"
    assert (tmp_path / "report" / "anytime.png").stat().st_size > 10_000


@pytest.mark.parametrize("flags, words", [
    (["--workers", "0"], ["--workers", "got 0"]),
    (["--mode", "sync"], ["--mode", "--workers N"]),
    (["--workers", "2", "--noise", "seed"], ["--noise seed", "--signal valid200"]),
    (["--workers", "2", "--time-budget", "100"], ["--time-budget 100", "at least 208"]),
    (["--workers", "2", "--time-budget", "0"], ["--time-budget", "20,000"]),
    (["--workers", "2", "--overhead", "-1"], ["--overhead", "-1"]),
    (["--report", "out"], ["--report", "--workers N"]),
])
def test_bad_flags_are_named_with_the_fix(flags, words, capsys):
    assert main(["compare", "--seeds", "1", *flags]) == 2
    error = capsys.readouterr().err
    assert all(word in error for word in words), error


def test_a_latency_limit_in_simulated_time_is_refused_clearly():
    with pytest.raises(ConfigurationError, match="drop --max-latency-ms or --workers"):
        run_comparison("cifar10", ("random",), seeds=1, simulation=SMALL, max_latency_ms=20,
                       latency_device="pixel3")


def test_the_table_says_which_algorithm_stopped_before_the_time_budget():
    """nsga2 converges onto repeats, which cost no simulated time under ``repeats='free'``,
    and spends its generations early; random search never stops before the budget."""
    setting = SimulatedSetting.for_dataset("cifar10", workers=4)
    compared = run_comparison("cifar10", ("nsga2", "random"), seeds=1, processes=1,
                              simulation=setting, repeats="free")
    [nsga2], [random] = compared.runs["nsga2"], compared.runs["random"]
    assert nsga2.simulated_time < setting.time_budget and random.simulated_time == pytest.approx(
        setting.time_budget)
    notes = [line for line in compared.table().splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and notes[0].startswith("note: nsga2 stopped before the time budget "
                                                   "in 1 of 1 seed(s)")


def test_the_table_says_why_a_mean_is_nan_under_a_latency_limit_few_cells_meet():
    compared = run_comparison("cifar10", ("random",), budget=20, seeds=2, processes=1,
                              max_latency_ms=0.01, latency_device="pixel3")
    assert all(run.reported_accuracy != run.reported_accuracy for run in compared.runs["random"])
    assert ("note: random returned no architecture in 2 of 2 seed(s): every cell it evaluated "
            "was slower than 0.01 ms on pixel3") in compared.table()


def test_the_seeds_column_counts_the_seeds_a_mean_is_over():
    compared = run_comparison("cifar10", ("local_search",), budget=30, seeds=5, processes=1,
                              max_latency_ms=8, latency_device="pixel3")
    returned = [run for run in compared.runs["local_search"]
                if run.reported_accuracy == run.reported_accuracy]
    assert 0 < len(returned) < 5   # a seed with no cell under 8 ms, on this table
    row = next(line for line in compared.table().splitlines() if line.startswith("local_search"))
    assert row.split()[1] == f"{len(returned)}/5"
    mean = 100 * sum(run.reported_accuracy for run in returned) / len(returned)
    assert row.split()[2] == f"{mean:.2f}"


def test_mean_evaluations_keep_their_decimal_like_distinct_ones():
    setting = SimulatedSetting.for_dataset("cifar10", workers=4, time_budget=2000)
    compared = run_comparison("cifar10", ("random",), seeds=3, processes=1, simulation=setting)
    numbers = compared.summary()["random"]
    row = next(line for line in compared.table().splitlines() if line.startswith("random"))
    evaluations, distinct = row.split()[8:10]
    assert not float(numbers["evaluations"]).is_integer()   # 3 runs of different lengths
    assert evaluations == f"{numbers['evaluations']:.1f}" and float(distinct) <= float(evaluations)


def test_a_run_that_proposes_almost_only_evaluated_cells_ends_where_its_clock_stands():
    from nord.comparisons.anytime import STALL_NEW, STALL_WINDOW, SimulatedSetting, run_simulated_seed
    setting = SimulatedSetting.for_dataset("cifar10", workers=8, mode="async")
    run = run_simulated_seed("reinforce", "cifar10", seed=0, setting=setting, repeats="free")
    # a converged policy: the clock stopped short of the budget, after a window of repeats
    assert run.simulated_time < setting.time_budget
    assert STALL_WINDOW <= run.evaluations < 10 * STALL_WINDOW
    assert run.unique < run.evaluations - STALL_WINDOW + STALL_NEW


@pytest.mark.parametrize("window, new", [pytest.param(10_000, 100, marks=pytest.mark.slow),
                                         (300, 30)])
def test_the_stall_rule_ends_a_run_at_the_first_window_with_too_few_new_cells(monkeypatch,
                                                                             window, new):
    """The rule, checked against its plain statement: the run ends at the first result after
    which fewer than ``new`` of the last ``window`` results were new cells."""
    from nord.comparisons import anytime
    from nord.search.algorithms.registry import make_algorithm
    from nord.benchmarks.nasbench201 import NASBench201Space
    monkeypatch.setattr(anytime, "STALL_WINDOW", window)
    monkeypatch.setattr(anytime, "STALL_NEW", new)
    setting = anytime.SimulatedSetting.for_dataset("cifar10", workers=8, mode="async")
    run = anytime.simulate(make_algorithm("reinforce", NASBench201Space(), seed=1,
                                          budget=10 ** 6), "cifar10", 1, setting,
                             repeats="free")
    seen, fresh = set(), []
    for key in run.indices:
        fresh.append(key not in seen)
        seen.add(key)
    ends = next(n for n in range(window, len(fresh) + 1) if sum(fresh[n - window:n]) < new)
    assert len(run.indices) == ends and run.simulated_time < setting.time_budget


@pytest.mark.parametrize("given, seconds", [("5h", 18_000), ("90m", 5_400), ("0.5d", 43_200),
                                            ("3000", 3_000)])
def test_compare_takes_a_time_budget_as_nord_run_does(given, seconds, tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["compare", "--workers", "2", "--time-budget", given, "--algorithms", "random",
                 "--seeds", "1", "--json", str(out)]) == 0, capsys.readouterr().err
    assert load_json(out).simulation.time_budget == seconds


def test_a_time_budget_nord_run_would_refuse_is_refused_in_its_words(capsys):
    assert main(["compare", "--workers", "2", "--time-budget", "5 hours", "--seeds", "1"]) == 2
    assert capsys.readouterr().err == (
        "nord compare: --time-budget takes a positive duration such as 90s, 30m, 8h or 1.5d (a "
        "plain number is seconds); got '5 hours'\n")


def _stopped_before_running(monkeypatch):
    """run_comparison replaced by one that records its arguments and runs nothing."""
    import nord.comparisons.compare as library
    given = {}

    def stop(**arguments):
        given.update(arguments)
        raise ConfigurationError("stopped before running")
    monkeypatch.setattr(library, "run_comparison", stop)
    return given


def test_a_time_budget_far_beyond_the_benchmark_is_warned_about_with_its_cost(monkeypatch,
                                                                            capsys):
    """Before any run: results a run tells, and about how long the runs take."""
    given = _stopped_before_running(monkeypatch)
    assert main(["compare", "--workers", "16", "--time-budget", "1000h", "--seeds", "30"]) == 2
    warning = capsys.readouterr().err
    per_run = given["simulation"].results_per_run("cifar10")
    assert per_run > 15_625
    assert warning.startswith(f"warning: --time-budget 1000 h on 16 workers is about "
                              f"{per_run:,.0f} results a run on cifar10, more than the 15,625 "
                              "cells")
    assert "60 runs (2 algorithms x 30 seeds) take about" in warning and "of CPU" in warning
    assert f"{per_run * 200 / 1e9:.2g} GB of memory" in warning


@pytest.mark.parametrize("flags", [["--workers", "8", "--dataset", "imagenet16"],
                                   ["--workers", "100000"]])
def test_a_usual_or_refused_time_budget_is_not_warned_about(flags, monkeypatch, capsys):
    _stopped_before_running(monkeypatch)
    assert main(["compare", *flags]) == 2
    assert "warning" not in capsys.readouterr().err


def test_compare_refuses_to_overwrite_its_json_unless_forced(tmp_path, capsys):
    out = tmp_path / "c.json"
    out.write_text("an earlier comparison")
    flags = ["compare", "--algorithms", "random", "--budget", "5", "--seeds", "1", "--json",
             str(out)]
    assert main(flags) == 2
    assert capsys.readouterr().err == (
        f"nord compare: --json {out} exists already; give a new path, or add --force to "
        "overwrite it\n")
    assert out.read_text() == "an earlier comparison"
    assert main(flags + ["--force"]) == 0
    assert load_json(out).seeds == 1


def test_the_json_holds_every_accuracy_in_percent_and_reads_back_exactly(result, tmp_path):
    data = json.loads(result.to_json())
    assert "percent" in data["units"]["accuracies"]
    for name, entry in data["algorithms"].items():
        runs = entry["runs"]
        assert not any("reported_accuracy" in run or "accuracy" in run for run in runs)
        tests = [run["reported_accuracy_percent"] for run in runs]
        assert entry["summary"]["test"]["mean"] == pytest.approx(np.mean(tests))
        assert entry["summary"]["search"]["mean"] == pytest.approx(
            np.mean([run["accuracy_percent"] for run in runs]))
        assert all(50 < value <= 100 for value in tests)
        assert all(50 < value <= 100 for run in runs for _, value in run["curve"])
        assert result.values(name).max() < 1   # the Python side keeps fractions
    again = load_json(result.save_json(tmp_path / "c.json"))
    assert again.runs == result.runs


def test_a_json_of_fractions_saved_before_reads_back(result):
    from dataclasses import asdict
    data = json.loads(result.to_json())
    for name, entry in data["algorithms"].items():
        entry["runs"] = [asdict(run) for run in result.runs[name]]
    assert ComparisonResult.from_dict(data).runs == result.runs


@pytest.mark.parametrize("simulated", [False, True])
def test_the_table_explains_every_column_under_it(simulated):
    from nord.comparisons.compare import COLUMNS
    compared = run_comparison("cifar10", ("random",), seeds=1,
                              **({"simulation": SMALL} if simulated else {"budget": 5}))
    text = compared.table()
    header = next(line for line in text.splitlines() if line.startswith("algorithm"))
    legend = text[text.index("\ncolumns:\n"):]
    for column in ("seeds", "told", "distinct", "repeats", "paid (h)", "compute (s)",
                   *(("sim. time (h)", "utilisation") if simulated else ())):
        assert column in header
        assert f"  {column} " in legend and COLUMNS[column] in legend
