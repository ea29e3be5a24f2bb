"""The search engine in one process: budget, cache, failures, tell order, progress, statuses,
resume, kill -9."""
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from nord.errors import ConfigurationError, DiskFullError, JournalError, NordError, RunInterrupted
from nord.evaluators.base import Evaluator
from nord.evaluators.result import EvaluationResult
from nord.journal import Journal
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.engine import run_search
from nord.search.executors import Completion, Executor, run_task
from nord.search.algorithms.random_search import RandomSearch
from tests.helpers.journals import journaled_evaluations
from tests.helpers.toy import Interrupting, ToyEvaluator, ToyGenerational, ToySpace, journal_rows

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "tests" / "parallel" / "programs" / "search_run.py"


class Scripted(SearchAlgorithm):
    """Proposes the given genomes in order, then is finished."""

    name = "scripted"

    def __init__(self, space, genomes):
        super().__init__(space, seed=0)
        self.genomes = list(genomes)

    @property
    def finished(self):
        return self.asked >= len(self.genomes)

    def _ask(self):
        return Candidate(self.genomes[self.asked])

    def _tell(self, candidate, result):
        pass


class ReverseExecutor(Executor):
    """Several workers that always finish the task submitted last first."""

    def __init__(self, evaluator, workers):
        self.evaluator = evaluator
        self.workers = workers
        self.tasks = []
        self.finished_order = []

    @property
    def n_workers(self):
        return self.workers

    @property
    def in_flight(self):
        return len(self.tasks)

    def submit(self, task):
        self.tasks.append(task)

    def wait(self) -> Completion:
        task = self.tasks.pop()
        self.finished_order.append(task.number)
        return run_task(self.evaluator, task, 1 + len(self.tasks))


def toy(seed=0, population=4):
    return ToyGenerational(ToySpace(), seed=seed, population=population)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_budget_is_the_number_of_evaluations(tmp_path, mode):
    summary = run_search(toy(), ToyEvaluator(), budget=17, journal=tmp_path / "run.db", mode=mode)
    with Journal(tmp_path / "run.db") as journal:
        assert journal.count() == summary.evaluations == 17
        assert journal.metadata()["status"] == "finished"


def test_every_told_result_is_recorded_once_in_order(tmp_path):
    run_search(toy(), ToyEvaluator(), budget=12, journal=tmp_path / "run.db")
    rows, _ = journal_rows(tmp_path / "run.db")
    assert [(r["sequence"], r["candidate"]) for r in rows] == [(i, i) for i in range(12)]


def test_an_architecture_is_trained_once(tmp_path):
    evaluator = ToyEvaluator()
    summary = run_search(toy(), evaluator, budget=40, journal=tmp_path / "run.db")
    rows, _ = journal_rows(tmp_path / "run.db")
    trained = [r["key"] for r in rows if not r["cached"] and r["descriptor"]]
    assert summary.cached > 0
    assert evaluator.calls == len(trained) == len(set(trained)) == summary.evaluated


def test_a_cached_result_repeats_the_earlier_one(tmp_path):
    run_search(Scripted(ToySpace(), [(3, 2), (4, 4), (3, 2)]), ToyEvaluator(), budget=3,
               journal=tmp_path / "run.db")
    first, _, repeat = journal_rows(tmp_path / "run.db")[0]
    assert repeat["cached"] and repeat["cached_from"] == 0 and repeat["worker_rank"] is None
    assert (repeat["accuracy"], repeat["n_params"]) == (first["accuracy"], first["n_params"])


def test_a_repeat_inside_a_batch_waits_for_the_first(tmp_path):
    evaluator = ToyEvaluator()
    run_search(Scripted(ToySpace(), [(3, 2), (3, 2)]), evaluator, budget=2, batch_size=2,
               journal=tmp_path / "run.db")
    rows, _ = journal_rows(tmp_path / "run.db")
    assert evaluator.calls == 1 and [r["cached"] for r in rows] == [False, True]


