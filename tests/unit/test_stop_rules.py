"""Stopping rules: parsed without eval, refused when they name what nobody records, and ending
a candidate's training at the epoch (or step) where they hold, also under a scheduler."""
import math

import pytest

from nord.app.settings import RunConfig
from nord.data import Digits
from nord.errors import ConfigurationError
from nord.evaluators.base import Leg
from nord.evaluators.callbacks import TrainingCallback
from nord.evaluators.stop_rules import StopRule, first_firing, parse_rules
from nord.journal import Journal
from nord.search.algorithms.random_search import RandomSearch
from nord.search.engine import run_search
from nord.search.schedulers import make_scheduler
from nord.search.spaces import make_space
from tests.helpers.watching import evaluator, net


@pytest.fixture(scope="module")
def digits():
    return Digits(seed=0)


@pytest.mark.parametrize("rule, values, holds", [
    ("dead_relu > 0.9", {"dead_relu": 0.95}, True),
    ("dead_relu > 0.9", {"dead_relu": 0.9}, False),
    ("dead_relu > 0.9", {}, False),                         # no value yet: does not hold
    ("not finite(loss)", {"loss": math.inf}, True),
    ("not finite(loss)", {"loss": math.nan}, True),
    ("not finite(loss)", {"loss": 2.0}, False),
    ("not finite(loss)", {}, False),
    ("a > 1 or b > 1 and c > 1", {"a": 2, "b": 0, "c": 0}, True),    # and binds tighter
    ("(a > 1 or b > 1) and c > 1", {"a": 2, "b": 0, "c": 0}, False),
    ("not a >= 1e-3", {"a": 1e-4}, True),
    ("grad_norm/conv.0 <= -inf or x != nan", {"grad_norm/conv.0": 1.0, "x": 1.0}, True),
    ("epoch == 2", {"epoch": 2.0}, True),
])
def test_rules_hold_as_written(rule, values, holds):
    assert StopRule(rule).fires(values) is holds


@pytest.mark.parametrize("rule, words", [
    ("__import__('os').system('true')", "cannot read"),
    ("loss > 1; x", "cannot read"),
    ("loss >", "expected a name or a number"),
    ("loss", "needs an operator"),
    ("(loss > 1", "not closed"),
    ("finite loss", "finite takes one name"),
    ("", "a stopping rule is text"),
])
def test_rules_that_do_not_parse_are_refused_saying_how_to_write_one(rule, words):
    with pytest.raises(ConfigurationError, match=words) as refusal:
        StopRule(rule)
    assert "dead_relu > 0.9" in str(refusal.value)


def test_a_rule_naming_what_nobody_records_is_refused_before_the_run(digits):
    with pytest.raises(ConfigurationError, match="'dead_relu', which nothing records.*--callbacks"):
        evaluator(digits, stop_rules=["dead_relu > 0.9"])
    with pytest.raises(ConfigurationError, match="'dead_relux', which nothing records"):
        RunConfig(callbacks=["dead_relu"], stop_when=["dead_relux > 0.9"])
    config = RunConfig(callbacks=["dead_relu"], stop_when="dead_relu/relu > 0.9")
    assert config.stop_when == ["dead_relu/relu > 0.9"]
    with pytest.raises(ConfigurationError, match="trains nothing"):
        RunConfig(space="nasbench201", stop_when=["train_loss > 0"])


@pytest.mark.parametrize("rule", ["0 < 1", "1 > 0 and 2 > 1", "not (0 > 1)", "inf > 0",
                                  "nan != nan", "(1 == 1) or 2 < 1"])
def test_a_rule_naming_no_scalar_is_refused(rule):
    with pytest.raises(ConfigurationError, match="names no scalar.*'dead_relu > 0.9'"):
        StopRule(rule)
    with pytest.raises(ConfigurationError, match="names no scalar"):
        RunConfig(stop_when=[rule])


@pytest.mark.parametrize("name", ["test_accuracy", "test_loss", "accuracy", "seconds"])
def test_a_rule_naming_a_figure_measured_after_training_is_refused(digits, name):
    with pytest.raises(ConfigurationError, match=f"'{name}', which nord measures only after"):
        evaluator(digits, stop_rules=[f"{name} > 0.5"])
    with pytest.raises(ConfigurationError, match=f"'{name}', which nord measures only after"):
        RunConfig(callbacks=["dead_relu"], stop_when=[f"dead_relu > 0.5 or {name} > 0.5"])


@pytest.mark.parametrize("rule", ["loss > 10", "loss < 0.01 and epoch > 1"])
def test_a_rule_on_a_steps_loss_that_no_step_checks_is_refused(digits, rule):
    with pytest.raises(ConfigurationError, match="names 'loss'.*compare train_loss"):
        evaluator(digits, stop_rules=[rule])
    with pytest.raises(ConfigurationError, match="names 'loss'"):
        RunConfig(stop_when=[rule])
    evaluator(digits, stop_rules=[f"{rule} or not finite(loss)"])   # checked at steps: taken


