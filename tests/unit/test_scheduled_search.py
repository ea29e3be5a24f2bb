"""The engine with a scheduler: legs, promotions, telling, journal, checkpoints, resume."""
import os
from collections import Counter
from pathlib import Path

import pytest

from nord.app.search_progress import closing_line
from nord.data import Digits
from nord.errors import ConfigurationError, JournalError
from nord.evaluators.local import LocalEvaluator
from nord.evaluators.result import EvaluationResult
from nord.journal import Journal
from nord.report import write_report
from nord.report.runs import load_run, run_numbers
from nord.report.schedule import schedule_numbers
from nord.search.algorithms.random_search import RandomSearch
from nord.search.engine import run_search
from nord.search.schedulers import make_scheduler
from tests.helpers.toy import ToyCurves, ToySpace, journal_rows

TIMES = ("started", "ended", "train_time", "eval_time", "asked", "recorded", "seconds")


def random(seed=0):
    return RandomSearch(ToySpace(), seed=seed)


def legs_of(path):
    with Journal(path) as journal:
        return [{k: v for k, v in leg.items() if k not in TIMES and k != "result"}
                for leg in journal.legs()]


def test_asha_told_every_candidate_once_and_trained_few_to_the_end(tmp_path):
    evaluator = ToyCurves(max_epochs=9)
    summary = run_search(random(), evaluator, budget=20, mode="async", journal=tmp_path / "r.db",
                         scheduler=make_scheduler("asha", min_epochs=1, max_epochs=9, eta=3))
    with Journal(tmp_path / "r.db") as journal:
        rows, legs = journal.evaluations(), journal.legs()
        epochs = journal.epochs()
        assert journal.metadata()["scheduler"]["scheduler"] == "asha"
    assert len(rows) == summary.evaluations == 20
    assert len({row["candidate"] for row in rows}) == 20
    full = evaluator.max_epochs * summary.evaluated
    assert summary.epochs_trained == evaluator.epochs_trained < full / 2
    assert {leg["decision"] for leg in legs} <= {"pause", "stop", "done", "continue"}
    assert any(leg["target_epochs"] == 9 for leg in legs)      # somebody finished
    # every epoch trained is in the learning curves, once
    assert len(epochs) == evaluator.epochs_trained
    assert summary.best_result.epochs == 9
    assert not os.path.exists(f"{tmp_path / 'r.db'}.checkpoints")   # deleted when finished


class Failing(ToyCurves):
    """Fails the run (not a candidate) once a few legs have trained."""

    def evaluate_task(self, task):
        if self.epochs_trained > 6:
            raise KeyboardInterrupt
        return super().evaluate_task(task)


@pytest.mark.parametrize("evaluator", [ToyCurves(max_epochs=9), Failing(max_epochs=9)],
                         ids=["finished", "interrupted"])
