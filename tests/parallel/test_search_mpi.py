"""The search engine under a real mpirun: rank 0 runs the algorithm, the other ranks evaluate.

Expectations come from the world size: with ``Environment(group_size=1)`` and ``-np N`` there
are N - 1 workers, world ranks 1 .. N-1.
"""
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from nord.journal import Journal
from nord.search.engine import run_search
from tests.mpirun import MPI_ENV, REPO, requires_mpirun, run_mpi
from tests.helpers.toy import (ToyEvaluator, ToyGenerational, ToySpace,
                                                journal_rows)

PROGRAM = REPO / "tests" / "parallel" / "programs" / "search_run.py"
BUDGET = 24
NO_TIMES_OR_RANKS = ("started", "ended", "train_time", "eval_time", "worker_rank", "told_before")

pytestmark = [requires_mpirun, pytest.mark.mpi, pytest.mark.timeout(300)]


def search(tmp, np, *options, budget=BUDGET, timeout=120):
    """Run search_run.py under mpirun; return (journal path, summary dict, training log lines)."""
    journal, summary, log = tmp / "run.db", tmp / "summary.json", tmp / "trained.log"
    run = run_mpi([PROGRAM, "--journal", journal, "--summary", summary, "--log", log,
                   "--budget", budget, *options], np=np, timeout=timeout)
    assert not run.timed_out, f"mpirun -np {np} hung:\n{run.output}"
    assert run.returncode == 0, run.output
    lines = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    return journal, json.loads(summary.read_text()), lines


def serial_journal(tmp, mode="sync", budget=BUDGET, **settings):
    path = tmp / f"serial-{mode}.db"
    if not path.exists():
        run_search(ToyGenerational(ToySpace(), seed=0, population=4), ToyEvaluator(),
                   budget=budget, mode=mode, journal=path, **settings)
    return path


@pytest.fixture(scope="module", params=[(2, "sync"), (2, "async"), (3, "sync"), (3, "async")],
                ids=lambda p: f"np{p[0]}-{p[1]}")
def mpi_run(request, tmp_path_factory):
    np, mode = request.param
    tmp = tmp_path_factory.mktemp(f"np{np}-{mode}")
    journal, summary, log = search(tmp, np, "--mode", mode, "--sleep", "0.02")
    return np, mode, journal, summary, log, tmp


def test_the_run_records_exactly_the_budget(mpi_run):
    np, mode, journal, summary, _, _ = mpi_run
    with Journal(journal) as j:
        assert j.count() == summary["evaluations"] == BUDGET
        assert j.metadata()["status"] == "finished"


def test_workers_are_the_ranks_other_than_0(mpi_run):
    np, _, journal, summary, _, _ = mpi_run
    with Journal(journal) as j:
        meta = j.metadata()
    assert summary["workers"] == meta["workers"] == np - 1
    assert meta["worker_ranks"] == list(range(1, np)) and meta["ranks"] == np


def test_every_worker_evaluates_and_is_recorded(mpi_run):
    np, _, journal, _, _, _ = mpi_run
    rows, _ = journal_rows(journal)
    ranks = {row["worker_rank"] for row in rows if not row["cached"] and row["descriptor"]}
    assert ranks == set(range(1, np))


def test_each_architecture_is_trained_once_on_the_rank_recorded(mpi_run):
    _, _, journal, summary, log, _ = mpi_run
    rows, _ = journal_rows(journal)
    trained = {(row["worker_rank"], row["key"]) for row in rows
               if row["descriptor"] and not row["cached"]}
    assert Counter(hash_ for _, hash_ in log).most_common(1)[0][1] == 1
    assert {(int(rank), hash_) for rank, hash_ in log} == trained
    assert summary["evaluated"] == len(trained)


def test_results_are_told_in_a_contiguous_order(mpi_run):
    _, _, journal, _, _, _ = mpi_run
    rows, candidates = journal_rows(journal)
    assert [row["sequence"] for row in rows] == list(range(BUDGET))
    assert sorted(row["candidate"] for row in rows) == [c["candidate"] for c in candidates]


@pytest.mark.parametrize("mpi_run", [(2, "sync"), (3, "sync")], indirect=True,
                         ids=["np2-sync", "np3-sync"])
def test_sync_journal_equals_the_serial_journal(mpi_run):
    _, _, journal, _, _, tmp = mpi_run
    assert journal_rows(journal, NO_TIMES_OR_RANKS) == journal_rows(serial_journal(tmp),
                                                                    NO_TIMES_OR_RANKS)


