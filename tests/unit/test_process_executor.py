"""ProcessExecutor: worker processes on this machine, through the same engine and journal.

Workers are real spawned processes with toy evaluators (no data, no training); a killed
worker is killed by a real SIGKILL, and running out of GPU memory is the real
``torch.cuda.OutOfMemoryError`` raised on the CPU."""
import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nord.errors import ConfigurationError, NordError
from nord.journal import Journal
from nord.search import ProcessExecutor, RandomSearch, run_search
from nord.search.executors import SerialExecutor
from tests.helpers.toy import ToyEvaluator, ToyGenerational, ToySpace, journal_rows, toy_accuracy
from tests.helpers.workers import Crowded, SelfKilling, make_toy

pytestmark = pytest.mark.slow   # each test starts worker processes (a second or two)

REPO = Path(__file__).resolve().parents[2]
DROP = ("started", "ended", "train_time", "eval_time", "worker_rank", "told_before")


def toy_executor(workers=2, **settings):
    return ProcessExecutor(functools.partial(make_toy, **settings), workers=workers)


@pytest.mark.processes
def test_a_sync_run_on_workers_journals_what_a_serial_run_journals(tmp_path):
    """Same candidates, same results, told in the same order: only times and workers differ."""
    serial, workers = tmp_path / "serial.db", tmp_path / "workers.db"
    run_search(ToyGenerational(ToySpace(), seed=5), executor=SerialExecutor(ToyEvaluator()),
               budget=12, journal=str(serial), mode="sync", batch_size=2)
    summary = run_search(ToyGenerational(ToySpace(), seed=5), executor=toy_executor(sleep=0.02),
                         budget=12, journal=str(workers), mode="sync")
    assert summary.workers == 2 and summary.evaluations == 12
    expected, got = journal_rows(serial, DROP), journal_rows(workers, DROP)
    assert got == expected
    with Journal(workers) as journal:
        ranks = {row["worker_rank"] for row in journal.evaluations() if row["cached_from"] is None
                 and row["status"] == "ok"}
        execution = journal.metadata()["execution"]
    assert ranks == {1, 2}   # both workers evaluated
    assert execution["executor"] == "processes" and execution["sharing"] == "cpu"


@pytest.mark.processes
def test_an_async_run_evaluates_each_architecture_once_with_its_own_result(tmp_path):
    log = tmp_path / "log"
    summary = run_search(RandomSearch(ToySpace(), seed=1),
                         executor=toy_executor(sleep=0.05, log=None), budget=15,
                         journal=str(tmp_path / "run.db"), mode="async")
    assert summary.evaluations == 15 and summary.workers == 2
    with Journal(tmp_path / "run.db") as journal:
        rows = journal.evaluations()
    evaluated = [row for row in rows if row["cached_from"] is None and row["status"] == "ok"]
    keys = [row["key"] for row in evaluated]
    assert len(keys) == len(set(keys))
    for row in evaluated:
        width, kernel = row["genome"]
        assert row["accuracy"] == pytest.approx(toy_accuracy(width, kernel))
    assert not log.exists()


@pytest.mark.processes
def test_finished_epochs_reach_the_journal_from_the_workers(tmp_path):
    run_search(RandomSearch(ToySpace(), seed=2), executor=toy_executor(curves=3), budget=4,
               journal=str(tmp_path / "run.db"), mode="async")
    with Journal(tmp_path / "run.db") as journal:
        trained = [row for row in journal.evaluations()
                   if row["cached_from"] is None and row["status"] == "ok"]
        for row in trained:
            epochs = journal.epochs(row["candidate"])
            assert [epoch["epoch"] for epoch in epochs] == [1, 2, 3]
            assert {epoch["worker_rank"] for epoch in epochs} == {row["worker_rank"]}


@pytest.mark.processes
def test_a_scheduler_trains_in_legs_on_workers_as_it_does_in_this_process(tmp_path):
    """Successive halving pauses candidates in checkpoints and resumes the best on any worker:
    the journal's results and legs are those of a serial run."""
    from nord.search.schedulers import make_scheduler
    from tests.helpers.toy import ToyCurves
    journals = {}
    for name, executor in (("serial", SerialExecutor(ToyCurves(max_epochs=9))),
                           ("workers", toy_executor(curves=9))):
        journals[name] = tmp_path / f"{name}.db"
        run_search(RandomSearch(ToySpace(), seed=4), executor=executor, budget=9, mode="sync",
                   journal=str(journals[name]),
                   scheduler=make_scheduler("sha", min_epochs=1, max_epochs=9, eta=3))
    assert journal_rows(journals["workers"], DROP) == journal_rows(journals["serial"], DROP)
    legs = {}
    for name, path in journals.items():
        with Journal(path) as journal:
            legs[name] = [(leg["candidate"], leg["start_epochs"], leg["target_epochs"],
                           leg["accuracy"], leg["status"]) for leg in journal.legs()]
    assert legs["workers"] == legs["serial"] and any(leg[1] > 0 for leg in legs["serial"])