def test_a_run_without_a_journal_leaves_no_checkpoint_folder(tmp_path, monkeypatch, evaluator):
    """Its paused candidates wait in a temporary folder, which nothing can resume: it goes
    with the run, however the run ends."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    seen = []
    real = evaluator.evaluate_task

    def watching(task):
        seen.append(os.path.dirname(task.checkpoint))
        return real(task)

    evaluator.evaluate_task = watching
    try:
        run_search(random(), evaluator, budget=12, mode="async",
                   scheduler=make_scheduler("asha", min_epochs=1, max_epochs=9, eta=3))
    except KeyboardInterrupt:
        pass
    assert seen and os.path.basename(seen[0]).startswith("nord-checkpoints-")
    assert os.listdir(tmp_path) == []


def test_the_journal_knows_the_final_results_of_promoted_candidates(tmp_path):
    """In async mode a candidate is told when it first pauses; a later promotion trains it
    on. The journal's final results and best follow it to its furthest leg, and agree with
    the engine's summary."""
    summary = run_search(random(), ToyCurves(max_epochs=9), budget=20, mode="async",
                         journal=tmp_path / "r.db",
                         scheduler=make_scheduler("asha", min_epochs=1, max_epochs=9, eta=3))
    with Journal(tmp_path / "r.db") as journal:
        told, final, legs = journal.evaluations(told=True), journal.evaluations(), journal.legs()
        best, top = journal.best(), journal.best(3)
    furthest = {}
    for leg in legs:
        if leg["status"] == "ok":
            furthest[leg["candidate"]] = max(furthest.get(leg["candidate"], 0),
                                             leg["target_epochs"])
    promoted = [row for row in told if not row["cached"] and row["status"] == "ok"
                and furthest[row["candidate"]] > row["epochs"]]
    assert promoted                                  # the case under test happened
    by_candidate = {row["candidate"]: row for row in final}
    for row in promoted:
        again = by_candidate[row["candidate"]]
        assert again["told_epochs"] == row["epochs"]
        assert again["epochs"] == furthest[row["candidate"]]
        assert again["accuracy"] >= row["accuracy"]  # toy curves never fall
    assert any(by_candidate[row["candidate"]]["accuracy"] > row["accuracy"] for row in promoted)
    assert best["candidate"] == summary.best.number and best["epochs"] == 9
    assert best["accuracy"] == summary.best_result.accuracy
    assert [row["epochs"] for row in top] == sorted((row["epochs"] for row in top), reverse=True)


def test_a_promoted_candidate_has_one_result_in_the_list_the_report_and_the_closing_line(
        tmp_path):
    """ASHA in async mode tells a candidate at its first pause; its result everywhere a run is
    read (nord list's summary, the report's tables and best-so-far, the evaluations) is the
    one at its furthest epoch, which the closing line also shows."""
    summary = run_search(random(), ToyCurves(max_epochs=9), budget=20, mode="async",
                         journal=tmp_path / "r.db",
                         scheduler=make_scheduler("asha", min_epochs=1, max_epochs=9, eta=3))
    run = load_run(tmp_path / "r.db")
    with Journal(tmp_path / "r.db") as journal:
        listed = journal.summary()["best_accuracy"]
        told = journal.evaluations(told=True)
    closing = summary.best_result.accuracy
    assert max(row["accuracy"] for row in told if row["epochs"] == 1) != closing   # the trap
    assert listed == closing
    assert run.summary["best_accuracy"] == run_numbers(run)["best_accuracy"] == closing
    assert run.best[0]["accuracy"] == closing
    assert max(g["best_so_far"] for g in run.generations) == pytest.approx(
        max(row["accuracy"] for row in run.evaluations if row["status"] == "ok"))
    promoted = [row for row in run.evaluations if row["epochs"] == 9]
    assert promoted and closing in [row["accuracy"] for row in promoted]


def test_promoted_candidates_resume_where_they_paused(tmp_path):
    log = tmp_path / "epochs.log"
    run_search(random(1), ToyCurves(max_epochs=9, log=str(log)), budget=12, mode="async",
               scheduler=make_scheduler("asha", min_epochs=1, max_epochs=9, eta=3))
    trained = Counter(tuple(line.split()[1:]) for line in log.read_text().splitlines())
    assert trained and max(trained.values()) == 1    # no epoch of an architecture trained twice


