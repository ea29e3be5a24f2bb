"""The baselines of NAS papers (REINFORCE, TPE, BANANAS, BOHB) through nord run's two ways of
training candidates side by side, with real training: local worker processes (--workers 2)
and MPI ranks (mpirun -np 3: two workers). A sync run tells each batch of two in the order it
was asked, so both give the same candidates and results (times and workers aside); an async
run on workers spends its budget and trains every candidate once."""
import pytest

from nord.app.cli import main
from nord.journal import Journal
from tests.helpers.toy import journal_rows
from tests.mpirun import requires_mpirun, run_mpi

pytestmark = [requires_mpirun, pytest.mark.mpi, pytest.mark.slow, pytest.mark.timeout(600)]

SMALL = ["--space-params", '{"layers": 1, "channels": [2, 4]}', "--epochs", "1",
         "--threads", "1", "--device", "cpu", "--seed", "5"]
ALGORITHMS = {
    "reinforce": ["--budget", "8"],
    "tpe": ["--budget", "8", "--params", '{"n_startup_trials": 4}'],
    "bananas": ["--budget", "8", "--params", '{"num_init": 4, "k": 2}'],
    "bohb": ["--budget", "10", "--scheduler", "hyperband", "--min-epochs", "1",
             "--max-epochs", "3", "--params", '{"min_points_in_model": 3}'],
}
NOT_COMPARED = ("started", "ended", "train_time", "eval_time", "worker_rank", "told_before")


def nord_run(journal, algorithm, mode, workers=2):
    """``nord run --workers N`` from this process: the workers are processes of their own,
    as under the command."""
    assert main(["run", "--algorithm", algorithm, "--mode", mode, "--workers", str(workers),
                 *SMALL, *ALGORITHMS[algorithm], "--journal", str(journal)]) == 0


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_a_sync_run_on_worker_processes_equals_the_run_on_mpi_ranks(tmp_path, algorithm):
    local, ranks = tmp_path / "workers.db", tmp_path / "mpi.db"
    nord_run(local, algorithm, "sync")
    run = run_mpi(["-m", "nord", "run", "--algorithm", algorithm, "--mode", "sync", *SMALL,
                   *ALGORITHMS[algorithm], "--journal", ranks], np=3, timeout=300)
    assert not run.timed_out and run.returncode == 0, run.output[-3000:]
    rows = journal_rows(local, NOT_COMPARED)
    assert rows == journal_rows(ranks, NOT_COMPARED)
    evaluations, _ = rows
    assert evaluations and all(row["status"] == "ok" for row in evaluations)
    with Journal(local) as journal:
        assert journal.metadata()["execution"]["workers"] == 2


@pytest.mark.parametrize("algorithm", ["reinforce", "tpe", "bananas"])
def test_an_async_run_on_worker_processes_trains_each_candidate_once(tmp_path, algorithm):
    journal = tmp_path / "run.db"
    nord_run(journal, algorithm, "async")
    with Journal(journal) as record:
        rows = record.evaluations()
        assert record.state() == "finished" and len(rows) == 8
        trained = [row["key"] for row in rows if not row["cached"]]
        assert len(trained) == len(set(trained))
        assert {row["worker_rank"] for row in rows if not row["cached"]} <= {1, 2}   # workers 1, 2
