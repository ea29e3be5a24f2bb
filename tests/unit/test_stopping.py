"""One rule for when a run stops asking: evaluations, running time over resumes, a target."""
import sqlite3
import time

import pytest

from nord.app.cli import main
from nord.app.settings import RunConfig
from nord.errors import ConfigurationError
from nord.journal import Journal
from nord.search.algorithms.random_search import RandomSearch
from nord.search.engine import run_search
from nord.checks import check_duration
from nord.search.engine.stopping import Stopping, format_duration
from nord.search.schedulers import make_scheduler
from tests.helpers.toy import ToyCurves, ToyEvaluator, ToySpace, toy_accuracy


class Clock:
    """A monotonic clock that moves only when an evaluation says so."""

    def __init__(self):
        self.now = time.monotonic()

    def __call__(self):
        return self.now


class Timed(ToyEvaluator):
    """Each evaluation takes ``seconds`` of ``clock``."""

    def __init__(self, clock, seconds=1.0):
        super().__init__()
        self.clock, self.seconds = clock, seconds

    def _evaluate(self, descriptor):
        self.clock.now += self.seconds
        return super()._evaluate(descriptor)


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(time, "monotonic", fake)   # the engine's and the journal's clock
    return fake


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("30m", 1800), ("8h", 28800),
                                           ("1.5d", 129600), ("20", 20), (2.5, 2.5),
                                           (" 45S ", 45)])
def test_durations_are_read_as_people_write_them(text, seconds):
    assert check_duration(text) == seconds


@pytest.mark.parametrize("text", ["0", "-5s", "abc", "5x", "", "inf", "nan", True, "s"])
def test_a_duration_that_is_not_one_is_refused_saying_what_is_taken(text):
    with pytest.raises(ConfigurationError, match=r"--time-budget takes a positive duration such "
                                                 r"as 90s, 30m, 8h or 1.5d"):
        check_duration(text)


def test_budgets_are_shown_as_they_were_given():
    assert [format_duration(s) for s in (20, 90, 1800, 28800, 5400)] == [
        "20 s", "1.5 min", "30 min", "8 h", "1.5 h"]


def test_running_time_adds_the_earlier_sessions():
    now = [100.0]
    stopping = Stopping(10, time_budget=30, clock=lambda: now[0])
    stopping.start(spent_before=25.0)
    assert stopping.limit() is None
    now[0] += 5
    assert stopping.running_time() == 30.0
    assert stopping.limit() == "the time budget of 30 s was spent (30.0 s of running time)"


def test_stopping_refuses_limits_that_are_not_numbers():
    for kwargs in ({"time_budget": 0}, {"time_budget": "1h"}, {"target": float("nan")},
                   {"target": True}):
        with pytest.raises(ConfigurationError):
            Stopping(10, **kwargs)


def test_a_time_budget_ends_the_run_as_finished_and_says_so(tmp_path, clock):
    summary = run_search(RandomSearch(ToySpace(), seed=0), Timed(clock), budget=1000,
                         journal=tmp_path / "r.db", time_budget=5)
    assert summary.evaluated == 5 and summary.evaluations < 1000
    assert summary.stopped_by == "the time budget of 5 s was spent (5.0 s of running time)"
    assert summary.running_time == 5
    with Journal(tmp_path / "r.db") as journal:
        meta = journal.metadata()
        assert (meta["status"], meta["status_detail"]) == ("finished", summary.stopped_by)
        assert journal.running_seconds() == 5


def test_a_resume_extends_the_time_budget_counting_the_earlier_sessions(tmp_path, clock):
    run_search(RandomSearch(ToySpace(), seed=0), Timed(clock), budget=1000,
               journal=tmp_path / "r.db", time_budget=4)
    clock.now += 1000          # the time between sessions does not count
    summary = run_search(RandomSearch(ToySpace(), seed=0), Timed(clock), budget=1000,
                         journal=tmp_path / "r.db", time_budget=7, resume=True)
    assert summary.evaluated == 3 and summary.running_time == 7
    with Journal(tmp_path / "r.db") as journal:
        assert journal.running_seconds() == 7


def test_the_evaluation_budget_is_said_when_it_ends_the_run(tmp_path):
    summary = run_search(RandomSearch(ToySpace(), seed=0), ToyEvaluator(), budget=3,
                         time_budget=3600)
    assert summary.stopped_by == "the evaluation budget of 3 was spent"


def test_a_target_ends_the_run_once_a_told_result_reaches_it(tmp_path):
    target = toy_accuracy(5, 1)    # 38 % 17 / 17: reached by few architectures
    summary = run_search(RandomSearch(ToySpace(), seed=0), ToyEvaluator(), budget=1000,
                         target=target, journal=tmp_path / "r.db")
    assert summary.best_result.accuracy >= target
    assert summary.stopped_by == (f"the target accuracy {target:g} was reached by candidate "
                                  f"{summary.best.number}")
    with Journal(tmp_path / "r.db") as journal:
        rows = journal.evaluations()
    assert [row["accuracy"] >= target for row in rows].count(True) == 1
    assert rows[-1]["accuracy"] >= target     # nothing was asked after it (serial, sync)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_target_reached_by_the_result_that_spends_the_budget_is_said(tmp_path, mode):
    """No ask comes between that result and the end of the run, yet the target reached is
    what the run says (and the budget too), and what its journal keeps."""
    target = toy_accuracy(5, 1)
    unlimited = run_search(RandomSearch(ToySpace(), seed=0), ToyEvaluator(), budget=1000,
                           target=target, mode=mode)
    budget = unlimited.evaluations          # the result that reaches the target is the last
    summary = run_search(RandomSearch(ToySpace(), seed=0), ToyEvaluator(), budget=budget,
                         target=target, mode=mode, journal=tmp_path / "r.db")
    assert summary.evaluations == budget and summary.best_result.accuracy >= target
    assert summary.stopped_by == (f"the target accuracy {target:g} was reached by candidate "
                                  f"{summary.best.number} (and the evaluation budget of "
                                  f"{budget} was spent)")
    with Journal(tmp_path / "r.db") as journal:
        assert journal.metadata()["status_detail"] == summary.stopped_by