class HashlessEvaluator(Evaluator):
    """Returns results without the descriptor's hash."""

    def __init__(self):
        self.calls = 0

    def evaluate_task(self, task):
        self.calls += 1
        return EvaluationResult(accuracy=0.5)

    def _evaluate(self, descriptor):
        raise AssertionError("not called")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_engine_keys_its_cache_by_the_spaces_identity(tmp_path, mode):
    # repeats of one architecture, in one batch and later: none may wait forever
    evaluator = HashlessEvaluator()
    summary = run_search(Scripted(ToySpace(), [(3, 2), (3, 2), (4, 4), (3, 2), (4, 4), (3, 2)]),
                         evaluator, budget=6, batch_size=3, mode=mode,
                         journal=tmp_path / "run.db")
    rows, _ = journal_rows(tmp_path / "run.db")
    assert summary.evaluations == len(rows) == 6
    assert evaluator.calls == 2 and summary.cached == 4
    assert all(row["key"] for row in rows)


def test_a_genome_that_does_not_decode_is_a_recorded_failure(tmp_path):
    summary = run_search(Scripted(ToySpace(), [(6, 4), (2, 2)]), ToyEvaluator(), budget=2,
                         journal=tmp_path / "run.db")
    failed, ok = journal_rows(tmp_path / "run.db")[0]
    assert failed["status"] == "failed" and "toy rule" in failed["error"]
    assert failed["descriptor"] is None and failed["worker_rank"] is None
    assert ok["status"] == "ok" and summary.failed == 1


def test_a_failing_evaluation_is_recorded_with_its_worker(tmp_path):
    run_search(Scripted(ToySpace(), [(1, 1)]), ToyEvaluator(), budget=1, journal=tmp_path / "run.db")
    row = journal_rows(tmp_path / "run.db")[0][0]
    assert row["status"] == "failed" and "toy failure" in row["error"] and row["worker_rank"] == 0


def test_cached_and_failed_results_count_towards_the_budget(tmp_path):
    genomes = [(6, 4), (2, 2), (2, 2), (1, 1), (3, 3)]
    summary = run_search(Scripted(ToySpace(), genomes), ToyEvaluator(), budget=4)
    assert (summary.evaluations, summary.evaluated, summary.cached, summary.failed) == (4, 2, 1, 2)


def test_a_finished_algorithm_ends_the_search_before_the_budget(tmp_path):
    summary = run_search(Scripted(ToySpace(), [(2, 2), (3, 3)]), ToyEvaluator(), budget=10)
    assert summary.evaluations == 2


def test_sync_tells_in_candidate_order_whichever_worker_finishes_first(tmp_path):
    run_search(toy(), ToyEvaluator(), budget=24, batch_size=3, journal=tmp_path / "serial.db")
    executor = ReverseExecutor(ToyEvaluator(), workers=3)
    run_search(toy(), executor=executor, budget=24, journal=tmp_path / "reversed.db")
    assert executor.finished_order[:2] == [2, 1]  # the test is meaningful: out of order
    drop = ("started", "ended", "train_time", "eval_time", "worker_rank")
    assert journal_rows(tmp_path / "serial.db", drop) == journal_rows(tmp_path / "reversed.db", drop)


def test_sync_journal_does_not_depend_on_the_number_of_workers_for_generational_algorithms(tmp_path):
    run_search(toy(), ToyEvaluator(), budget=20, journal=tmp_path / "one.db")
    run_search(toy(), executor=ReverseExecutor(ToyEvaluator(), 3), budget=20,
               journal=tmp_path / "three.db")
    drop = ("started", "ended", "train_time", "eval_time", "worker_rank", "told_before")
    assert journal_rows(tmp_path / "one.db", drop) == journal_rows(tmp_path / "three.db", drop)