def test_random_search_sync_journal_equals_the_serial_journal(tmp_path):
    from nord.search.algorithms.random_search import RandomSearch

    journal, _, _ = search(tmp_path, 3, "--algorithm", "random", "--mode", "sync")
    run_search(RandomSearch(ToySpace(), seed=0, generation_size=4), ToyEvaluator(),
               budget=BUDGET, journal=tmp_path / "serial.db")
    assert journal_rows(journal, NO_TIMES_OR_RANKS) == journal_rows(tmp_path / "serial.db",
                                                                    NO_TIMES_OR_RANKS)


def test_one_group_of_all_ranks_evaluates_on_rank_0_with_all_ranks(tmp_path):
    journal, summary, log = search(tmp_path, 3, "--group-size", "all", "--mode", "async")
    rows, _ = journal_rows(journal)
    trained = [row["key"] for row in rows if row["descriptor"] and not row["cached"]]
    assert summary["workers"] == 1
    assert {row["worker_rank"] for row in rows if row["worker_rank"] is not None} == {0}
    per_rank = Counter(int(rank) for rank, _ in log)
    assert per_rank == {0: len(trained), 1: len(trained), 2: len(trained)}


def test_a_group_of_two_ranks_is_one_worker_led_by_its_root(tmp_path):
    journal, summary, log = search(tmp_path, 3, "--group-size", "2", "--dedicated-root")
    rows, _ = journal_rows(journal)
    trained = [row for row in rows if row["descriptor"] and not row["cached"]]
    assert summary["workers"] == 1 and {row["worker_rank"] for row in trained} == {1}
    assert Counter(int(rank) for rank, _ in log) == {1: len(trained), 2: len(trained)}
    with Journal(journal) as record:   # the groups' size, though rank 0 is in none
        execution = record.metadata()["execution"]
    assert (execution["groups"], execution["group_size"]) == (1, 2)


def test_async_overlaps_slow_evaluations(tmp_path):
    """Two workers, evaluations of 0.2 s: the busy time is close to twice the wall time."""
    _, summary, _ = search(tmp_path, 3, "--mode", "async", "--sleep", "0.2",
                           "--algorithm", "random", budget=8)
    assert summary["busy_time"] / summary["wall_time"] > 1.5


def test_prefetch_keeps_every_worker_fed_and_trains_each_architecture_once(tmp_path):
    journal, summary, log = search(tmp_path, 3, "--mode", "async", "--prefetch", "1",
                                   "--sleep", "0.02")
    rows, _ = journal_rows(journal)
    trained = [row for row in rows if row["descriptor"] and not row["cached"]]
    assert len(rows) == BUDGET and {row["worker_rank"] for row in trained} == {1, 2}
    assert len(log) == len(trained) == summary["evaluated"]