def test_nord_resume_of_a_run_whose_last_result_reached_the_target_has_nothing_left(
        tmp_path, capsys):
    """Its closing line names the target; resuming it names both limits it reached, the
    target and the budget, and one resume that raises both goes on (the same target:
    nothing to do, the journal untouched)."""
    journal = str(tmp_path / "r.db")
    run = ["run", "--space", "nasbench201", "--target", "0.84", "--journal"]
    assert main(run + [str(tmp_path / "long.db"), "--budget", "100"]) == 0
    with Journal(str(tmp_path / "long.db")) as record:
        budget = record.count()             # the target ended it after this many
    capsys.readouterr()
    assert main(run + [journal, "--budget", str(budget)]) == 0
    assert (f"stopped: the target accuracy 0.84 was reached by candidate {budget - 1} (and the "
            f"evaluation budget of {budget} was spent)") in capsys.readouterr().out
    before = _row(journal)
    assert main(["resume", journal]) == 0
    said = capsys.readouterr().out
    assert "reached the target accuracy 0.84" in said
    assert f"raise all of them in one resume: nord resume {journal} --target X --budget N" in said
    assert main(["resume", journal, "--target", "0.99"]) == 0
    assert f"raise it: nord resume {journal} --budget N, with N > {budget}" in (
        capsys.readouterr().out)
    assert _row(journal) == before
    assert main(["resume", journal, "--target", "0.99", "--budget", str(budget + 2)]) == 0
    with Journal(journal) as record:
        assert record.count() == budget + 2


def test_resuming_a_run_that_both_limits_ended_names_both_and_one_resume_raises_them(
        tmp_path, capsys):
    journal = str(tmp_path / "r.db")
    assert main(["run", "--space", "nasbench201", "--budget", "4", "--journal", journal]) == 0
    capsys.readouterr()
    before = _row(journal)
    # a time budget below the running time it has had: both limits hold
    assert main(["resume", journal, "--time-budget", "0.000001s"]) == 0
    said = capsys.readouterr().out
    assert "time budget of 1e-06 s is spent" in said and "budget of 4 evaluations is used" in said
    assert (f"raise all of them in one resume: nord resume {journal} --time-budget T --budget N, "
            "with T over 1s and N > 4") in said
    assert _row(journal) == before
    assert main(["resume", journal, "--time-budget", "1s", "--budget", "6"]) == 0
    with Journal(journal) as record:
        assert record.count() == 6


def test_no_promotion_starts_once_the_time_budget_is_spent(tmp_path, clock):
    class Curves(ToyCurves):
        def evaluate_task(self, task):
            clock.now += 1
            return super().evaluate_task(task)

    summary = run_search(RandomSearch(ToySpace(), seed=0), Curves(max_epochs=9), budget=1000,
                         mode="async", time_budget=6, journal=tmp_path / "r.db",
                         scheduler=make_scheduler("asha", min_epochs=1, max_epochs=9, eta=3))
    assert summary.legs == 6 and "time budget" in summary.stopped_by


def test_run_config_reads_the_budget_and_checks_the_target():
    assert RunConfig(time_budget="2h").time_budget == 7200
    assert RunConfig(target=0.9).target == 0.9
    for target in (0, 1.5, "high", True):
        with pytest.raises(ConfigurationError, match=r"target \(--target\) is a search-signal "
                                                     r"accuracy in \(0, 1\]"):
            RunConfig(target=target)
    with pytest.raises(ConfigurationError, match="time_budget"):
        RunConfig(time_budget="soon")


def _row(path):
    connection = sqlite3.connect(path)
    try:
        return connection.execute("SELECT * FROM run").fetchone()
    finally:
        connection.close()


@pytest.mark.slow
def test_nord_run_with_a_time_budget_ends_by_itself_and_resume_extends_it(tmp_path, capsys):
    journal = str(tmp_path / "r.db")
    assert main(["run", "--space", "nasbench201", "--budget", "100000000", "--time-budget",
                 "1s", "--journal", journal]) == 0
    out = capsys.readouterr().out
    assert "stopped: the time budget of 1 s was spent" in out
    with Journal(journal) as record:
        first = record.count()
        assert 0 < first < 100000000 and record.state() == "finished"
    before = _row(journal)
    assert main(["resume", journal]) == 0          # nothing left: the journal is untouched
    assert "in which its time budget of 1 s is spent" in capsys.readouterr().out
    assert _row(journal) == before
    assert main(["resume", journal, "--time-budget", "2s"]) == 0
    assert "stopped: the time budget of 2 s was spent" in capsys.readouterr().out
    with Journal(journal) as record:
        assert record.count() > first and 2 <= record.running_seconds() < 3
