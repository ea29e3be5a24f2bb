"""bench/asha.py: its quick mode runs, and its JSON says what it measured, consistently."""
import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench" / "asha.py"


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """The figures of one quick run, and what it printed."""
    path = tmp_path_factory.mktemp("asha") / "asha.json"
    done = subprocess.run([sys.executable, str(BENCH), "--quick",
                           "--json", str(path)], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(path.read_text()), done.stdout


@pytest.mark.processes   # the measuring tests run bench/asha.py in its own interpreter
@pytest.mark.slow
def test_quick_mode_measures_both_data_sets_for_every_seed(quick):
    figures, printed = quick
    assert set(figures["datasets"]) == {"digits", "cifar-sized"}
    assert isinstance(figures["holds"], bool)
    assert "target (ASHA's best valid" in printed
    for result in figures["datasets"].values():
        assert [run["seed"] for run in result["runs"]] == figures["seeds"]
        for run in result["runs"]:
            for name in ("full", "asha"):
                side = run[name]
                assert side["candidates"] == result["setting"]["candidates"]
                assert 0 <= side["best_valid"] <= 1 and 0 <= side["best_test"] <= 1
                assert side["wall_s"] > 0
        assert set(result["target"]) >= {"epochs_ratio", "valid_gap", "noise", "holds"}


@pytest.mark.processes
@pytest.mark.slow
def test_epoch_counts_agree_and_asha_spends_fewer(quick):
    figures, _ = quick
    for result in figures["datasets"].values():
        setting = result["setting"]
        for run in result["runs"]:
            full, asha = run["full"], run["asha"]
            # the journal's learning curves and the engine count the same epochs
            assert full["epochs"] == full["epochs_engine"]
            assert asha["epochs"] == asha["epochs_engine"]
            # the quick seeds propose no repeated architecture, so all are trained in full
            assert full["cached"] == 0 and full["failed"] == 0
            assert full["epochs"] == setting["candidates"] * setting["max_epochs"]
            assert full["reached_max"] == setting["candidates"]
            # every candidate trains to the first rung; only promoted ones go further
            assert setting["candidates"] * setting["min_epochs"] <= asha["epochs"] < full["epochs"]
            assert 1 <= asha["reached_max"] < setting["candidates"]
            assert asha["best_epochs"] == setting["max_epochs"]
        total = sum(run["asha"]["epochs"] for run in result["runs"])
        assert result["asha"]["epochs"] == total
        assert result["target"]["epochs_ratio"] == pytest.approx(total / result["full"]["epochs"])


@pytest.mark.processes
@pytest.mark.slow
def test_checkpoint_cost_is_measured_against_an_epoch(quick):
    figures, _ = quick
    for result in figures["datasets"].values():
        assert result["checkpoint"]
        for cost in result["checkpoint"]:
            assert cost["bytes"] > 0 and cost["epoch_s"] > 0
            assert cost["save_s"] > 0 and cost["load_s"] > 0
            assert cost["save_fraction"] == pytest.approx(cost["save_s"] / cost["epoch_s"])
            assert cost["load_fraction"] == pytest.approx(cost["load_s"] / cost["epoch_s"])


def bench_command_line(monkeypatch, *args):
    """The exit status of ``python bench/asha.py ARGS`` that stops at its arguments, run here:
    --help and refused arguments end in argparse, before anything is measured."""
    monkeypatch.setattr(sys, "argv", [str(BENCH), *args])
    monkeypatch.setattr(sys, "path", list(sys.path))   # the script puts the checkout first
    with pytest.raises(SystemExit) as ended:
        runpy.run_path(str(BENCH), run_name="__main__")
    return ended.value.code


@pytest.mark.timeout(60)   # an argument wrongly taken would start the measurement
def test_one_data_set_and_other_rungs_can_be_asked_for(monkeypatch, capsys):
    assert bench_command_line(monkeypatch, "--help") == 0
    said = capsys.readouterr().out
    assert "--datasets" in said and "--rungs" in said
    for wrong in (["--datasets", "cifar"], ["--rungs", "2,18"], ["--rungs", "3,2,3"],
                  ["--rungs", "1,9,1"]):
        assert bench_command_line(monkeypatch, *wrong) == 2, wrong
        assert wrong[0] in capsys.readouterr().err, wrong


@pytest.mark.processes
@pytest.mark.slow
def test_quick_mode_runs_one_data_set_with_the_rungs_asked_for(tmp_path):
    path = tmp_path / "asha.json"
    done = subprocess.run([sys.executable, str(BENCH), "--quick",
                           "--datasets", "cifar-sized", "--rungs", "1,4,2", "--seeds", "0",
                           "--json", str(path)], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    figures = json.loads(path.read_text())
    assert set(figures["datasets"]) == {"cifar-sized"}
    result = figures["datasets"]["cifar-sized"]
    assert result["rungs"] == [1, 2, 4]
    assert (result["setting"]["min_epochs"], result["setting"]["max_epochs"],
            result["setting"]["eta"]) == (1, 4, 2)
    assert result["runs"][0]["full"]["epochs"] == result["setting"]["candidates"] * 4
