"""Schedulers under a real mpirun: legs of training handed to any worker, paused candidates
resumed on another rank from the checkpoint folder, a killed job resumed from its journal and
its checkpoints."""
from collections import Counter

import pytest

from nord.journal import Journal
from tests.helpers.toy import journal_rows
from tests.mpirun import requires_mpirun, run_mpi
from tests.parallel.test_search_mpi import PROGRAM, count, kill_after, search

pytestmark = [requires_mpirun, pytest.mark.mpi, pytest.mark.timeout(300)]
BUDGET = 18
RANKS_AND_TIMES = ("started", "ended", "train_time", "eval_time", "worker_rank", "told_before")


def trained_epochs(log_lines):
    """(hash, epoch) -> how often it was trained, from ToyCurves' log."""
    return Counter((line[1], line[2]) for line in log_lines)


def leg_plan(journal):
    """The legs as a multiset of (candidate, start, target, decision): what was trained and
    decided, whatever the order workers finished in."""
    with Journal(journal) as record:
        return Counter((leg["candidate"], leg["start_epochs"], leg["target_epochs"],
                        leg["decision"]) for leg in record.legs())


@pytest.mark.parametrize("np", [2, 3])
def test_asha_over_mpi_trains_every_epoch_once_and_tells_every_candidate(tmp_path, np):
    journal, summary, log = search(tmp_path, np, "--mode", "async", "--scheduler", "asha",
                                   "--algorithm", "random", "--sleep", "0.01", budget=BUDGET)
    assert summary["evaluations"] == BUDGET
    with Journal(journal) as record:
        legs, rows = record.legs(), record.evaluations()
        assert record.metadata()["status"] == "finished"
    assert all(leg["ended_event"] is not None for leg in legs)
    assert {leg["worker_rank"] for leg in legs} == set(range(1, np))
    promoted = [leg for leg in legs if leg["start_epochs"] > 0]
    assert promoted                                   # somebody resumed from a checkpoint
    # no epoch of an architecture was trained twice: every promotion resumed where it paused
    assert max(trained_epochs(log).values()) == 1
    assert sum(trained_epochs(log).values()) == summary["epochs_trained"]
    assert sorted(row["candidate"] for row in rows) == list(range(BUDGET))
    assert not (tmp_path / "run.db.checkpoints").exists()


def test_a_promotion_can_resume_on_another_rank(tmp_path):
    """With two workers and many promotions, some candidate's legs ran on both ranks: the
    checkpoint folder, not the rank's memory, carries a paused candidate."""
    journal, _, log = search(tmp_path, 3, "--mode", "async", "--scheduler", "asha",
                             "--algorithm", "random", "--sleep", "0.02", budget=27)
    with Journal(journal) as record:
        ranks = {}
        for leg in record.legs():
            ranks.setdefault(leg["candidate"], set()).add(leg["worker_rank"])
    assert any(len(found) > 1 for found in ranks.values())
    assert max(trained_epochs(log).values()) == 1


@pytest.mark.parametrize("np", [2, 3])
@pytest.mark.parametrize("scheduler, algorithm", [("sha", "random"), ("hyperband", "random"),
                                                  ("hyperband", "bohb")])
def test_sync_schedulers_over_mpi_give_the_serial_run(tmp_path, np, scheduler, algorithm):
    """In sync mode the results are told in candidate order once a batch is decided, so the
    journal is the serial one, whichever worker finished first (BOHB's proposals included,
    which depend on every rung's results)."""
    options = ["--mode", "sync", "--scheduler", scheduler, "--algorithm", algorithm]
    if scheduler == "sha":
        options += ["--batch-size", "6"]      # hyperband's batches are its brackets
    journal, summary, _ = search(tmp_path, np, *options, "--sleep", "0.01", budget=BUDGET)
    serial = tmp_path / "serial.db"
    done = run_mpi([PROGRAM, "--journal", serial, "--budget", BUDGET, "--serial", *options],
                   np=1, timeout=120)
    assert done.returncode == 0, done.output
    assert journal_rows(journal, RANKS_AND_TIMES) == journal_rows(serial, RANKS_AND_TIMES)
    assert leg_plan(journal) == leg_plan(serial)
    assert summary["evaluations"] == BUDGET


def test_kill_9_of_an_asha_job_then_resume_from_its_checkpoints(tmp_path):
    journal, log = tmp_path / "killed.db", tmp_path / "trained.log"
    options = ["--mode", "async", "--scheduler", "asha", "--algorithm", "random",
               "--budget", BUDGET, "--log", log]
    killed_at = kill_after(3, journal, 6, *options, "--sleep", "0.05")
    assert killed_at < BUDGET
    with Journal(journal) as record:
        paused = [leg for leg in record.legs() if leg["decision"] == "pause"]
    assert paused and (tmp_path / "killed.db.checkpoints").is_dir()
    run = run_mpi([PROGRAM, "--journal", journal, "--resume", *options], np=3, timeout=120)
    assert run.returncode == 0 and not run.timed_out, run.output
    with Journal(journal) as record:
        legs, rows = record.legs(), record.evaluations()
        assert record.metadata()["status"] == "finished"
    assert count(journal) == BUDGET == len({row["candidate"] for row in rows})
    assert all(leg["ended_event"] is not None for leg in legs)
    # at most the legs in flight at the kill (one per worker) trained some epochs again
    again = sum(n - 1 for n in trained_epochs(
        [line.split() for line in log.read_text().splitlines()]).values())
    assert again <= 2 * 9
    assert any(leg["start_epochs"] > 0 for leg in legs)
    assert not (tmp_path / "killed.db.checkpoints").exists()
