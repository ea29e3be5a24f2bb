"""'nord run --evaluation zero-cost' under a real mpirun: every rank scores a candidate exactly
as a serial run does (same weights, same batch of data), and the journal says which rank did.

Random search proposes independently of the results, so the serial run and an MPI run of the
same seed hold the same candidates whatever the order in which they came back."""
import pytest

from nord.app.cli import main
from nord.journal import Journal
from tests.mpirun import requires_mpirun, run_mpi

pytestmark = [requires_mpirun, pytest.mark.mpi, pytest.mark.timeout(300)]

RUN = ["-m", "nord", "run", "--evaluation", "zero-cost", "--proxy", "snip", "--algorithm",
       "random", "--budget", "8", "--threads", "1"]


def scored(journal):
    """candidate -> (genome, proxy, score, signal, worker rank), and the run's workers."""
    with Journal(journal) as record:
        rows = {row["candidate"]: (tuple(row["genome"]), row["metrics"]["proxy"],
                                   row["metrics"]["proxy_score"], row["accuracy"],
                                   row["worker_rank"])
                for row in record.evaluations()}
        return rows, record.run_record().execution["workers"]


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    journal = tmp_path_factory.mktemp("serial") / "run.db"
    assert main([*RUN[2:], "--journal", str(journal)]) == 0    # the serial run, in this process
    rows, _ = scored(journal)
    return {candidate: row[:4] for candidate, row in rows.items()}


@pytest.mark.parametrize("np,mode", [(2, "sync"), (3, "sync"), (2, "async"), (3, "async")])
def test_every_rank_scores_a_candidate_as_the_serial_run_does(tmp_path, serial, np, mode):
    journal = tmp_path / "run.db"
    run = run_mpi([*RUN, "--mode", mode, "--journal", journal], np=np, timeout=120)
    assert not run.timed_out and run.returncode == 0, run.output[-3000:]
    assert "snip score, mapped into (0, 1) (not an accuracy)" in run.output
    rows, workers = scored(journal)
    assert workers == np - 1
    assert {candidate: row[:4] for candidate, row in rows.items()} == serial
    assert {row[4] for row in rows.values()} <= set(range(1, np))
    if np == 3:   # two workers share eight candidates: both score some
        assert {row[4] for row in rows.values()} == {1, 2}