def test_async_keeps_every_worker_busy(tmp_path):
    executor = ReverseExecutor(ToyEvaluator(), workers=3)
    summary = run_search(RandomSearch(ToySpace(), seed=0), executor=executor, budget=15,
                         mode="async", journal=tmp_path / "run.db")
    rows, _ = journal_rows(tmp_path / "run.db")
    assert summary.evaluations == 15
    assert {r["worker_rank"] for r in rows if r["worker_rank"] is not None} == {1, 2, 3}


def test_progress_is_reported_after_each_result(tmp_path):
    seen = []
    best = []
    run_search(toy(), ToyEvaluator(), budget=9,
               on_result=lambda p: (seen.append(p), best.append(p.best_accuracy)))
    assert [p.evaluations for p in seen] == [p.sequence + 1 for p in seen] == list(range(1, 10))
    assert all(p.budget == 9 for p in seen) and best[-1] > 0
    assert all(p.evaluated + p.cached + p.failed >= p.evaluations for p in seen)


def test_summary_best_is_the_journal_best(tmp_path):
    summary = run_search(toy(), ToyEvaluator(), budget=20, journal=tmp_path / "run.db")
    with Journal(tmp_path / "run.db") as journal:
        assert summary.best_result.accuracy == journal.best()["accuracy"]
        assert summary.best.number == journal.best()["candidate"]


def test_an_algorithm_that_waits_forever_stops_the_search(tmp_path):
    class Stuck(Scripted):
        def _ask(self):
            return None

    summary = run_search(Stuck(ToySpace(), [(1, 1)]), ToyEvaluator(), budget=5)
    assert summary.evaluations == 0


@pytest.mark.parametrize("arguments, message", [
    ({"mode": "steady"}, "mode"), ({"budget": -1}, "budget"), ({"batch_size": 0}, "batch_size"),
])
def test_bad_arguments_are_configuration_errors(arguments, message):
    with pytest.raises(ConfigurationError, match=message):
        run_search(toy(), ToyEvaluator(), **{"budget": 5, **arguments})