@pytest.mark.processes
def test_a_killed_worker_is_a_failed_result_and_is_replaced(tmp_path):
    """Genome (2, 2) makes its worker SIGKILL itself: that candidate fails with the reason,
    a new worker takes over, and every other candidate is evaluated as usual."""
    log = tmp_path / "log"
    executor = ProcessExecutor(functools.partial(SelfKilling, sleep=0.3, log=str(log)),
                               workers=2)

    class Proposals(RandomSearch):   # (2, 2) among the first, then others
        genomes = [(3, 1), (2, 2), (4, 2), (5, 3), (2, 1), (3, 3), (4, 4), (5, 2), (6, 1),
                   (3, 2), (4, 1), (5, 4)]

        def _ask(self):
            from nord.search import Candidate
            return Candidate(self.genomes[self.asked % len(self.genomes)])

    summary = run_search(Proposals(ToySpace(), seed=0), executor=executor, budget=12,
                         journal=str(tmp_path / "run.db"), mode="async")
    assert summary.evaluations == 12 and summary.failed == 1 and executor.replaced == 1
    with Journal(tmp_path / "run.db") as journal:
        rows = {tuple(row["genome"]): row for row in journal.evaluations()}
    assert rows[(2, 2)]["status"] == "failed"
    assert "killed by SIGKILL" in rows[(2, 2)]["error"]
    assert "out-of-memory killer" in rows[(2, 2)]["error"]
    assert all(row["status"] == "ok" for genome, row in rows.items() if genome != (2, 2))
    pids = {line.split()[0] for line in log.read_text().splitlines()}
    assert len(pids) == 3      # two workers, and the one that replaced the killed one
    assert len(log.read_text().splitlines()) == 12   # nothing evaluated twice


@pytest.mark.processes
def test_out_of_memory_beside_others_is_retried_alone_once(tmp_path):
    """Every evaluation that overlaps another raises OutOfMemoryError: each is tried once
    more alone and then succeeds; (3, 3), which runs out of memory even alone, fails after
    its second try."""
    folder, log = tmp_path / "running", tmp_path / "log"
    folder.mkdir()
    executor = ProcessExecutor(functools.partial(Crowded, folder=str(folder), sleep=0.3,
                                                 log=str(log)), workers=2)

    class Proposals(RandomSearch):
        genomes = [(2, 1), (3, 3), (4, 2), (5, 1)]

        def _ask(self):
            from nord.search import Candidate
            return Candidate(self.genomes[self.asked])

    run_search(Proposals(ToySpace(), seed=0), executor=executor, budget=4,
               journal=str(tmp_path / "run.db"), mode="sync")
    with Journal(tmp_path / "run.db") as journal:
        rows = {tuple(row["genome"]): row for row in journal.evaluations()}
    assert rows[(3, 3)]["status"] == "failed"
    assert rows[(3, 3)]["error"].startswith("OutOfMemoryError")
    assert all(rows[genome]["status"] == "ok" for genome in [(2, 1), (4, 2), (5, 1)])
    tries = [tuple(map(int, line.split()[1:])) for line in log.read_text().splitlines()]
    assert tries.count((3, 3)) == 2      # once beside another, once alone: never a third time
    assert all(tries.count(genome) <= 2 for genome in set(tries))


@pytest.mark.processes
def test_a_worker_that_cannot_build_its_evaluator_stops_the_run_before_it_starts(tmp_path):
    # int("7", device=...) raises TypeError in the worker, as a bad evaluator setting would
    executor = ProcessExecutor(functools.partial(int, "7"), workers=1)
    with pytest.raises(NordError, match="could not build its evaluator: TypeError"):
        run_search(RandomSearch(ToySpace(), seed=0), executor=executor, budget=2,
                   journal=str(tmp_path / "run.db"))
    assert not executor._pool