def test_first_firing_takes_the_first_rule_that_holds():
    rules = parse_rules(["a > 5", "not finite(b)", lambda values: values.get("a", 0) > 1])
    assert first_firing(rules, {"a": 2, "b": 1}).text == "<lambda>"
    assert first_firing(rules, {"a": 2, "b": math.nan}).text == "not finite(b)"
    assert first_firing(rules, {"a": 9, "b": math.nan}, finite_only=True).text == "not finite(b)"
    # checked at steps too: those testing finite() or reading the NaN/inf watch
    assert [StopRule(r).checks_finite for r in ("nonfinite > 0", "nonfinite/grad > 3",
                                                "loss > 3", "finite(x)")] == [True, True,
                                                                              False, True]


def test_a_rule_ends_training_at_the_epoch_it_holds(digits):
    records = []
    result = evaluator(digits, epochs=4, stop_rules=["train_loss > 0"]).descriptor_evaluate(
        net(), Leg(report=records.append))
    assert result.ok and result.epochs == 1 and [r.epoch for r in records] == [1]
    assert result.accuracy == records[0].valid_accuracy
    assert result.metrics["stopped_by"] == {"rule": "train_loss > 0", "epoch": 1, "step": None,
                                            "trained": 1}
    called = evaluator(digits, epochs=4, stop_rules=[lambda v: v["epoch"] >= 3])
    assert called.descriptor_evaluate(net()).epochs == 3


class Blows(TrainingCallback):
    """Publishes x every step; x is infinite at step 3 of epoch 2."""

    name = "blows"
    produces = ("x",)
    every_steps = 1

    def on_step(self, state):
        return {"x": math.inf if (state.epoch, state.step) == (2, 3) else 1.0}


def test_a_finite_watch_ends_training_at_the_step(digits):
    records = []
    result = evaluator(digits, [Blows], epochs=3, stop_rules=["not finite(x)"]).descriptor_evaluate(
        net(), Leg(report=records.append))
    assert result.ok and result.epochs == 1 and [r.epoch for r in records] == [1]
    assert result.accuracy == records[0].valid_accuracy       # the last validation figure
    assert result.metrics["stopped_by"]["epoch"] == 2 and result.metrics["stopped_by"]["step"] == 3


def test_a_diverging_candidate_stops_instead_of_failing_when_a_rule_says_so(digits):
    kwargs = dict(epochs=2, optimizer="sgd", lr=1e6)
    assert evaluator(digits, **kwargs).descriptor_evaluate(net()).status == "failed"
    result = evaluator(digits, stop_rules=["not finite(loss)"], **kwargs).descriptor_evaluate(net())
    assert result.ok and result.epochs == 0
    assert result.metrics["stopped_by"]["rule"] == "not finite(loss)"


def test_rules_compose_with_asha_and_replay_on_resume(digits, tmp_path):
    space = make_space("conv", layers=2, channels=(2, 6), kernel_size=(1, 3))

    def run(path, budget, resume=False):
        return run_search(RandomSearch(space, seed=3),
                          evaluator(digits, [Rate], epochs=3,
                                    stop_rules=["valid_accuracy < 0.11"]),
                          budget=budget, mode="async", journal=str(path), resume=resume,
                          scheduler=make_scheduler("asha", min_epochs=1, max_epochs=3))

    def legs(path):
        with Journal(path) as journal:
            return [(leg["candidate"], leg["target_epochs"], leg["decision"],
                     bool((leg["result"] or {}).get("metrics", {}).get("stopped_by")))
                    for leg in journal.legs()]

    run(tmp_path / "whole.db", 8)
    whole = legs(tmp_path / "whole.db")
    assert any(stopped for *_, stopped in whole) and not all(stopped for *_, stopped in whole)
    assert all(decision == "stop" for *_, decision, stopped in whole if stopped)
    run(tmp_path / "halves.db", 4)
    run(tmp_path / "halves.db", 8, resume=True)
    assert legs(tmp_path / "halves.db") == whole
    with Journal(tmp_path / "whole.db") as journal:   # each point names the leg that trained it
        spans = {leg["leg"]: (leg["candidate"], leg["start_epochs"], leg["target_epochs"])
                 for leg in journal.legs()}
        series = journal.series()
    assert {row["epoch"] for row in series} == {1, 2, 3}
    for row in series:
        number, start, target = spans[row["leg"]]
        assert number == row["candidate"] and start < row["epoch"] <= target


class Rate(TrainingCallback):
    name = "rate"
    every_steps = 5

    def on_step(self, state):
        return {"rate": state.metrics["lr"]}


def test_runs_without_rules_record_what_journals_before_them_did():
    """A journal written before rules existed resumes: unset, the new settings are left out
    of what the run records as its measuring settings."""
    plain = RunConfig().measured()
    assert "stop_when" not in plain and "strict_callbacks" not in plain
    ruled = RunConfig(stop_when=["train_loss > 0"], strict_callbacks=True).measured()
    assert ruled["stop_when"] == ["train_loss > 0"] and ruled["strict_callbacks"] is True