def test_an_interruption_marks_the_journal_interrupted_and_keeps_what_finished(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        run_search(toy(), Interrupting(stop_at=3), budget=10, journal=tmp_path / "run.db")
    with Journal(tmp_path / "run.db") as journal:
        assert journal.metadata()["status"] == "interrupted" and journal.count() == 2
        assert journal.state() == "interrupted"


class Broken(ToyGenerational):
    """An algorithm with a bug: its tell fails at the third result."""

    def _tell(self, candidate, result):
        if self.told == 3:
            raise ZeroDivisionError("a bug in the algorithm")
        super()._tell(candidate, result)


def test_an_unexpected_error_marks_the_journal_crashed_with_the_reason(tmp_path):
    with pytest.raises(ZeroDivisionError):
        run_search(Broken(ToySpace(), seed=0), ToyEvaluator(), budget=10, batch_size=1,
                   journal=tmp_path / "run.db")
    with Journal(tmp_path / "run.db") as journal:
        meta = journal.metadata()
        assert meta["status"] == "crashed" and "a bug in the algorithm" in meta["status_detail"]
        assert journal.count() == 3


@pytest.fixture
def small_disk(tmp_path):
    """A real 1 MB file system (tmpfs; needs root), removed afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


class Verbose(ToyEvaluator):
    """Results with large metrics, so that a small disk fills up."""

    def _evaluate(self, descriptor):
        result = super()._evaluate(descriptor)
        result.metrics["notes"] = "x" * 6000
        return result


@pytest.mark.processes
def test_a_full_disk_ends_the_run_clearly_and_the_journal_resumes(small_disk):
    journal = small_disk / "run.db"
    filler = small_disk / "filler"
    filler.write_bytes(b"0" * 600_000)
    with pytest.raises(DiskFullError, match=r"full \(.* free\)") as stopped:
        run_search(RandomSearch(ToySpace(), seed=0), Verbose(), budget=400, journal=journal)
    assert "nord resume" in str(stopped.value)
    with Journal(journal) as reader:
        done = reader.count()
        assert 0 < done < 400 and reader.state() == "failed"
        assert reader.metadata()["status_detail"].startswith("disk full")
    filler.unlink()
    summary = run_search(RandomSearch(ToySpace(), seed=0), Verbose(), budget=done + 2,
                         journal=journal, resume=True)
    assert summary.replayed == done and summary.evaluations == done + 2


# --- resume ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("stop_at", [2, 5, 9])
def test_resume_after_an_interruption_gives_the_uninterrupted_journal(tmp_path, mode, stop_at):
    """batch_size 3 with generations of 4: interruptions fall inside batches and generations."""
    settings = dict(budget=24, mode=mode, batch_size=3 if mode == "sync" else None)
    run_search(toy(), ToyEvaluator(), journal=tmp_path / "whole.db", **settings)
    with pytest.raises(KeyboardInterrupt):
        run_search(toy(), Interrupting(stop_at), journal=tmp_path / "cut.db", **settings)
    evaluator = ToyEvaluator()
    summary = run_search(toy(), evaluator, journal=tmp_path / "cut.db", resume=True,
                         **{**settings, "batch_size": None})
    assert journal_rows(tmp_path / "cut.db") == journal_rows(tmp_path / "whole.db")
    assert summary.evaluations == 24 and summary.replayed >= 1
    assert evaluator.calls == summary.evaluated


def test_resume_does_not_train_journaled_evaluations_again(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        run_search(toy(), Interrupting(stop_at=8), budget=30, journal=tmp_path / "run.db")
    with Journal(tmp_path / "run.db") as journal:
        before = {r["key"] for r in journal.evaluations() if r["descriptor"]}
    evaluator = ToyEvaluator(log=str(tmp_path / "trained.log"))
    run_search(toy(), evaluator, budget=30, journal=tmp_path / "run.db", resume=True)
    trained_again = {line.split()[1] for line in (tmp_path / "trained.log").read_text().splitlines()}
    assert before and not (before & trained_again)


def test_resume_with_a_larger_budget_continues_the_run(tmp_path):
    run_search(toy(), ToyEvaluator(), budget=10, journal=tmp_path / "part.db")
    summary = run_search(toy(), ToyEvaluator(), budget=22, journal=tmp_path / "part.db", resume=True)
    run_search(toy(), ToyEvaluator(), budget=22, journal=tmp_path / "whole.db")
    assert summary.replayed == 10 and summary.evaluations == 22
    assert journal_rows(tmp_path / "part.db") == journal_rows(tmp_path / "whole.db")


def test_resume_of_a_finished_run_trains_nothing(tmp_path):
    run_search(toy(), ToyEvaluator(), budget=10, journal=tmp_path / "run.db")
    evaluator = ToyEvaluator()
    summary = run_search(toy(), evaluator, budget=10, journal=tmp_path / "run.db", resume=True)
    assert evaluator.calls == 0 and summary.replayed == 10
    assert summary.best_result is not None


def test_resume_without_a_journaled_run_is_refused(tmp_path):
    with pytest.raises(JournalError, match="no journal at .* to resume"):
        run_search(toy(), ToyEvaluator(), budget=5, journal=tmp_path / "typo.db", resume=True)
    assert not (tmp_path / "typo.db").exists()


# --- the journal given: a path, a Journal or a NoJournal --------------------------------------
class Counted(Journal):
    """A Journal that counts how often it is closed."""

    def __init__(self, path):
        super().__init__(path)
        self.closes = 0

    def close(self):
        self.closes += 1
        super().close()


def test_a_journal_given_is_written_and_left_open_for_its_owner(tmp_path):
    with Counted(tmp_path / "mine.db") as journal:
        summary = run_search(toy(), ToyEvaluator(), budget=6, journal=journal)
        assert journal.closes == 0 and not journal.writing
        assert journal.state() == "finished" and journal.count() == 6
    assert journal.closes == 1   # the with block's
    assert summary.journal == str(tmp_path / "mine.db")
    run_search(toy(), ToyEvaluator(), budget=6, journal=tmp_path / "path.db")
    assert journal_rows(tmp_path / "mine.db") == journal_rows(tmp_path / "path.db")


def test_a_journal_opened_by_its_owner_is_resumed_and_left_open(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        run_search(toy(), Interrupting(stop_at=4), budget=8, journal=tmp_path / "run.db")
    with Counted(tmp_path / "run.db") as journal:
        assert journal.count() == 3 and journal.state() == "interrupted"   # opened to read
        summary = run_search(toy(), ToyEvaluator(), budget=8, journal=journal, resume=True)
        assert journal.closes == 0
        assert journal.state() == "finished" and journal.count() == 8
    assert summary.replayed == 3


def test_a_journal_given_is_marked_when_the_run_is_interrupted_and_left_open(tmp_path):
    with Counted(tmp_path / "run.db") as journal:
        with pytest.raises(KeyboardInterrupt):
            run_search(toy(), Interrupting(stop_at=3), budget=8, journal=journal)
        assert journal.closes == 0 and not journal.writing
        assert journal.state() == "interrupted" and journal.count() == 2
    with Journal(tmp_path / "run.db") as reader:   # its owner's close did not mark it crashed
        assert reader.state() == "interrupted"


def test_a_journal_the_engine_opened_at_a_path_is_closed(tmp_path, monkeypatch):
    opened = []

    class Tracked(Counted):
        def __init__(self, path):
            super().__init__(path)
            opened.append(self)

    monkeypatch.setattr("nord.search.engine.run.Journal", Tracked)
    run_search(toy(), ToyEvaluator(), budget=3, journal=tmp_path / "run.db")
    assert [journal.closes for journal in opened] == [1]


def test_a_journal_already_started_by_its_owner_is_refused_before_anything_is_written(
        tmp_path):
    from nord.journal import RunRecord
    with Journal(tmp_path / "run.db") as journal:
        journal.start(RunRecord("mine", {}, 0, {}, mode="sync", budget=1))
        with pytest.raises(ConfigurationError, match="is being written already .* give a "
                                                     "Journal that is not started, or its path"):
            run_search(toy(), ToyEvaluator(), budget=3, journal=journal)
        assert journal.count() == 0 and journal.writing
        journal.finish("finished")


def test_a_nojournal_keeps_nothing_and_cannot_be_resumed(tmp_path):
    from nord.journal.recorder import NoJournal
    summary = run_search(toy(), ToyEvaluator(), budget=5, journal=NoJournal())
    assert summary.evaluations == 5 and summary.journal is None
    for journal in (None, NoJournal()):
        with pytest.raises(ConfigurationError, match="resume=True continues a run from its "
                                                     "journal, and none was given"):
            run_search(toy(), ToyEvaluator(), budget=5, journal=journal, resume=True)


@pytest.mark.parametrize("journal", [3, b"run.db", sqlite3])
def test_a_journal_that_is_none_of_these_is_refused(journal):
    with pytest.raises(ConfigurationError, match="journal must be a path .*, a Journal, a "
                                                 "NoJournal or None; got"):
        run_search(toy(), ToyEvaluator(), budget=3, journal=journal)


def test_resume_with_another_seed_is_refused(tmp_path):
    run_search(toy(seed=0), ToyEvaluator(), budget=5, journal=tmp_path / "run.db")
    with pytest.raises(JournalError, match="its run has seed=0, this one seed=1"):
        run_search(toy(seed=1), ToyEvaluator(), budget=5, journal=tmp_path / "run.db", resume=True)


def test_resume_takes_the_journal_batch_size_and_refuses_another(tmp_path):
    run_search(toy(), ToyEvaluator(), budget=6, batch_size=3, journal=tmp_path / "run.db")
    summary = run_search(toy(), ToyEvaluator(), budget=9, journal=tmp_path / "run.db", resume=True)
    assert summary.evaluations == 9
    with pytest.raises(JournalError, match="its run has batch_size=3, this one batch_size=2"):
        run_search(toy(), ToyEvaluator(), budget=12, batch_size=2, journal=tmp_path / "run.db",
                   resume=True)


def test_a_new_run_into_a_used_journal_is_refused_and_leaves_it_finished(tmp_path):
    run_search(toy(), ToyEvaluator(), budget=3, journal=tmp_path / "run.db")
    with pytest.raises(JournalError, match="resume"):
        run_search(toy(), ToyEvaluator(), budget=3, journal=tmp_path / "run.db")
    with Journal(tmp_path / "run.db") as journal:
        assert journal.state() == "finished" and journal.metadata()["resumed"] == 0


def test_resume_detects_an_algorithm_that_proposes_other_genomes(tmp_path):
    run_search(toy(), ToyEvaluator(), budget=8, journal=tmp_path / "run.db")
    connection = sqlite3.connect(str(tmp_path / "run.db"))
    with connection:
        connection.execute("UPDATE candidates SET genome = '[9, 9]' WHERE candidate = 5")
    connection.close()
    with pytest.raises(JournalError, match="not deterministic"):
        run_search(toy(), ToyEvaluator(), budget=8, journal=tmp_path / "run.db", resume=True)


# --- kill -9 of a real process ----------------------------------------------------------------
def _command(journal, mode, budget, log, resume, sleep=0.05):
    command = [sys.executable, str(PROGRAM), "--serial", "--journal", str(journal), "--mode", mode,
               "--budget", str(budget), "--sleep", str(sleep), "--log", str(log)]
    if mode == "sync":
        command += ["--batch-size", "3"]
    return command + (["--resume"] if resume else [])


def _start(*args):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(_command(*args), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)


def kill_after(process, journal, evaluations, timeout=60.0):
    """SIGKILL the process group once ``evaluations`` are journaled; return how many were."""
    deadline = time.monotonic() + timeout
    while journaled_evaluations(journal) < evaluations:
        assert process.poll() is None, process.stdout.read().decode()
        assert time.monotonic() < deadline, "the run did not record evaluations in time"
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    return journaled_evaluations(journal)


@pytest.mark.processes
@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_kill_9_then_resume_gives_the_uninterrupted_journal(tmp_path, mode):
    budget = 30
    run_search(toy(), ToyEvaluator(), budget=budget, mode=mode, journal=tmp_path / "whole.db",
               batch_size=3 if mode == "sync" else None)
    journal, log = tmp_path / "killed.db", tmp_path / "trained.log"
    for kill_at in (4, 11):  # killed twice: the second run resumes the first, and is killed too
        process = _start(journal, mode, budget, log, kill_at != 4)
        assert kill_after(process, journal, kill_at) < budget
    process = subprocess.run(_command(journal, mode, budget, log, True, 0.0),
                             env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
                             text=True, timeout=60)
    assert process.returncode == 0, process.stdout + process.stderr
    rows, candidates = journal_rows(journal)
    assert (rows, candidates) == journal_rows(tmp_path / "whole.db")
    trained = Counter(line.split()[1] for line in log.read_text().splitlines())
    uncached = [r["key"] for r in rows if r["descriptor"] and not r["cached"]]
    # at most the evaluation in flight at each kill was trained twice
    assert sum(trained.values()) - len(uncached) <= 2
    assert set(trained) == set(uncached)


# --- the MPI executor in a single process ---------------------------------------------------------
def test_mpi_executor_without_mpirun_evaluates_in_this_process(tmp_path):
    from nord.search.executors import MPIExecutor

    run_search(toy(), ToyEvaluator(), budget=12, journal=tmp_path / "serial.db")
    summary = run_search(toy(), executor=MPIExecutor(ToyEvaluator()), budget=12,
                         journal=tmp_path / "mpi.db")
    assert summary.workers == 1
    assert journal_rows(tmp_path / "mpi.db") == journal_rows(tmp_path / "serial.db")


def test_mpi_executor_runs_a_second_search_in_the_same_environment(tmp_path):
    from nord.parallel.environment import Environment
    from nord.search.executors import MPIExecutor

    with Environment() as env:
        executor = MPIExecutor(ToyEvaluator(), env)
        first = run_search(toy(), executor=executor, budget=5, mode="async")
        second = run_search(toy(seed=1), executor=executor, budget=6, mode="async")
    assert (first.evaluations, second.evaluations) == (5, 6)


def test_the_counts_add_up_also_after_a_resume(tmp_path):
    genomes = [(6, 4), (2, 2), (2, 2), (1, 1), (3, 3), (2, 2), (6, 4), (4, 1)]
    run_search(Scripted(ToySpace(), genomes), ToyEvaluator(), budget=5, journal=tmp_path / "r.db")
    summary = run_search(Scripted(ToySpace(), genomes), ToyEvaluator(), budget=8,
                         journal=tmp_path / "r.db", resume=True)
    assert (summary.replayed, summary.evaluated, summary.cached, summary.undecodable) == (5, 1, 1, 1)
    assert summary.evaluations == 8 == (summary.replayed + summary.evaluated + summary.cached
                                        + summary.undecodable)
    assert summary.failed == 3      # (6, 4) twice, the (1, 1) network
    assert summary.counts() == ("8 evaluations (5 from the journal, 1 evaluated, 1 reused, "
                                "1 not decodable; 3 failed)")


class Colliding(ToySpace):
    """A space whose key wrongly gives every architecture the same digest."""

    def identify(self, genome):
        descriptor = self.to_descriptor(genome)
        return "one digest", descriptor


def test_a_key_shared_by_two_architectures_stops_the_search_instead_of_reusing(tmp_path):
    with pytest.raises(NordError, match="two different architectures share the key"):
        run_search(Scripted(Colliding(), [(3, 2), (4, 4)]), ToyEvaluator(), budget=2,
                   journal=tmp_path / "run.db")
    with Journal(tmp_path / "run.db") as journal:
        assert journal.count() == 1 and journal.state() == "crashed"


def test_isomorphic_networks_of_different_genomes_share_one_evaluation(tmp_path):
    evaluator = ToyEvaluator()
    summary = run_search(Scripted(Renamed(), [(3, 2), (3, 2)]), evaluator, budget=2)
    assert evaluator.calls == 1 and summary.cached == 1


class Renamed(ToySpace):
    """Decodes the second visit of a genome with other layer names and order: the same
    architecture, so the engine must recognise it."""

    def __init__(self):
        self.visits = 0

    def decode(self, genome):
        self.visits += 1
        if self.visits == 1:
            return super().decode(genome)
        from nord.architecture.descriptor import NeuralDescriptor
        width, kernel = genome
        descriptor = NeuralDescriptor()
        descriptor.add_layer("relu", None, "second")
        descriptor.add_layer("conv2d", {"out_channels": width, "kernel_size": kernel}, "first")
        descriptor.connect_layers("first", "second")
        return descriptor


# --- a candidate that kills its process -------------------------------------------------------
KILLER = """
import os, signal, sys
from nord.search.engine import run_search
from nord.search.algorithms.random_search import RandomSearch
from tests.helpers.toy import ToyEvaluator, ToySpace

class Killer(ToyEvaluator):
    '''Its process dies (SIGKILL, as the out-of-memory killer sends) on one architecture.'''
    def _evaluate(self, descriptor):
        conv = next(layer for layer in descriptor.layers.values() if layer.type == "conv2d")
        if [conv.params["out_channels"], conv.params["kernel_size"]] == [int(sys.argv[3]),
                                                                         int(sys.argv[4])]:
            os.kill(os.getpid(), signal.SIGKILL)
        return super()._evaluate(descriptor)

run_search(RandomSearch(ToySpace(), seed=0), Killer(), budget=10, mode=sys.argv[2],
           journal=sys.argv[1], resume=sys.argv[5] == "resume", batch_size=3)
"""


@pytest.mark.processes
@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_candidate_that_kills_its_process_twice_becomes_a_failed_result(tmp_path, mode):
    whole = tmp_path / "whole.db"
    run_search(RandomSearch(ToySpace(), seed=0), ToyEvaluator(), budget=10, mode=mode,
               journal=whole, batch_size=3)
    rows, _ = journal_rows(whole)
    deadly = next(row for row in rows if row["sequence"] >= 3 and row["status"] == "ok"
                  and not row["cached"])
    journal = tmp_path / "killed.db"
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def attempt(how):
        return subprocess.run([sys.executable, "-c", KILLER, str(journal), mode,
                               *map(str, deadly["genome"]), how], env=env, cwd=str(REPO),
                              capture_output=True, text=True, timeout=60)

    for how in ("new", "resume"):   # killed on the same candidate, twice
        done = attempt(how)
        assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr
        with Journal(journal) as record:
            assert record.attempts() == {deadly["candidate"]: 1 if how == "new" else 2}
    done = attempt("resume")
    assert done.returncode == 0, done.stdout + done.stderr
    with Journal(journal) as record:
        after = record.evaluations()
        assert record.state() == "finished" and record.attempts() == {}
    assert len(after) == 10
    given_up = [row for row in after if row["genome"] == deadly["genome"]]
    assert given_up[0]["candidate"] == deadly["candidate"]
    assert given_up[0]["status"] == "failed" and "the run stopped 2 times in a row" in given_up[0]["error"]
    assert all(row["status"] == "failed" for row in given_up)   # repeats reuse the failure
    # every other candidate has the result it has in an uninterrupted run
    others = {row["candidate"]: row["accuracy"] for row in rows
              if row["genome"] != deadly["genome"] and row["status"] == "ok"}
    assert others and others.items() <= {row["candidate"]: row["accuracy"] for row in after}.items()


def test_a_sigterm_to_a_serial_run_takes_back_its_attempts(tmp_path):
    """The process that evaluates is the one that got the SIGTERM, alive: nothing it
    evaluated killed it (under mpirun, only the workers that say so are spared)."""
    class Terminated(ToyEvaluator):
        def _evaluate(self, descriptor):
            if self.calls >= 2:
                raise RunInterrupted("SIGTERM")
            return super()._evaluate(descriptor)

    with pytest.raises(RunInterrupted):
        run_search(RandomSearch(ToySpace(), seed=0), Terminated(), budget=10, mode="async",
                   journal=tmp_path / "run.db")
    with Journal(tmp_path / "run.db") as journal:
        assert journal.state() == "interrupted" and journal.attempts() == {}
        assert journal._query("SELECT COUNT(*) FROM attempts")[0][0] > 0   # they were counted


def test_a_stop_the_run_survives_takes_back_its_attempts(tmp_path):
    """Ctrl-C while a candidate trains is no death of its process: a resume does not count it."""
    class Interrupting(ToyEvaluator):
        def _evaluate(self, descriptor):
            if self.calls >= 2:
                raise KeyboardInterrupt
            return super()._evaluate(descriptor)

    with pytest.raises(KeyboardInterrupt):
        run_search(RandomSearch(ToySpace(), seed=0), Interrupting(), budget=10, mode="async",
                   journal=tmp_path / "run.db")
    with Journal(tmp_path / "run.db") as journal:
        assert journal.state() == "interrupted" and journal.attempts() == {}
        assert journal._query("SELECT COUNT(*) FROM attempts")[0][0] > 0   # they were counted
