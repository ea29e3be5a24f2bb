"""Repeats of a cell, charged as the benchmark charges every query or answered free from the
run's cache: in simulated time, in BOHB's epochs, in the table and the JSON."""
import json

import numpy as np
import pytest

from nord.app.cli import main
from nord.benchmarks.nasbench201 import NASBench201Space
from nord.benchmarks.nasbench201.evaluator import signal_costs
from nord.comparisons.anytime import SimulatedSetting, simulate
from nord.comparisons.compare import ComparisonResult, run_comparison
from nord.errors import ConfigurationError
from nord.search.algorithms.registry import make_algorithm

SHORT = SimulatedSetting.for_dataset("cifar10", workers=8, mode="async", time_budget=5000)


def _rea(seed=0, setting=SHORT, repeats="charge"):
    algorithm = make_algorithm("rea", NASBench201Space(), seed=seed, budget=10 ** 6)
    return simulate(algorithm, "cifar10", seed, setting, repeats=repeats)


@pytest.fixture(scope="module")
def both():
    return _rea(repeats="charge"), _rea(repeats="free")


def test_a_charged_repeat_costs_its_training_time_and_a_free_one_nothing(both):
    charged, free = both
    costs = np.asarray(signal_costs("cifar10"))
    assert len(set(charged.indices)) < len(charged.indices)   # REA repeats cells
    assert charged.paid == pytest.approx(costs[charged.indices].sum())
    assert free.paid == pytest.approx(costs[sorted(set(free.indices))].sum())
    # the same workers' time buys fewer results when every one of them is charged
    assert len(charged.indices) < len(free.indices)
    assert charged.utilisation > 0.99 and free.utilisation > 0.99


def test_a_charged_repeat_is_told_when_its_worker_is_done():
    """With one worker, a result is told exactly when the clock has paid for it and all
    those before: told times are the running sum of the told cells' costs."""
    setting = SimulatedSetting.for_dataset("cifar10", workers=1, mode="async", time_budget=3000)
    run = _rea(seed=3, setting=setting)
    costs = np.asarray(signal_costs("cifar10"))
    assert len(set(run.indices)) < len(run.indices)
    assert run.times == pytest.approx(np.cumsum(costs[run.indices]).tolist())


def test_repeats_free_keeps_the_figures_of_before_the_choice():
    """Seeded figures of comparisons made before --repeats existed (from that version)."""
    async8 = run_comparison("cifar10", "random,rea", seeds=2, simulation=SHORT, repeats="free")
    sync2 = run_comparison("cifar100", "rea,bohb", seeds=2, repeats="free",
                           simulation=SimulatedSetting.for_dataset(
                               "cifar100", workers=2, mode="sync", time_budget=10000))
    budget = run_comparison("cifar10", "rea,bohb", seeds=2, budget=60, repeats="free")

    def figures(result):
        return {name: [(run.index, run.found_at, run.evaluations, run.unique)
                       for run in runs] for name, runs in result.runs.items()}

    assert figures(async8) == {"random": [(4141, 92, 357, 354), (2676, 160, 368, 366)],
                               "rea": [(14174, 101, 410, 312), (9930, 268, 388, 329)]}
    assert figures(sync2) == {"rea": [(699, 43, 78, 68), (10165, 30, 72, 69)],
                              "bohb": [(541, 15, 19, 19), (7383, 7, 19, 19)]}
    assert figures(budget) == {"rea": [(14174, 53, 60, 55), (10676, 48, 60, 58)],
                               "bohb": [(541, 15, 49, 18), (7383, 7, 49, 18)]}


def test_bohb_under_a_budget_trains_its_repeats_in_the_brackets_when_charged():
    """Charged, a repeat is a candidate of its bracket like any other, so every run spends
    the epochs its brackets plan (297 of 300 x 12); free, the cache answers it at no epoch."""
    from nord.comparisons.fidelities import run_bracketed_seed
    charged = run_bracketed_seed("bohb", "cifar10", 300, seed=0)
    free = run_bracketed_seed("bohb", "cifar10", 300, seed=0, repeats="free")
    assert charged.repeats == free.repeats == 1 and charged.unique == free.unique == 92
    assert (charged.evaluations, free.evaluations) == (297, 280)
    assert charged.paid != free.paid


def test_the_table_and_json_give_told_distinct_repeats_and_paid_hours(tmp_path, capsys):
    assert main(["compare", "--algorithms", "rea", "--workers", "8", "--time-budget", "5000",
                 "--seeds", "2", "--json", str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    assert "repeats charged: every result told costs its training time" in out
    header = next(line for line in out.splitlines() if line.startswith("algorithm"))
    assert header.split()[10:16] == ["told", "distinct", "repeats", "paid", "(h)", "compute"]
    saved = json.loads((tmp_path / "c.json").read_text())
    summary = saved["algorithms"]["rea"]["summary"]
    assert saved["repeats"] == "charge"
    assert summary["repeats"] == pytest.approx(summary["evaluations"] - summary["unique"])
    # 8 workers busy all the time: the hours paid are the cluster's hours
    assert summary["paid_hours"] == pytest.approx(8 * 5000 / 3600, rel=0.05)
    assert ComparisonResult.from_json((tmp_path / "c.json").read_text()).repeats == "charge"
    del saved["repeats"]   # a comparison saved before the choice existed: repeats were free
    assert ComparisonResult.from_dict(saved).repeats == "free"


def test_a_bad_repeats_rule_is_refused_with_the_choices(capsys):
    with pytest.raises(ConfigurationError, match=r"--repeats \(repeats=\) must be one of "
                                                 r"charge, free.*got 'sometimes'"):
        run_comparison("cifar10", "rea", seeds=1, budget=10, repeats="sometimes")
    assert main(["compare", "--multi-objective", "--repeats", "free", "--seeds", "1"]) == 2
    assert "--repeats free sets how a single-objective comparison" in capsys.readouterr().err