@pytest.mark.processes
def test_candidates_run_side_by_side_only_where_their_estimates_fit(tmp_path):
    """A device offering 10 units, each candidate needing its width: 6 and 5 never overlap,
    smaller ones do; every candidate is evaluated."""
    def width(descriptor):
        return next(layer.params["out_channels"] for layer in descriptor.layers.values()
                    if layer.type == "conv2d")

    executor = ProcessExecutor(functools.partial(make_toy, sleep=0.4), workers=2,
                               memory_need=width, device_memory={"cpu": 10}, headroom=0.0)

    class Proposals(RandomSearch):
        genomes = [(6, 1), (5, 1), (2, 1), (3, 2), (5, 2), (4, 1)]

        def _ask(self):
            from nord.search import Candidate
            return Candidate(self.genomes[self.asked])

    run_search(Proposals(ToySpace(), seed=0), executor=executor, budget=6,
               journal=str(tmp_path / "run.db"), mode="async")
    with Journal(tmp_path / "run.db") as journal:
        rows = [(row["genome"][0], row["started"], row["ended"]) for row in journal.evaluations()]
    assert len(rows) == 6
    overlapping = [(a[0], b[0]) for i, a in enumerate(rows) for b in rows[i + 1:]
                   if a[1] < b[2] and b[1] < a[2]]
    assert overlapping                                   # some pairs did share the device
    assert all(a + b <= 10 for a, b in overlapping), overlapping


def test_device_memory_that_is_not_a_positive_number_of_bytes_is_refused():
    with pytest.raises(ConfigurationError, match="device_memory of cuda:0"):
        ProcessExecutor(make_toy, workers=1, device_memory={"cuda:0": 0})


def test_an_evaluator_factory_that_does_not_pickle_is_refused_at_once():
    with pytest.raises(ConfigurationError, match="must pickle.*not a lambda"):
        ProcessExecutor(lambda device: ToyEvaluator(), workers=2)


def test_devices_must_name_one_device_per_worker():
    with pytest.raises(ConfigurationError, match="one device per worker"):
        ProcessExecutor(make_toy, workers=2, devices=["cpu"])


def journal_count(path):
    try:
        with Journal(path) as journal:
            return journal.count()
    except Exception:  # noqa: BLE001 - being created
        return 0


def children_of(pid):
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.processes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_killing_the_run_leaves_no_workers_and_resume_loses_nothing(tmp_path):
    """SIGKILL the engine's process mid-run: its workers die with it, and a resume ends with
    the journal an uninterrupted run writes (nothing lost, nothing evaluated twice)."""
    whole, cut = tmp_path / "whole.db", tmp_path / "cut.db"
    program = [sys.executable, "-m", "tests.helpers.worker_program"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([*program, str(whole)], check=True, cwd=REPO, env=env, timeout=120)
    # each evaluation takes 3 s: workers that only noticed the end of their pipe once their
    # evaluation ended would outlive the run by seconds
    process = subprocess.Popen([*program, str(cut), "--sleep", "3"], cwd=REPO, env=env)
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None and time.monotonic() < deadline
            if cut.exists() and journal_count(cut) >= 2:
                break
            time.sleep(0.05)
        workers = [pid for pid in children_of(process.pid)
                   if "resource_tracker" not in open(f"/proc/{pid}/cmdline").read()]
        assert len(workers) >= 2
        time.sleep(0.5)   # the next two evaluations have started
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        deadline = time.monotonic() + 1.5
        while any(alive(pid) for pid in workers):
            assert time.monotonic() < deadline, "workers outlived the run"
            time.sleep(0.05)
    finally:
        if process.poll() is None:
            process.kill()
    with Journal(cut) as journal:
        assert journal.count() < 12
    subprocess.run([*program, str(cut), "--resume"], check=True, cwd=REPO, env=env,
                   timeout=120)
    assert journal_rows(cut, DROP) == journal_rows(whole, DROP)


@pytest.mark.processes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigterm_ends_the_run_cleanly_and_stops_its_workers_at_once(tmp_path):
    """SIGTERM (scancel, a plain kill) mid-evaluation: the journal says interrupted, and the
    workers, busy for seconds more, are stopped rather than waited for."""
    journal = tmp_path / "run.db"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    process = subprocess.Popen([sys.executable, "-m", "tests.helpers.worker_program",
                                str(journal), "--sleep", "5"], cwd=REPO, env=env)
    try:
        deadline = time.monotonic() + 90
        while asked(journal) < 2:    # the first two candidates are handed out
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(0.5)
        workers = children_of(process.pid)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=4) != 0       # well before the 5 s evaluations end
    finally:
        if process.poll() is None:
            process.kill()
    workers = [pid for pid in workers if "resource_tracker" not in cmdline(pid)]
    deadline = time.monotonic() + 1.0
    while [pid for pid in workers if alive(pid)]:
        assert time.monotonic() < deadline, [(pid, cmdline(pid)) for pid in workers]
        time.sleep(0.05)
    with Journal(journal) as record:
        assert record.state() == "interrupted"


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline") as text:
            return text.read()
    except OSError:
        return ""


def asked(path):
    try:
        with Journal(path) as journal:
            return len(journal.candidates())
    except Exception:  # noqa: BLE001 - being created
        return 0