def test_sha_halves_each_batch_and_tells_it_at_the_highest_rung_in_order(tmp_path):
    summary = run_search(random(), ToyCurves(max_epochs=9), budget=9, batch_size=9,
                         mode="sync", journal=tmp_path / "r.db",
                         scheduler=make_scheduler("sha", min_epochs=1, max_epochs=9, eta=3))
    with Journal(tmp_path / "r.db") as journal:
        rows, legs = journal.evaluations(), journal.legs()
    reached = Counter(leg["target_epochs"] for leg in legs if leg["status"] == "ok")
    trained = sum(1 for row in rows if not row["cached"] and row["status"] == "ok")
    # the best third goes on at each rung, and at least the best one: a batch always ends
    # with a candidate trained to max_epochs
    assert reached[1] == trained and reached[3] == max(1, trained // 3)
    assert reached[9] == max(1, reached[3] // 3)
    assert [row["candidate"] for row in rows] == list(range(9))      # candidate order
    highest = {}
    for leg in legs:
        highest[leg["candidate"]] = max(highest.get(leg["candidate"], 0), leg["target_epochs"])
    assert all(row["epochs"] == highest[row["candidate"]] for row in rows
               if not row["cached"] and row["status"] == "ok")
    assert summary.evaluations == 9


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_hyperband_runs_in_both_modes(tmp_path, mode):
    summary = run_search(random(), ToyCurves(max_epochs=9), budget=30, mode=mode,
                         scheduler=make_scheduler("hyperband", min_epochs=1, max_epochs=9, eta=3))
    assert summary.evaluations == 30 and summary.best_result is not None


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_median_rule_stops_poor_candidates_early(tmp_path, mode):
    evaluator = ToyCurves(max_epochs=9)
    summary = run_search(random(), evaluator, budget=16, mode=mode,
                         scheduler=make_scheduler("median", min_epochs=1, max_epochs=9, eta=3))
    assert summary.evaluations == 16
    assert evaluator.epochs_trained < 9 * summary.evaluated


def test_a_scheduler_refuses_a_mode_before_the_journal_is_touched(tmp_path):
    with pytest.raises(ConfigurationError, match="not in sync mode"):
        run_search(random(), ToyCurves(), budget=5, mode="sync", journal=tmp_path / "r.db",
                   scheduler=make_scheduler("asha"))
    assert not (tmp_path / "r.db").exists()


def test_a_checkpoint_folder_that_cannot_be_written_is_refused_before_the_journal(tmp_path):
    (tmp_path / "r.db.checkpoints").write_text("a file where the folder should be")
    with pytest.raises(ConfigurationError, match=r"the checkpoint folder .*r\.db\.checkpoints "
                                                 r"\(next to the journal\) cannot be written"):
        run_search(random(), ToyCurves(), budget=5, mode="async", journal=tmp_path / "r.db",
                   scheduler=make_scheduler("asha"))
    assert not (tmp_path / "r.db").exists()


def test_a_refused_start_leaves_no_checkpoint_folder(tmp_path):
    run_search(random(), ToyCurves(), budget=5, mode="async", journal=tmp_path / "r.db")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(JournalError, match="already holds a run"):
        run_search(random(), ToyCurves(), budget=5, mode="async", journal=tmp_path / "r.db",
                   scheduler=make_scheduler("asha"))
    assert sorted(os.listdir(tmp_path)) == before and "r.db.checkpoints" not in before


@pytest.mark.parametrize("name,mode", [("asha", "async"), ("sha", "sync"),
                                       ("hyperband", "async"), ("median", "sync")])
def test_a_scheduler_that_served_a_run_is_refused_by_the_next_before_anything_is_written(
        tmp_path, name, mode):
    """Its rungs hold the first run's candidates (ASHA would promote them in the second):
    the second run is refused, naming the fix, and leaves no journal and no checkpoints."""
    scheduler = make_scheduler(name, min_epochs=1, max_epochs=2, eta=2)
    first = run_search(random(), ToyCurves(max_epochs=2), budget=4, mode=mode,
                       journal=tmp_path / "r1.db", scheduler=scheduler)
    assert first.evaluations == 4 and first.stopped_by.startswith("the evaluation budget")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(ConfigurationError) as refused:
        run_search(random(1), ToyCurves(max_epochs=2), budget=4, mode=mode,
                   journal=tmp_path / "r2.db", scheduler=scheduler)
    assert str(refused.value).startswith(
        f"a scheduler serves one run: this {name} scheduler has already decided for another "
        "run (")
    assert f"Make a fresh one with make_scheduler('{name}', min_epochs=1, max_epochs=2, eta=2" \
        in str(refused.value)
    assert sorted(os.listdir(tmp_path)) == before     # no r2.db, no r2.db.checkpoints


def test_a_resume_takes_a_fresh_scheduler_and_refuses_the_one_its_session_used(tmp_path):
    """A scheduler that decided for the interrupted session would replay the journal onto
    its own rungs; a fresh one is rebuilt from the journal. A start refused before any
    decision leaves the scheduler as fresh as it was."""
    def scheduler():
        return make_scheduler("asha", min_epochs=1, max_epochs=9, eta=3)

    class Interrupting(ToyCurves):
        def evaluate_task(self, task):
            if self.epochs_trained >= 5:
                raise KeyboardInterrupt
            return super().evaluate_task(task)

    used = scheduler()
    with pytest.raises(KeyboardInterrupt):
        run_search(random(), Interrupting(max_epochs=9), budget=10, mode="async",
                   journal=tmp_path / "r.db", scheduler=used)
    state = journal_rows(tmp_path / "r.db", TIMES), legs_of(tmp_path / "r.db")
    with pytest.raises(ConfigurationError, match="a scheduler serves one run"):
        run_search(random(), ToyCurves(max_epochs=9), budget=10, mode="async",
                   journal=tmp_path / "r.db", resume=True, scheduler=used)
    assert (journal_rows(tmp_path / "r.db", TIMES), legs_of(tmp_path / "r.db")) == state
    unused = scheduler()
    with pytest.raises(JournalError, match="already holds a run"):   # resume=True forgotten
        run_search(random(), ToyCurves(max_epochs=9), budget=10, mode="async",
                   journal=tmp_path / "r.db", scheduler=unused)
    summary = run_search(random(), ToyCurves(max_epochs=9), budget=10, mode="async",
                         journal=tmp_path / "r.db", resume=True, scheduler=unused)
    assert summary.evaluations == 10 and summary.replayed > 0


def _whole_journal(path):
    import sqlite3
    connection = sqlite3.connect(path)
    try:
        return [connection.execute(f"SELECT * FROM {table}").fetchall()
                for table in ("run", "candidates", "evaluations", "legs", "epochs")]
    finally:
        connection.close()


@pytest.mark.parametrize("first, then", [("asha", None), (None, "asha")],
                         ids=["scheduled-resumed-without", "plain-resumed-with"])
def test_resuming_with_or_without_a_scheduler_unlike_the_run_says_so_in_users_words(
        tmp_path, first, then):
    """The run record of a run without a scheduler is empty: the refusal names the
    scheduler and what to pass, not the first setting that differs from nothing."""
    def scheduler(name):
        return name and make_scheduler(name, min_epochs=1, max_epochs=2, eta=2)

    path = tmp_path / "asha.db"
    run_search(random(), ToyCurves(max_epochs=2), budget=4, mode="async", journal=path,
               scheduler=scheduler(first))
    before = _whole_journal(path)
    with pytest.raises(JournalError) as refused:
        run_search(random(), ToyCurves(max_epochs=2), budget=8, mode="async", journal=path,
                   resume=True, scheduler=scheduler(then))
    settings = "min_epochs 1, max_epochs 2, eta 2, brackets 1"
    if first:
        assert str(refused.value) == (
            f"cannot resume '{path}': its run trained under the asha scheduler ({settings}); "
            "this one has no scheduler. Pass the same scheduler (scheduler=make_scheduler("
            "'asha', min_epochs=1, max_epochs=2, eta=2, brackets=1)), or give a new journal "
            "path; the journal was left untouched")
    else:
        assert str(refused.value) == (
            f"cannot resume '{path}': its run trained every candidate to the end, without a "
            f"scheduler; this one has the asha scheduler ({settings}). Resume it without one "
            "(scheduler=None), or give a new journal path; the journal was left untouched")
    assert _whole_journal(path) == before
    assert not os.path.exists(f"{path}.checkpoints")


def test_a_resume_under_other_scheduler_settings_names_the_setting(tmp_path):
    path = tmp_path / "asha.db"
    run_search(random(), ToyCurves(max_epochs=4), budget=4, mode="async", journal=path,
               scheduler=make_scheduler("asha", min_epochs=1, max_epochs=4, eta=2))
    with pytest.raises(JournalError, match=r"its run has scheduler.eta=2, this one "
                                           r"scheduler.eta=4\. Resume with the settings"):
        run_search(random(), ToyCurves(max_epochs=4), budget=8, mode="async", journal=path,
                   resume=True,
                   scheduler=make_scheduler("asha", min_epochs=1, max_epochs=4, eta=4))


@pytest.mark.parametrize("name,mode,cut", [("asha", "async", 11), ("asha", "async", 4),
                                           ("sha", "sync", 7), ("sha", "sync", 20),
                                           ("hyperband", "sync", 13),
                                           ("hyperband", "async", 13),
                                           ("median", "async", 9)])
def test_a_resumed_run_equals_an_uninterrupted_one(tmp_path, name, mode, cut):
    """One worker: the run is deterministic, so a run interrupted after ``cut`` epochs and
    resumed (from the checkpoints it left) must give the same journal, legs included."""
    settings = dict(budget=15, mode=mode)
    if name != "hyperband":
        settings["batch_size"] = 6      # hyperband's batches are its brackets

    def scheduler():
        return make_scheduler(name, min_epochs=1, max_epochs=9, eta=3)

    run_search(random(3), ToyCurves(max_epochs=9), journal=tmp_path / "whole.db",
               scheduler=scheduler(), **settings)

    class Interrupting(ToyCurves):
        def evaluate_task(self, task):
            if self.epochs_trained >= cut:
                raise KeyboardInterrupt
            return super().evaluate_task(task)

    with pytest.raises(KeyboardInterrupt):
        run_search(random(3), Interrupting(max_epochs=9), journal=tmp_path / "cut.db",
                   scheduler=scheduler(), **settings)
    folder = f"{tmp_path / 'cut.db'}.checkpoints"   # kept for the resume while it holds some
    assert not os.path.exists(folder) or os.listdir(folder)
    summary = run_search(random(3), ToyCurves(max_epochs=9), journal=tmp_path / "cut.db",
                         resume=True, scheduler=scheduler(), **settings)
    assert summary.evaluations == 15
    # the counts add up: from the journal, evaluated here, reused, not decodable
    assert summary.replayed + summary.evaluated + summary.cached + summary.undecodable == 15
    assert legs_of(tmp_path / "cut.db") == legs_of(tmp_path / "whole.db")
    drop = TIMES + ("worker_rank",)
    assert journal_rows(tmp_path / "cut.db", drop) == journal_rows(tmp_path / "whole.db", drop)
    assert not os.path.exists(f"{tmp_path / 'cut.db'}.checkpoints")  # removed when finished


def test_a_scheduler_refuses_an_evaluator_that_does_not_train_in_epochs(tmp_path):
    from tests.helpers.toy import ToyEvaluator
    with pytest.raises(ConfigurationError, match="ToyEvaluator does not train in epochs"):
        run_search(random(), ToyEvaluator(), budget=5, mode="async", journal=tmp_path / "r.db",
                   scheduler=make_scheduler("asha"))
    assert not (tmp_path / "r.db").exists()


def test_a_scheduler_refuses_a_multi_objective_algorithm(tmp_path):
    algorithm = random()
    algorithm.objectives = 2
    with pytest.raises(ConfigurationError, match="2 objectives.*without a scheduler"):
        run_search(algorithm, ToyCurves(), budget=5, mode="async", journal=tmp_path / "r.db",
                   scheduler=make_scheduler("asha"))
    assert not (tmp_path / "r.db").exists()


def test_hyperband_refuses_a_batch_size_it_would_ignore(tmp_path):
    with pytest.raises(ConfigurationError, match="sets the size of each synchronous batch"):
        run_search(random(), ToyCurves(), budget=5, mode="sync", batch_size=4,
                   journal=tmp_path / "r.db", scheduler=make_scheduler("hyperband"))
    assert not (tmp_path / "r.db").exists()


class DamagedOnDisk(LocalEvaluator):
    """Trains for real; every checkpoint is damaged on disk before its leg resumes from it."""

    def evaluate_task(self, task):
        if task.resume_from is not None and os.path.exists(task.resume_from):
            with open(task.resume_from, "wb") as handle:
                handle.write(b"damaged")
        return super().evaluate_task(task)


@pytest.mark.slow
@pytest.mark.parametrize("damaged", [False, True])
def test_checkpoints_that_cannot_be_used_are_counted_in_summary_journal_and_report(tmp_path,
                                                                                   damaged):
    kind = DamagedOnDisk if damaged else LocalEvaluator
    evaluator = kind(curator=Digits(seed=0), epochs=3, seed=0, device="cpu", batch_size=256)
    path = tmp_path / "r.db"
    summary = run_search(random(2), evaluator, budget=9, mode="async", journal=path,
                         scheduler=make_scheduler("asha", min_epochs=1, max_epochs=3, eta=3))
    with Journal(path) as journal:
        resumed = [leg for leg in journal.legs() if leg["start_epochs"] > 0]
        counted = journal.unusable_checkpoints()
    assert resumed                                     # promotions happened
    expected = len(resumed) if damaged else 0
    assert summary.unusable_checkpoints == counted == expected
    assert schedule_numbers(load_run(path))["unusable_checkpoints"] == expected
    line = closing_line(summary)
    assert (f"{expected} could not be used (trained again from scratch" in line) == damaged
    page = Path(write_report([path], tmp_path / "report")).read_text()
    assert ("Checkpoints that could not be used: r: " in page) == damaged
    if damaged:
        assert all("trained again from scratch" in leg["detail"] for leg in resumed)


class VerboseCurves(ToyCurves):
    """Results with large metrics, so that a small disk fills up."""

    def evaluate_task(self, task):
        try:
            result = super().evaluate_task(task)
        except OSError as error:   # its checkpoint did not fit: a failed candidate, as nord's
            return EvaluationResult.failure(f"{type(error).__name__}: {error}")
        result.metrics["notes"] = "x" * 6000
        return result


@pytest.mark.processes
def test_a_scheduled_run_that_fills_the_disk_says_failed_and_leaves_no_debris(tmp_path):
    """The journal's status is written in the room it held back, and what is left on the
    disk is only what a resume needs."""
    from nord.errors import DiskFullError
    from tests.helpers.disks import tmpfs

    with tmpfs(tmp_path / "disk", "size=1m") as disk:
        (disk / "filler").write_bytes(b"0" * 400_000)
        with pytest.raises(DiskFullError):
            run_search(random(), VerboseCurves(max_epochs=9), budget=400, mode="async",
                       journal=disk / "r.db",
                       scheduler=make_scheduler("asha", min_epochs=1, max_epochs=9, eta=3))
        with Journal(disk / "r.db") as journal:
            assert journal.state() == "failed"
            assert journal.metadata()["status_detail"].startswith("disk full")
        left = set(os.listdir(disk))
        assert not any(name.endswith((".partial", "-reserve")) for name in left), left
        folder = disk / "r.db.checkpoints"
        assert not folder.exists() or os.listdir(folder)   # kept only while it holds some


# --- a leg that kills its process -------------------------------------------------------------
LEG_KILLER = """
import os, signal, sys
from nord.search.engine import run_search
from nord.search.algorithms.random_search import RandomSearch
from nord.search.schedulers import make_scheduler
from tests.helpers.toy import ToyCurves, ToySpace

class Killer(ToyCurves):
    '''Its process dies (SIGKILL, as the out-of-memory killer sends) on one architecture's
    first leg, or on its promoted leg.'''
    def evaluate_task(self, task):
        conv = next(layer for layer in task.descriptor.layers.values() if layer.type == "conv2d")
        promoted = task.resume_from is not None
        if ([conv.params["out_channels"], conv.params["kernel_size"]]
                == [int(sys.argv[3]), int(sys.argv[4])] and promoted == (sys.argv[6] == "promoted")):
            os.kill(os.getpid(), signal.SIGKILL)
        return super().evaluate_task(task)

run_search(RandomSearch(ToySpace(), seed=0), Killer(max_epochs=9), budget=12, mode=sys.argv[2],
           journal=sys.argv[1], resume=sys.argv[5] == "resume", batch_size=4,
           scheduler=make_scheduler(sys.argv[7], min_epochs=1, max_epochs=9, eta=3))
"""


@pytest.mark.processes
@pytest.mark.timeout(180)
@pytest.mark.parametrize("name,mode,leg", [("asha", "async", "first"), ("asha", "async", "promoted"),
                                           ("sha", "sync", "promoted")])
def test_a_leg_that_kills_its_process_twice_becomes_a_failed_result_at_its_rung(tmp_path, name,
                                                                               mode, leg):
    import signal
    import subprocess
    import sys
    repo = Path(__file__).resolve().parents[2]
    whole = tmp_path / "whole.db"
    run_search(random(), ToyCurves(max_epochs=9), budget=12, mode=mode, journal=whole,
               batch_size=4, scheduler=make_scheduler(name, min_epochs=1, max_epochs=9, eta=3))
    with Journal(whole) as journal:
        rows, legs = journal.evaluations(), journal.legs()
    promoted = {row["candidate"] for row in legs if row["start_epochs"] > 0}
    deadly = next(row for row in rows if row["status"] == "ok" and not row["cached"]
                  and (row["candidate"] in promoted) == (leg == "promoted")
                  and row["sequence"] >= (0 if leg == "promoted" else 2))
    path = tmp_path / "killed.db"
    env = dict(os.environ, PYTHONPATH=str(repo))

    def attempt(how):
        return subprocess.run([sys.executable, "-c", LEG_KILLER, str(path), mode,
                               *map(str, deadly["genome"]), how, leg, name], env=env,
                              cwd=str(repo), capture_output=True, text=True, timeout=60)

    for how, deaths in (("new", 1), ("resume", 2)):   # killed on the same leg, twice
        done = attempt(how)
        assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr
        with Journal(path) as journal:
            assert journal.attempts(told=True) == {deadly["candidate"]: deaths}
    done = attempt("resume")
    assert done.returncode == 0, done.stdout + done.stderr
    with Journal(path) as journal:
        after, after_legs = journal.evaluations(), journal.legs()
        assert journal.state() == "finished" and journal.attempts(told=True) == {}
    assert len(after) == 12
    its_legs = [row for row in after_legs if row["candidate"] == deadly["candidate"]]
    assert its_legs[-1]["status"] == "failed" and its_legs[-1]["decision"] in ("stop", "done")
    assert "the run stopped 2 times in a row" in its_legs[-1]["error"]
    assert [row["status"] for row in its_legs[:-1]] == ["ok"] * (len(its_legs) - 1)
    assert (its_legs[-1]["start_epochs"] > 0) == (leg == "promoted")
    # no other candidate's leg failed: the run went on past the deadly one
    assert all(row["status"] == "ok" or "toy failure" in row["error"] for row in after_legs
               if row["candidate"] != deadly["candidate"])
