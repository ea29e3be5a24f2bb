"""Per-step series and stopping decisions do not depend on where candidates train: under
``mpirun -np 3`` (async) and with ``--workers 2`` they equal the serial run's exactly; a
data-parallel group of 2 decides each stop once, at the root, and records each series once.

A data-parallel group trains on shards of each batch (other steps, other losses), so there
each stop is checked against the figures the group itself recorded, and the series' names
against the serial run's."""
import os
import subprocess
import sys

import pytest

from nord.app.cli import main
from nord.journal import Journal
from tests.mpirun import MPI_ENV, REPO, requires_mpirun, run_mpi

pytestmark = [requires_mpirun, pytest.mark.mpi, pytest.mark.timeout(300)]

PLUGIN = '''
from nord.evaluators.callbacks import TrainingCallback, register_callback


@register_callback("step_loss")
class StepLoss(TrainingCallback):
    name = "step_loss"
    every_steps = 2

    def on_step(self, state):
        return {"step_loss": state.metrics["loss"], "step_loss/lr": state.metrics["lr"]}
'''


def run_flags(folder, journal):
    plugin = folder / "watching_parity_plugin.py"
    plugin.write_text(PLUGIN)
    return ["run", "--plugin", str(plugin), "--callbacks", "step_loss,dead_relu",
            "--stop-when", "epoch >= 2", "--stop-when", "valid_accuracy < 0.3",
            "--algorithm", "random", "--budget", "4", "--epochs", "3", "--threads", "1",
            "--mode", "async", "--journal", str(journal)]


def watched(journal):
    """The series rows and each candidate's stop (rule, epoch, step), by candidate."""
    with Journal(journal) as record:
        series = sorted(tuple(row.values()) for row in record.series())
        stops = {row["candidate"]: (row["epochs"], row["metrics"].get("stopped_by"))
                 for row in record.evaluations()}
    return series, stops


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    folder = tmp_path_factory.mktemp("serial")
    assert main(run_flags(folder, folder / "run.db")) == 0
    series, stops = watched(folder / "run.db")
    rules = {stop["rule"] for _, stop in stops.values()}
    assert rules == {"epoch >= 2", "valid_accuracy < 0.3"}   # both decide some candidates
    return series, stops


@pytest.mark.parametrize("how", ["mpirun -np 3", "--workers 2", "data-parallel group of 2"])
def test_series_and_stops_equal_the_serial_runs(tmp_path, serial, how):
    args = run_flags(tmp_path, tmp_path / "run.db")
    if how == "--workers 2":
        done = subprocess.run([sys.executable, "-m", "nord", *args, "--workers", "2"], cwd=REPO,
                              env=dict(os.environ, **MPI_ENV), capture_output=True, text=True,
                              timeout=200)
        assert done.returncode == 0, done.stderr[-3000:]
    else:
        extra = (["--evaluation", "data-parallel", "--backend", "torch"]
                 if how.startswith("data") else [])
        result = run_mpi(["-m", "nord", *args, *extra], np=2 if extra else 3, timeout=200)
        assert not result.timed_out and result.returncode == 0, result.output[-3000:]
    series, stops = watched(tmp_path / "run.db")
    if how != "data-parallel group of 2":
        assert (series, stops) == serial
        return
    with Journal(tmp_path / "run.db") as record:
        first = {row["candidate"]: row["valid_accuracy"] for row in record.epochs()
                 if row["epoch"] == 1}
    for number, (epochs, stop) in stops.items():   # each rule decided where it held
        low = first[number] < 0.3
        assert (epochs, stop["rule"]) == ((1, "valid_accuracy < 0.3") if low
                                          else (2, "epoch >= 2")), number
    keys = [row[:5] for row in series]            # candidate, leg, epoch, step, name
    assert len(keys) == len(set(keys))            # the root's, once
    assert {row[4] for row in series} == {row[4] for row in serial[0]}
