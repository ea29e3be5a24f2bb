"""ASHA, asynchronous Hyperband and asynchronous (promotion-based) BOHB on the simulated
clock, over the table's 12- and 200-epoch fidelities."""
import pytest

from nord.app.cli import main
from nord.benchmarks.nasbench201 import BenchmarkEvaluator, NASBench201Space
from nord.comparisons.anytime import SimulatedSetting, simulate
from nord.comparisons.compare import run_comparison
from nord.comparisons.dataset_table import DatasetTable
from nord.comparisons.records import SeedRun
from nord.errors import ConfigurationError
from nord.search.algorithms.registry import make_algorithm

ASYNC8 = SimulatedSetting.for_dataset("cifar10", workers=8, mode="async", time_budget=8000)


def _run(name, seed=0, setting=ASYNC8, repeats="charge"):
    algorithm = make_algorithm(name, NASBench201Space(), seed=seed, budget=10 ** 6)
    return simulate(algorithm, "cifar10", seed, setting, repeats=repeats)


@pytest.fixture(scope="module")
def runs():
    return {name: _run(name) for name in ("asha", "hyperband", "bohb")}


@pytest.mark.parametrize("name", ["asha", "hyperband", "bohb"])
def test_async_multi_fidelity_keeps_the_workers_busy_and_promotes_to_200(runs, name):
    run = runs[name]
    assert run.utilisation >= 0.95
    assert set(run.epochs) == {12, 200}   # every leg that ended, promotions included
    assert len(run.told) < len(run.indices)   # a promoted candidate was told at 12 epochs


@pytest.mark.parametrize("name", ["asha", "bohb"])
def test_the_returned_cell_is_the_best_200_epoch_validation_accuracy_reached(runs, name):
    run = runs[name]
    valid200 = BenchmarkEvaluator("cifar10", signal="valid200")
    finalists = [index for index, epochs in zip(run.indices, run.epochs) if epochs == 200]
    best = max(finalists, key=lambda index: (valid200.query(index).accuracy,
                                             -finalists.index(index)))
    seed_run = SeedRun.from_simulated(0, run, DatasetTable.of("cifar10"))
    assert seed_run.index == best
    assert seed_run.evaluations == len(run.told) and seed_run.unique == len(set(run.told))


def test_asha_is_reproducible_by_seed():
    assert _run("asha", seed=5) == _run("asha", seed=5)


def test_async_runs_are_refused_where_the_scheduler_cannot_serve_the_mode():
    with pytest.raises(ConfigurationError, match=r"asha runs only under the asha scheduler, "
                                                 r"which the table's fidelities serve asynchronously only; "
                                                 r"got --mode sync \(mode='sync'\)"):
        run_comparison("cifar10", "asha", seeds=1, simulation=SimulatedSetting.for_dataset(
            "cifar10", workers=2, mode="sync"))
    with pytest.raises(ConfigurationError, match=r"a budget of evaluations \(--budget, budget=\) "
                                                 r"runs the table's fidelities synchronously"):
        run_comparison("cifar10", "asha", seeds=1, budget=100)
    with pytest.raises(ConfigurationError, match=r"got --signal valid200 \(signal='valid200'\)"):
        run_comparison("cifar10", "bohb", seeds=1, simulation=SimulatedSetting.for_dataset(
            "cifar10", workers=2, signal="valid200"))


def test_nord_compare_runs_asha_and_bohb_asynchronously(capsys):
    assert main(["compare", "--algorithms", "asha,bohb", "--workers", "8", "--mode", "async",
                 "--time-budget", "6000", "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.startswith(("asha ", "bohb "))}
    assert set(rows) == {"asha", "bohb"}
    assert all(float(row[-2]) >= 95 for row in rows.values())   # utilisation, %
    assert "note: asha ran under ASHA over the table's 12- and 200-epoch" in out
    assert "note: bohb ran under Hyperband promoted asynchronously" in out