# --- kill -9 of the whole job, then --resume ----------------------------------------------------
def session_processes(session):
    """Pids of the processes in a session (mpirun puts each rank in its own process group)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == session:
                pids.append(int(entry.name))
    return pids


def kill_job(process):
    """SIGKILL mpirun and every rank at once, and wait until all are gone."""
    for pid in session_processes(process.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while session_processes(process.pid):
        assert time.monotonic() < deadline, "ranks survived SIGKILL"
        time.sleep(0.05)


def count(journal):
    try:
        with Journal(journal) as j:
            return j.count()
    except Exception:  # noqa: BLE001 - not created yet, or being created
        return 0


def start_mpi(np, *args):
    command = ["mpirun", "-np", str(np), "--oversubscribe", "--bind-to", "none", sys.executable,
               str(PROGRAM), *map(str, args)]
    return subprocess.Popen(command, env=dict(os.environ, **MPI_ENV), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def kill_after(np, journal, evaluations, *args):
    process = start_mpi(np, "--journal", journal, *args)
    deadline = time.monotonic() + 90
    try:
        while count(journal) < evaluations:
            assert process.poll() is None, process.stdout.read().decode()
            assert time.monotonic() < deadline, "no evaluations recorded in time"
            time.sleep(0.01)
    finally:
        kill_job(process)
    return count(journal)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_kill_9_of_the_mpi_job_then_resume(tmp_path, mode):
    journal = tmp_path / "killed.db"
    options = ["--mode", mode, "--budget", BUDGET, "--log", tmp_path / "trained.log"]
    killed_at = kill_after(3, journal, 5, *options, "--sleep", "0.1")
    assert killed_at < BUDGET
    before, _ = journal_rows(journal)
    run = run_mpi([PROGRAM, "--journal", journal, "--resume", *options], np=3)
    assert run.returncode == 0 and not run.timed_out, run.output
    rows, candidates = journal_rows(journal)
    assert rows[:len(before)] == before  # nothing journaled is lost or changed
    assert [row["sequence"] for row in rows] == list(range(BUDGET))
    assert sorted(row["candidate"] for row in rows) == list(range(BUDGET))
    if mode == "sync":
        assert (journal_rows(journal, NO_TIMES_OR_RANKS)
                == journal_rows(serial_journal(tmp_path), NO_TIMES_OR_RANKS))
    log = [line.split()[1] for line in (tmp_path / "trained.log").read_text().splitlines()]
    uncached = [row["key"] for row in rows if row["descriptor"] and not row["cached"]]
    assert len(log) - len(uncached) <= 2  # at most the two evaluations in flight ran twice


def test_a_refused_resume_ends_the_job_without_a_hang(tmp_path):
    search(tmp_path, 2, "--seed", "0", budget=4)
    run = run_mpi([PROGRAM, "--journal", tmp_path / "run.db", "--resume", "--seed", "1",
                   "--budget", 4], np=3, timeout=60)
    assert not run.timed_out and run.returncode != 0
    assert "its run has seed=0, this one seed=1" in run.output
    with Journal(tmp_path / "run.db") as journal:   # the refusal left the run as it was
        assert journal.state() == "finished" and journal.metadata()["resumed"] == 0


def test_groups_that_do_not_divide_the_training_ranks_are_refused_before_any_work(tmp_path):
    """-np 4 keeps rank 0 for dispatch: 3 training ranks do not split into groups of 2."""
    run = run_mpi(["-m", "nord", "run", "--evaluation", "distributed", "--group-size", "2",
                   "--mode", "async", "--budget", "2", "--epochs", "1", "--threads", "1",
                   "--journal", tmp_path / "run.db"], np=4, timeout=120)
    assert not run.timed_out and run.returncode == 2, run.output
    assert run.output.count("--group-size 2 does not divide the 3 ranks that train") == 1
    assert "mpirun -np 3 or -np 5, or use --group-size 3 with -np 4" in run.output
    assert "Traceback" not in run.output and "LocalEvaluator" not in run.output
    assert not (tmp_path / "run.db").exists()


def resumed_without_mpirun(journal):
    """``nord resume JOURNAL --budget 2`` in one process, which must be refused."""
    done = subprocess.run([sys.executable, "-m", "nord", "resume", str(journal), "--budget", "2"],
                          capture_output=True, text=True, timeout=120, cwd=str(REPO),
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 2, done.stdout + done.stderr
    return done


@pytest.mark.parametrize("data", ["missing files", "checksums not in md5sum's format"])
def test_data_that_cannot_be_read_is_refused_in_one_line_on_every_rank(tmp_path, data):
    """Every rank reads the data: when they cannot, the job ends with the refusal, said once,
    rather than with a traceback from each rank and MPI_Abort."""
    options = ["--data-root", tmp_path / "empty"]
    (tmp_path / "empty").mkdir()
    if data != "missing files":
        (tmp_path / "sums.md5").write_text("abc\n")
        options += ["--data-checksums", tmp_path / "sums.md5"]
    run = run_mpi(["-m", "nord", "run", "--evaluation", "data-parallel", "--dataset", "mnist",
                   "--budget", "1", "--threads", "1", *options,
                   "--journal", tmp_path / "run.db"], np=2, timeout=120)
    assert not run.timed_out and run.returncode == 2, run.output
    said = [line for line in run.output.splitlines() if line.startswith("nord run: ")]
    assert len(said) == 1, run.output
    assert ("line 1: expected '<md5> <file name>'" in said[0] if "checksums" in data
            else "train-images-idx3-ubyte" in said[0]), said
    assert "Traceback" not in run.output and "MPI_Abort" not in run.output


def test_a_run_of_groups_resumed_under_a_launch_that_cannot_make_them_names_one(tmp_path):
    journal = tmp_path / "run.db"
    run = run_mpi(["-m", "nord", "run", "--evaluation", "distributed", "--group-size", "2",
                   "--budget", "1", "--epochs", "1", "--threads", "1", "--space-params",
                   '{"layers": 1, "channels": [2, 4]}', "--journal", journal], np=3, timeout=180)
    assert run.returncode == 0, run.output
    before = journal.read_bytes()
    done = resumed_without_mpirun(journal)
    assert ("this run trained each network on a group of 2 ranks, and a launch of 1 rank cannot "
            "make such groups: resume it under mpirun -np 3 (rank 0 dispatches; or 1 + any "
            "multiple of 2)") in done.stderr, done.stderr
    assert "--group-size" not in done.stderr   # a resume cannot change it: no such advice
    assert journal.read_bytes() == before


def test_a_run_on_worker_processes_resumed_under_mpirun_is_told_to_resume_without(tmp_path):
    journal = tmp_path / "run.db"
    done = subprocess.run([sys.executable, "-m", "nord", "run", "--workers", "2", "--budget", "2",
                           "--epochs", "1", "--threads", "1", "--space-params",
                           '{"layers": 1, "channels": [2, 4]}', "--journal", str(journal)],
                          capture_output=True, text=True, timeout=180, cwd=str(REPO),
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stdout + done.stderr
    before = journal.read_bytes()
    run = run_mpi(["-m", "nord", "resume", journal, "--budget", "3"], np=2, timeout=120)
    assert not run.timed_out and run.returncode == 2, run.output
    assert run.output.count("its run evaluates candidates on worker processes of one machine "
                            "(--workers 2)") == 1, run.output
    assert f"resume it without mpirun: nord resume {journal}" in run.output
    assert "drop --workers" not in run.output and "Traceback" not in run.output
    assert journal.read_bytes() == before


def test_a_data_parallel_run_resumed_without_mpirun_says_how_to_launch_it(tmp_path):
    journal = tmp_path / "run.db"
    run = run_mpi(["-m", "nord", "run", "--evaluation", "data-parallel", "--budget", "1",
                   "--epochs", "1", "--threads", "1", "--space-params",
                   '{"layers": 1, "channels": [2, 4]}', "--journal", journal], np=2,
                  timeout=180)
    assert run.returncode == 0, run.output
    before = journal.read_bytes()
    done = resumed_without_mpirun(journal)
    assert ("this run trained each network on 2 ranks, and this launch (1 rank) would train "
            "each on 1" in done.stderr and "resume it under mpirun -np 2" in done.stderr)
    assert journal.read_bytes() == before


# --- one rank killed: only its candidate counts as an attempt that killed a process -------------
RANK_KILLER = """
import os, signal, sys, time
from nord.parallel.environment import Environment
from nord.search.algorithms.random_search import RandomSearch
from nord.search.engine import run_search
from nord.search.executors import MPIExecutor
from tests.helpers.toy import ToyEvaluator, ToySpace

