"""What a running search shows: a live bar on a terminal, a line now and then elsewhere, and
one closing line whose counts add up."""
import io
import re

import pytest

from nord.app.search_progress import SearchProgressView
from nord.search.engine import run_search
from nord.search.algorithms.random_search import RandomSearch
from nord.search.schedulers import make_scheduler
from tests.helpers.toy import ToyCurves, ToyEvaluator, ToySpace


class Terminal(io.StringIO):
    def isatty(self):
        return True


class Clock:
    """Each reading is ``step`` seconds after the previous one."""

    def __init__(self, step):
        self.now, self.step = 0.0, step

    def __call__(self):
        self.now += self.step
        return self.now


def search(view, budget=40, mode="sync", evaluator=None, **options):
    summary = run_search(RandomSearch(ToySpace(), seed=1), evaluator or ToyEvaluator(),
                         budget=budget, mode=mode, on_result=view.result, on_epoch=view.epoch,
                         **options)
    view.close(summary)
    return summary


def test_off_a_terminal_a_line_is_written_at_most_every_interval():
    stream = io.StringIO()
    view = SearchProgressView(40, stream=stream, interval=30.0, clock=Clock(10.0))
    search(view)
    lines = stream.getvalue().splitlines()
    progress = [line for line in lines if "/40 evaluations" in line]
    # results read the clock at 10, 20, ..., 400 s: a line at the first, then every 30 s
    assert len(progress) == 14, lines
    assert progress[0].startswith("generation 0 | 1/40 evaluations")
    assert len(lines) == len(progress) + 1 and lines[-1].startswith("done: ")


def test_a_quick_run_off_a_terminal_writes_one_line_and_the_closing_line():
    stream = io.StringIO()
    search(SearchProgressView(40, stream=stream))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "1/40 evaluations" in lines[0] and lines[1].startswith("done: ")


def test_the_closing_counts_add_up_and_name_the_split_of_the_best_accuracy():
    stream = io.StringIO()
    summary = search(SearchProgressView(40, signal="validation accuracy", stream=stream))
    closing = stream.getvalue().splitlines()[-1]
    total, parts, failed = re.match(r"done: (\d+) evaluations \(([^;]*); (\d+) failed\)",
                                    closing).groups()
    counted = sum(int(part.split()[0]) for part in parts.split(", "))
    assert int(total) == counted == 40
    assert int(failed) == summary.failed > 0   # the toy's (1, 1) always fails
    best = summary.best_result
    assert (f"best: candidate {summary.best.number}, validation accuracy {best.accuracy:.4f}, "
            f"test accuracy {best.reported_accuracy:.4f}") in closing


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_on_a_terminal_one_bar_is_redrawn_in_place(mode):
    stream = Terminal()
    search(SearchProgressView(40, mode=mode, stream=stream), mode=mode,
           evaluator=ToyEvaluator(sleep=0.03))   # long enough for the bar to redraw
    shown = stream.getvalue()
    # one bar redrawn in place (carriage returns), cleared, then the one closing line
    assert shown.count("\n") == 1 and shown.endswith("\n"), repr(shown[:500])
    segments = shown.split("\r")
    assert segments[-1].startswith("done: 40 evaluations")
    redraws = [part for part in segments if "/40 evaluations |" in part]
    assert len(redraws) >= 3 and "best 0." in redraws[-1]
    assert "failed" in redraws[-1] and "left" in redraws[-1] and "eval/s" in redraws[-1]
    # an asynchronous run has no generation that moves forward, so none is shown
    assert ("generation" in shown) == (mode == "sync")


def test_the_bar_names_the_candidate_and_epoch_being_trained():
    stream = Terminal()
    search(SearchProgressView(12, mode="async", stream=stream), budget=12, mode="async",
           evaluator=ToyCurves(max_epochs=9),
           scheduler=make_scheduler("asha", min_epochs=1, max_epochs=9, eta=3))
    assert re.search(r"training candidate \d+ epoch [1-9]", stream.getvalue())


def test_a_scheduled_run_closes_with_the_epochs_it_trained_and_the_checkpoints_peak():
    stream, evaluator = io.StringIO(), ToyCurves(max_epochs=9)
    summary = search(SearchProgressView(12, mode="async", stream=stream), budget=12,
                     mode="async", evaluator=evaluator,
                     scheduler=make_scheduler("asha", min_epochs=1, max_epochs=9, eta=3))
    closing = stream.getvalue().splitlines()[-1]
    assert summary.epochs_trained == evaluator.epochs_trained
    assert (f"; {evaluator.epochs_trained} epochs trained in {summary.legs} legs, "
            "checkpoints peaked at ") in closing


def test_a_resumed_run_counts_what_came_from_the_journal(tmp_path):
    journal = str(tmp_path / "run.db")
    search(SearchProgressView(20, stream=io.StringIO()), budget=20, journal=journal)
    stream = io.StringIO()
    search(SearchProgressView(20, stream=stream), budget=20, journal=journal, resume=True)
    assert "done: 20 evaluations (20 from the journal; " in stream.getvalue()
