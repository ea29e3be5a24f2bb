"""Under a scheduler a candidate trains in legs, and a stopping rule or a training callback
may speak in any of them: `nord list`, the journal's summary and the report count what
every leg said, not only the leg whose result the candidate was told or ended with."""
import json

import pytest

from nord.app.cli import main
from nord.evaluators.result import EvaluationResult
from nord.journal import Journal
from nord.report import write_report
from nord.search.algorithms.random_search import RandomSearch
from nord.search.engine import run_search
from nord.search.schedulers import make_scheduler
from tests.helpers.toy import ToyCurves, ToySpace

# full searches under ASHA and hyperband in several modes: in make test, not the fast lane
pytestmark = pytest.mark.slow


class Speaking(ToyCurves):
    """ToyCurves whose stopping rule holds for odd widths once a leg reaches 3 epochs (a
    promoted leg), and whose callback raises in every first leg of widths 2 and 4."""

    def evaluate_task(self, task):
        result = super().evaluate_task(task)
        width = next(layer for layer in task.descriptor.layers.values()
                     if layer.type == "conv2d").params["out_channels"]
        target = task.epochs if task.epochs is not None else self.max_epochs
        if result.ok and width % 2 and target >= 3:
            result.metrics["stopped_by"] = {"rule": "toy > 0", "epoch": target, "step": None}
        if result.ok and width in (2, 4) and task.resume_from is None:
            result.metrics["diagnostics"] = ["callback 'toy' raised ValueError: in leg one"]
        return result


def said_by_legs(path):
    """(candidates, legs) that a stopping rule ended and that a callback raised in,
    counted from the legs themselves."""
    with Journal(path) as journal:
        legs = [leg for leg in journal.legs() if leg["result"] is not None]
    stopped = [leg for leg in legs if leg["result"]["metrics"].get("stopped_by")]
    diagnosed = [leg for leg in legs if leg["result"]["metrics"].get("diagnostics")]
    return ((len({leg["candidate"] for leg in stopped}), len(stopped)),
            (len({leg["candidate"] for leg in diagnosed}), len(diagnosed)))


@pytest.mark.parametrize("name, mode, seed", [("asha", "async", 0), ("asha", "async", 3),
                                              ("hyperband", "sync", 1),
                                              ("hyperband", "async", 2)])
def test_every_leg_is_counted_in_the_list_and_the_report(tmp_path, capsys, name, mode, seed):
    path = tmp_path / "r.db"
    run_search(RandomSearch(ToySpace(), seed=seed), Speaking(max_epochs=9), budget=24,
               mode=mode, journal=path,
               scheduler=make_scheduler(name, min_epochs=1, max_epochs=9, eta=3))
    (stopped, stopped_legs), (diagnosed, diagnosed_legs) = said_by_legs(path)
    with Journal(path) as journal:
        told = journal.evaluations(told=True)
        summary = journal.summary()
    told_stops = sum(bool(row["metrics"].get("stopped_by")) for row in told)
    told_diagnosed = sum(bool(row["metrics"].get("diagnostics")) for row in told)
    assert (told_stops, told_diagnosed) != (stopped, diagnosed)   # the case under test
    assert stopped and diagnosed
    assert (summary["stopped_by_rules"], summary["stopped_legs"]) == (stopped, stopped_legs)
    assert (summary["diagnosed"], summary["diagnosed_legs"]) == (diagnosed, diagnosed_legs)

    capsys.readouterr()
    assert main(["list", str(path)]) == 0
    listed = capsys.readouterr().out
    assert (f"  {stopped} candidate(s) ended early by a stopping rule (--stop-when), in "
            f"{stopped_legs} leg(s) of training") in listed
    assert (f"  {diagnosed} candidate(s) with a training callback's diagnostic, in "
            f"{diagnosed_legs} leg(s) of training") in listed

    page = write_report([path], tmp_path / "report").read_text()
    run = json.loads((tmp_path / "report" / "summary.json").read_text())["runs"][0]
    assert ((run["stopped_by_rules"], run["stopped_legs"], run["diagnosed"],
             run["diagnosed_legs"]) == (stopped, stopped_legs, diagnosed, diagnosed_legs))
    assert (f"Candidates ended early by a stopping rule: {stopped}, in {stopped_legs} leg(s) "
            "of training") in page
    assert page.count("stopped by the rule") == stopped_legs


def test_without_a_scheduler_a_cached_repeat_is_not_counted_again(tmp_path, capsys):
    """A repeat of an architecture reuses its result and trains nothing: the rule ended one
    candidate's training, however often its architecture was proposed again."""
    path = tmp_path / "r.db"
    run_search(RandomSearch(ToySpace(), seed=0), Speaking(max_epochs=3), budget=40,
               journal=path)
    with Journal(path) as journal:
        rows = journal.evaluations(told=True)
        summary = journal.summary()
    stopped = [row for row in rows if row["metrics"].get("stopped_by")]
    assert any(row["cached"] for row in stopped)                  # the case under test
    assert summary["stopped_by_rules"] == sum(not row["cached"] for row in stopped)
    assert summary["stopped_legs"] == 0
    capsys.readouterr()
    assert main(["list", str(path)]) == 0
    assert (f"  {summary['stopped_by_rules']} candidate(s) ended early by a stopping rule "
            "(--stop-when)\n") in capsys.readouterr().out


class FailsWhenPromoted(ToyCurves):
    """ToyCurves whose odd widths fail in every leg after their first (out of memory, say)."""

    def evaluate_task(self, task):
        width = next(layer for layer in task.descriptor.layers.values()
                     if layer.type == "conv2d").params["out_channels"]
        if task.resume_from is not None and width % 2:
            return EvaluationResult.failure("toy: out of memory in a promoted leg")
        return super().evaluate_task(task)


@pytest.mark.parametrize("name, mode", [("asha", "async"), ("hyperband", "async")])
def test_a_promoted_leg_that_fails_is_a_failure_in_the_list_and_the_report(tmp_path, capsys,
                                                                           name, mode):
    """A candidate told ok at its first rung whose promoted leg failed ends failed: the
    failures `nord list` and the report count are those of the candidates' final results."""
    path = tmp_path / "r.db"
    run_search(RandomSearch(ToySpace(), seed=0), FailsWhenPromoted(max_epochs=9), budget=24,
               mode=mode, journal=path,
               scheduler=make_scheduler(name, min_epochs=1, max_epochs=9, eta=3))
    with Journal(path) as journal:
        told = journal.evaluations(told=True)
        final = journal.evaluations()
        summary = journal.summary()
    failed = sum(row["status"] != "ok" for row in final)
    assert failed > sum(row["status"] != "ok" for row in told)   # the case under test
    assert (summary["ok"], summary["failed"]) == (len(final) - failed, failed)
    capsys.readouterr()
    assert main(["list", str(path)]) == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert line.split()[3:5] == [f"{len(told)}/24", str(failed)]
    write_report([path], tmp_path / "report")
    run = json.loads((tmp_path / "report" / "summary.json").read_text())["runs"][0]
    assert run["failed"] == sum(g["failed"] for g in run["per_generation"]) == failed
