"""``kill -9`` of a real run in the middle of its candidates' training, then ``nord resume``: no
epoch is trained twice and the results are those of the run that was never killed.

The kill comes from a training callback written as a user would (tests/helpers/killing.py),
which logs every finished epoch: the log of the killed and resumed run must hold exactly as
many epochs as the log of the uninterrupted one, and the journals must agree (times, ranks
and ``epochs_resumed`` aside). Serial, local worker processes, MPI ranks asynchronously, a
data-parallel group, and ASHA killed in the middle of a promoted leg (a SLURM job cancelled
mid-candidate and resubmitted: tests/parallel/test_slurm.py, beside the other SLURM tests).
"""
import os
import subprocess

import pytest

from nord.data import Digits
from nord.errors import DiskFullError
from nord.evaluators.local import LocalEvaluator
from nord.journal import Journal
from nord.search.algorithms.random_search import RandomSearch
from nord.search.engine import run_search
from nord.search.schedulers import make_scheduler
from nord.search.spaces import make_space
from tests.helpers.disks import tmpfs
from tests.helpers.resumes import logged, results, run, search
from tests.mpirun import requires_mpirun

pytestmark = [pytest.mark.processes, pytest.mark.timeout(300)]

def uninterrupted(folder, extra, mpi=0):
    """The journal and epoch log of the run never killed."""
    whole, log = folder / "whole.db", folder / "whole.log"
    code, output = run(search(whole, *extra), log, mpi=mpi)
    assert code == 0, output
    return whole, log


@pytest.fixture(scope="module")
def serial_whole(tmp_path_factory):
    """The uninterrupted serial run of three candidates, read (never written) by two tests."""
    return uninterrupted(tmp_path_factory.mktemp("serial"), ["--budget", "3"])


def killed_and_resumed(tmp_path, extra, kill_after, mpi=0, wait=0, whole=None):
    """Kill the run, resume it, and compare it with the uninterrupted one (``whole``, its
    journal and log, when already run with the same ``extra``)."""
    whole, whole_log = whole or uninterrupted(tmp_path, extra, mpi=mpi)
    cut = tmp_path / "cut.db"
    code, output = run(search(cut, *extra), tmp_path / "cut.log", mpi=mpi,
                       kill_after=kill_after, wait=wait)
    assert code != 0, output                                   # it was killed
    checkpoints = os.listdir(f"{cut}.checkpoints")
    assert checkpoints, "nothing was checkpointed before the kill"
    code, output = run(["resume", str(cut)], tmp_path / "cut.log", mpi=mpi)
    assert code == 0, output
    assert "went on from checkpoints" in output
    assert logged(tmp_path / "cut.log") == logged(whole_log)   # none twice
    expected, actual = results(whole), results(cut)
    assert actual[:2] == expected[:2]
    assert actual[2] and not expected[2]
    assert not os.path.exists(f"{cut}.checkpoints")
    return actual[2]


def test_a_serial_run_killed_mid_candidate_goes_on_from_its_last_epoch(tmp_path, serial_whole):
    resumed = killed_and_resumed(tmp_path, ["--budget", "3"], kill_after=6, whole=serial_whole)
    assert resumed == {1: 2}            # the second candidate, killed in its third epoch


def test_a_run_on_two_worker_processes_killed_mid_training(tmp_path):
    killed_and_resumed(tmp_path, ["--budget", "4", "--workers", "2", "--algorithm", "random"],
                       kill_after=5, wait=30)


@requires_mpirun
@pytest.mark.mpi
def test_an_asynchronous_run_on_mpi_ranks_killed_mid_training(tmp_path):
    killed_and_resumed(tmp_path, ["--budget", "4", "--mode", "async", "--algorithm", "random"],
                       kill_after=5, mpi=3, wait=30)


def horovod_built():
    try:
        import horovod.torch  # noqa: F401
        return True
    except ImportError:
        return False


BACKENDS = ["torch", pytest.param("horovod", marks=pytest.mark.skipif(
    not horovod_built(), reason="Horovod is not built (run scripts/build_horovod.sh)"))]


