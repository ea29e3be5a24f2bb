"""A weight-sharing search data-parallel under real mpirun (2 and 3 ranks, Horovod and
torch.distributed): one architecture on every rank at every step, the root's draws, a drift
caught, a resume from the root's checkpoint; and from the command line, a run under
``mpirun -np 2``, its kill with SIGKILL and resume, and a resume on other ranks refused.

The rank programs live in tests/parallel/oneshot_programs.py."""
import os
import sqlite3
import subprocess
import sys

import pytest

from nord.benchmarks.nasbench201.cells import cell_to_genome
from nord.journal import Journal
from tests.helpers.resumes import kill_in_second_epoch
from tests.mpirun import MPI_ENV, REPO, requires_mpirun, run_mpi

pytestmark = [requires_mpirun, pytest.mark.mpi, pytest.mark.timeout(600)]


def horovod_built():
    try:
        import horovod.torch  # noqa: F401
        return True
    except ImportError:
        return False


HOROVOD = pytest.param("horovod", marks=pytest.mark.skipif(
    not horovod_built(), reason="Horovod is not built (run scripts/build_horovod.sh)"))
TINY = ["--space", "nasbench201", "--dataset", "digits", "--supernet-channels", "4",
        "--supernet-cells", "1", "--threads", "1",
        "--params", '{"candidates": 4, "controller_steps": 2, "controller_aggregate": 2}']


def run_checks(backend, ranks, checks):
    run = run_mpi(["-m", "tests.parallel.oneshot_programs", backend, *checks], np=ranks,
                  timeout=400)
    assert not run.timed_out, f"timed out after {run.seconds:.0f} s:\n{run.output[-4000:]}"
    assert run.returncode == 0, run.output[-6000:]
    assert run.output.count("checks passed") == ranks, run.output[-3000:]


@pytest.mark.parametrize("backend", [HOROVOD, "torch"])
def test_two_ranks_search_one_architecture(backend):
    run_checks(backend, 2, ["one_architecture_at_every_step"])


def test_two_ranks_use_the_roots_draws_catch_a_drift_and_resume():
    # the draws, the checks and the checkpoint go through MPI itself, whatever the backend
    run_checks("torch", 2, ["draws_are_the_roots", "drift_is_caught", "resume_on_the_ranks"])


@pytest.mark.parametrize("backend", [HOROVOD, "torch"])
def test_three_ranks_search_one_architecture(backend):
    run_checks(backend, 3, ["one_architecture_at_every_step"])


def mpirun_nord(*argv, np=2, timeout=300):
    run = run_mpi(["-m", "nord", *map(str, argv)], np=np, timeout=timeout,
                  mpirun_args=["--mca", "mpi_yield_when_idle", "1"])
    assert not run.timed_out, run.output[-4000:]
    return run.returncode, run.output


def rows(journal):
    with Journal(journal) as record:
        return [{k: v for k, v in row.items() if k not in ("seconds", "recorded")}
                for row in record.search_epochs()]


def test_a_search_under_mpirun_is_one_search_journaled_by_rank_0(tmp_path):
    journal = tmp_path / "gdas.db"
    code, output = mpirun_nord("run", "--algorithm", "gdas", *TINY, "--search-epochs", "2",
                               "--epochs", "1", "--backend", "torch", "--journal", journal)
    assert code == 0, output
    assert output.count("final cell") == 1, output       # rank 0 alone speaks
    epochs = rows(journal)
    assert [row["epoch"] for row in epochs] == [1, 2]
    for row in epochs:
        assert cell_to_genome(row["cell"]) == row["genome"]
        assert all(abs(sum(ops.values()) - 1) < 1e-6 for ops in row["weights"].values())
    with Journal(journal) as record:
        meta = record.metadata()
        assert meta["status"] == "finished"
        assert meta["evaluator"]["ranks_per_network"] == 2
        assert meta["evaluator"]["backend"] == "torch"
        assert meta["execution"]["resolved_device"] == "cpu"    # where its seconds were spent
        (result,) = record.evaluations()
    assert tuple(result["genome"]) == epochs[-1]["genome"]
    assert os.path.exists(f"{journal}.supernet.pt")
    assert not os.path.exists(f"{journal}.checkpoints")
    check = run_mpi(["-m", "tests.parallel.oneshot_programs", "torch",
                     "final_cell_trained_together"], np=2, timeout=300,
                    env={"NORD_TEST_JOURNAL": str(journal)})
    assert check.returncode == 0, check.output[-4000:]
    # each rank took its shard of every batch: another launch would search otherwise
    before = journal.read_bytes()
    process = subprocess.run([sys.executable, "-m", "nord", "resume", str(journal)], cwd=REPO,
                             capture_output=True, text=True, timeout=120)
    assert process.returncode == 2, process.stdout + process.stderr
    assert ("trained its supernet on 2 ranks" in process.stderr
            and "resume it under mpirun -np 2" in process.stderr), process.stderr
    assert journal.read_bytes() == before


@pytest.mark.skipif(not horovod_built(), reason="Horovod is not built (run "
                    "scripts/build_horovod.sh)")
def test_a_resume_the_journal_refuses_is_refused_on_every_rank_in_one_line(tmp_path):
    journal = tmp_path / "rsps.db"
    code, output = mpirun_nord("run", "--algorithm", "rsps", *TINY, "--search-epochs", "1",
                               "--backend", "torch", "--journal", journal)
    assert code == 0, output
    with sqlite3.connect(journal) as connection:     # as a search stopped after its epoch
        connection.execute("UPDATE run SET status = 'interrupted'")
    connection.close()
    before = journal.read_bytes()
    # the backend is the journal's to compare (the configuration's check lets it by)
    code, output = mpirun_nord("resume", journal, "--backend", "horovod")
    assert code == 2, output
    assert "evaluator.backend" in output and "Traceback" not in output, output
    assert "MPI_Abort" not in output, output
    assert journal.read_bytes() == before


def test_a_search_on_two_ranks_killed_mid_epoch_and_resumed_is_the_search_never_killed(
        tmp_path):
    settings = ["--algorithm", "enas", *TINY, "--search-epochs", "3", "--backend", "torch"]
    whole = tmp_path / "whole.db"
    code, output = mpirun_nord("run", *settings, "--journal", whole)
    assert code == 0, output
    cut = tmp_path / "cut.db"
    command = ["mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none", "--mca",
               "mpi_yield_when_idle", "1", sys.executable, "-m", "nord", "run", *settings,
               "--journal", str(cut)]
    kill_in_second_epoch(command, cut, env=dict(os.environ, **MPI_ENV))
    assert len(rows(cut)) < 3
    code, output = mpirun_nord("resume", cut)
    assert code == 0, output
    assert rows(cut) == rows(whole)
    with Journal(cut) as a, Journal(whole) as b:
        assert [r["genome"] for r in a.evaluations()] == [r["genome"] for r in b.evaluations()]