class Killer(ToyEvaluator):
    '''Its process dies (SIGKILL, as the out-of-memory killer sends) on one architecture;
    every other evaluation takes long enough to be in flight then.'''
    def _evaluate(self, descriptor):
        conv = next(layer for layer in descriptor.layers.values() if layer.type == "conv2d")
        if [conv.params["out_channels"], conv.params["kernel_size"]] == [int(sys.argv[3]),
                                                                         int(sys.argv[4])]:
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(20)
        return super()._evaluate(descriptor)

with Environment(group_size=1) as env:
    executor = MPIExecutor(Killer(), env, space=ToySpace())
    run_search(RandomSearch(ToySpace(), seed=int(sys.argv[2])) if env.is_root else None,
               budget=6, mode="async", journal=sys.argv[1], executor=executor)
"""


def test_when_a_rank_dies_only_its_candidate_counts_as_an_attempt(tmp_path):
    """mpirun ends every rank with SIGTERM when one dies; the workers that get it alive say
    so, and their candidates' attempts are taken back: only the dead rank's candidate may
    have killed it."""
    from nord.search.algorithms.random_search import RandomSearch
    from tests.helpers.toy import ToySpace
    space, np = ToySpace(), 3
    for seed in range(50):   # the first np - 1 candidates: distinct networks that decode
        algorithm = RandomSearch(space, seed=seed)
        first = [tuple(algorithm.ask().genome) for _ in range(np - 1)]
        if len(set(first)) == len(first) and not {(6, 4), (1, 1)} & set(first):
            break
    journal = tmp_path / "killed.db"
    run = run_mpi(["-c", RANK_KILLER, journal, seed, *first[0]], np=np, timeout=120,
                  mpirun_args=["--mca", "odls_base_sigkill_timeout", "10"])
    assert not run.timed_out and run.returncode != 0, run.output
    with Journal(journal) as record:
        assert record.state() == "interrupted", run.output
        handed_out = record._query("SELECT candidate, count FROM attempts")
        assert len(handed_out) == np - 1          # both were in flight when rank 1 died
        assert record.attempts() == {0: 1}        # only the dead rank's candidate counts