@requires_mpirun
@pytest.mark.mpi
@pytest.mark.parametrize("optimizer", [[], ["--optimizer", "sgd", "--momentum", "0.9"]],
                         ids=["adam", "sgd-momentum"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_data_parallel_group_killed_mid_training(tmp_path, backend, optimizer):
    """The default optimizer (Adam) and SGD with momentum keep state across epochs that a
    resumed group must take back from the checkpoint on every rank, under either backend."""
    # One candidate trains at a time, on both ranks of the group, in step: the rank that
    # kills finds the other mid-epoch already, so it kills at once (waiting, it held the
    # other rank in the step's all-reduce for the whole wait)
    resumed = killed_and_resumed(
        tmp_path, ["--budget", "2", "--evaluation", "distributed", "--group-size", "2",
                   "--backend", backend, *optimizer], kill_after=10, mpi=3, wait=0)
    assert resumed == {1: 1}   # both ranks of the group logged epochs 1-4 of candidate 0, then 1


def test_asha_killed_in_the_middle_of_a_promoted_leg(tmp_path):
    extra = ["--budget", "6", "--scheduler", "asha", "--mode", "async", "--min-epochs", "1",
             "--max-epochs", "4", "--eta", "2"]
    whole = uninterrupted(tmp_path, extra)    # where to kill is read from the uninterrupted run
    with Journal(whole[0]) as record:
        legs = record.legs()
    leg = next(leg for leg in legs
               if leg["start_epochs"] > 0 and leg["target_epochs"] - leg["start_epochs"] >= 2)
    before = sum(other["target_epochs"] - other["start_epochs"]
                 for other in legs if other["leg"] < leg["leg"])
    resumed = killed_and_resumed(tmp_path, extra, kill_after=before + 1, whole=whole)
    assert resumed == {leg["candidate"]: 1}


@pytest.mark.parametrize("every", [0, 1])
def test_a_disk_that_fills_under_asha_stops_the_run_and_fails_no_candidate(tmp_path, every):
    """The checkpoints of paused candidates fill a small disk: the run stops, saying the disk
    is full, and no candidate is recorded as failed for it; once there is room, the resumed
    run ends as if the disk had never filled."""
    digits = Digits(seed=0)

    def asha(journal, resume=False):
        return run_search(
            RandomSearch(make_space("conv", input_shape=tuple(digits.input_shape), layers=2),
                         seed=4),
            LocalEvaluator(curator=digits, epochs=4, batch_size=64, seed=0, data_fraction=0.3),
            budget=10, mode="async", journal=journal, resume=resume, checkpoint_every=every,
            scheduler=make_scheduler("asha", min_epochs=1, max_epochs=4, eta=2))

    asha(tmp_path / "whole.db")
    with tmpfs(tmp_path / "disk", "size=1m") as disk:
        # the journal's files (its reserve of 256 KiB, the log, the shared memory) take about
        # 420 KB of the megabyte: the filler leaves room for some results, not all
        (disk / "filler").write_bytes(b"0" * 548_000)
        with pytest.raises(DiskFullError):
            asha(disk / "r.db")
        with Journal(disk / "r.db") as journal:
            assert journal.state() == "failed"
            assert journal.metadata()["status_detail"].startswith("disk full")
            assert all(row["status"] == "ok" for row in journal.evaluations())
            assert all(leg["status"] in ("ok", None) for leg in journal.legs())
            told = len(journal.evaluations())
        assert 0 < told < 10
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        asha(disk / "r.db", resume=True)
        expected, actual = results(tmp_path / "whole.db"), results(disk / "r.db")
    assert actual[:2] == expected[:2]


def test_a_candidate_killed_twice_is_given_up_only_when_it_made_no_progress(tmp_path,
                                                                           serial_whole):
    """Two kills of the run in one candidate's training: with an epoch finished between them
    (a preempted job) it goes on; killed twice in the same epoch (the out-of-memory killer)
    it is recorded as failed, saying why, and the run goes on."""
    whole, cut = serial_whole[0], tmp_path / "cut.db"
    for kill_after in (6, 7):        # candidate 1 in its third epoch, then in its fourth
        assert run(search(cut, "--budget", "3"), tmp_path / "cut.log",
                   kill_after=kill_after)[0] != 0
        os.remove(tmp_path / "cut.log")
        with open(tmp_path / "cut.log", "w") as log:   # the epochs the journal kept
            with Journal(cut) as record:
                log.writelines(f"0 {row['epoch']} x\n" for row in record.epochs())
    code, output = run(["resume", str(cut)], tmp_path / "cut.log")
    assert code == 0, output
    assert results(cut)[:2] == results(whole)[:2]

    stuck = tmp_path / "stuck.db"
    for _ in range(2):               # killed in the third epoch of candidate 1, twice
        code, _ = run(search(stuck, "--budget", "3") if not stuck.exists()
                      else ["resume", str(stuck)], tmp_path / "stuck.log", kill_after=6)
        assert code != 0
        with open(tmp_path / "stuck.log", "w") as log:
            with Journal(stuck) as record:
                log.writelines(f"0 {row['epoch']} x\n" for row in record.epochs())
    code, output = run(["resume", str(stuck)], tmp_path / "stuck.log")
    assert code == 0, output
    rows = results(stuck)[0]
    assert rows[1]["status"] == "failed"
    assert "the run stopped 2 times in a row while evaluating it, each time before it finished an epoch" in rows[1]["error"]
    assert rows[0]["status"] == rows[2]["status"] == "ok"
