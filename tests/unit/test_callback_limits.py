"""What a training callback cannot do unseen: shadow nord's own figures (in the journal and in
what stopping rules read), record unnamed or too many scalars, change the optimizer's settings
or the weights, or end the run with ``sys.exit``; and what it is given in epochs shorter than
its sampling."""
import math

import pytest
import torch

from nord.data import Digits
from nord.evaluators import watch as watch_module
from nord.evaluators.base import Leg
from nord.evaluators.callbacks import TrainingCallback
from nord.evaluators.subscribers import Histograms
from nord.journal import Journal
from tests.helpers.watching import evaluator, figures, net


@pytest.fixture(scope="module")
def digits():
    return Digits(seed=0)


@pytest.fixture(scope="module")
def plain(digits):
    return figures(evaluator(digits).descriptor_evaluate(net()))


def returning(values, hook="on_epoch_end", every_steps=None):
    """A callback class whose ``hook`` returns ``values``."""
    class Returns(TrainingCallback):
        name = "returns"

    Returns.every_steps = every_steps
    setattr(Returns, hook, lambda self, state: dict(values))
    return Returns


def train(digits, callbacks, **kwargs):
    records = []
    result = evaluator(digits, callbacks, **kwargs).descriptor_evaluate(
        net(), Leg(report=records.append))
    assert result.ok, result.error
    return result, records


@pytest.mark.parametrize("name", ["train_loss", "valid_accuracy", "valid_loss", "epoch", "loss",
                                  "lr", "accuracy", "test_accuracy", "test_loss", "seconds"])
def test_a_scalar_named_as_a_built_in_figure_is_left_out_and_said(digits, plain, name):
    result, records = train(digits, [returning({name: 0.999, "returns/kept": 1.0})])
    assert figures(result) == plain
    assert all(name not in r.metrics and r.metrics["returns/kept"] == 1.0 for r in records)
    note, = result.metrics["diagnostics"]   # said once, not every epoch
    assert f"returned {name!r} in on_epoch_end at epoch 1" in note
    assert "'returns/<name>'" in note


@pytest.mark.parametrize("name", ["loss", "lr", "train_loss"])
def test_a_step_scalar_named_as_a_built_in_figure_is_no_series(digits, name):
    result, records = train(digits, [returning({name: 5.0, "returns/x": 1.0}, "on_step", 2)])
    names = {point[1] for r in records for point in r.series}
    assert names == {"returns/x"}
    assert f"returned {name!r} in on_step" in result.metrics["diagnostics"][0]


@pytest.mark.parametrize("name, rule, shadow", [
    ("valid_accuracy", "valid_accuracy > 0.999", 1.0),
    ("train_loss", "train_loss < 1e-6", 0.0),
    ("valid_loss", "valid_loss < 1e-6", 0.0),
    ("lr", "lr > 1", 10.0),
    ("epoch", "epoch > 100", 1000.0),
])
def test_rules_on_built_in_names_read_the_real_figures(digits, name, rule, shadow):
    result, _ = train(digits, [returning({name: shadow})], epochs=3, stop_rules=[rule])
    assert "stopped_by" not in result.metrics and result.epochs == 3


@pytest.mark.parametrize("rule", ["lr < 1", "lr == 0.001"])
def test_a_rule_on_lr_holds_at_an_epochs_end_without_callbacks(digits, rule):
    result, _ = train(digits, [], epochs=3, stop_rules=[rule])
    assert result.metrics["stopped_by"]["epoch"] == 1 and result.epochs == 1


@pytest.mark.parametrize("shadow", [math.nan, math.inf])
def test_a_step_rule_on_loss_reads_the_real_loss(digits, shadow):
    result, _ = train(digits, [returning({"loss": shadow}, "on_step", 1)],
                      stop_rules=["not finite(loss)"])
    assert "stopped_by" not in result.metrics and result.epochs == 2


@pytest.mark.parametrize("key", [1, 2.5, ("a", 1), None])
def test_keys_that_are_not_names_are_left_out_and_said(digits, key):
    result, records = train(digits, [returning({key: 1.0, "returns": 2.0})])
    assert all(r.metrics == {"returns": 2.0} for r in records)
    assert f"returned {key!r} ({type(key).__name__})" in result.metrics["diagnostics"][0]


def test_a_scalar_another_callback_records_is_left_out_and_said(digits):
    class First(TrainingCallback):
        name = "first"

        def on_epoch_end(self, state):
            return {"shared": 1.0}

    class Second(First):
        name = "second"

        def on_epoch_end(self, state):
            return {"shared": 2.0, "second": 3.0}

    result, records = train(digits, [First, Second])
    assert all(r.metrics == {"shared": 1.0, "second": 3.0} for r in records)
    note, = result.metrics["diagnostics"]
    assert "'second'" in note and "'shared'" in note and "another callback" in note


@pytest.mark.parametrize("hook, every", [("on_epoch_end", None), ("on_step", 3)])
def test_too_many_scalars_are_capped_and_said(digits, monkeypatch, hook, every):
    monkeypatch.setattr(watch_module, "MAX_SCALARS", 5)
    many = {f"returns/{i:03d}": float(i) for i in range(40)}
    result, records = train(digits, [returning(many, hook, every)])
    for record in records:
        if hook == "on_epoch_end":
            assert list(record.metrics) == list(many)[:5]
        else:
            steps = {point[0] for point in record.series}
            assert all(len([p for p in record.series if p[0] == step]) == 5 for step in steps)
    note, = result.metrics["diagnostics"]
    assert "'returns/005'" in note and "and 32 more" in note and "5 scalars" in note


def changing(change, hook="on_epoch_end"):
    class Changes(TrainingCallback):
        name = "changes"
        every_steps = 4 if hook == "on_step" else None

    def call(self, state):
        with torch.no_grad():
            change(state)
    setattr(Changes, hook, call)
    return Changes


def set_group(key, value):
    def change(state):
        state.optimizer.param_groups[0][key] = value
    return change


@pytest.mark.parametrize("optimizer, key, value", [
    ("adam", "lr", 0.5), ("sgd", "lr", 0.5), ("sgd", "momentum", 0.5),
    ("adam", "weight_decay", 0.1), ("adamw", "betas", (0.5, 0.6)),
])
@pytest.mark.parametrize("hook", ["on_epoch_end", "on_step", "on_candidate_start"])
def test_a_callback_that_changes_the_optimizer_is_said(digits, optimizer, key, value, hook):
    result, _ = train(digits, [changing(set_group(key, value), hook)], optimizer=optimizer)
    note, = result.metrics["diagnostics"]
    assert f"'changes' (Changes) changed the optimizer's {key} from" in note
    assert f"to {value!r} in {hook}" in note
    assert result.metrics["callback_changes"] == [key]


@pytest.mark.parametrize("change", [
    lambda state: state.model.layer_modules["conv"].weight.mul_(0.5),
    lambda state: state.model.layer_modules["conv"].bias.add_(1.0),
    lambda state: state.model.layer_modules["conv"].weight.data.normal_(),
    lambda state: state.model.layer_modules["conv"].reset_parameters(),
], ids=["scaled", "shifted", "through-data", "re-initialised"])
@pytest.mark.parametrize("hook", ["on_epoch_end", "on_step"])
def test_a_callback_that_changes_the_weights_is_said(digits, plain, change, hook):
    result, _ = train(digits, [changing(change, hook)])
    assert figures(result) != plain
    note, = result.metrics["diagnostics"]
    assert f"changed the network's weights in {hook} at epoch 1" in note
    assert result.metrics["callback_changes"] == ["weights"]


def test_a_change_after_the_result_is_measured_is_no_diagnostic(digits, plain):
    result, _ = train(digits, [changing(set_group("lr", 0.5), "on_candidate_end"),
                               changing(lambda s: s.model.layer_modules["conv"].weight.mul_(0),
                                        "on_candidate_end")])
    assert figures(result) == plain and "diagnostics" not in result.metrics


def test_a_change_is_put_down_to_the_callback_that_made_it(digits):
    class Reads(TrainingCallback):
        name = "reads"

        def on_epoch_end(self, state):
            return {self.name: float(state.model.layer_modules["conv"].weight.detach().sum())}

    class ReadsToo(Reads):
        name = "reads_too"

    class Halves(Reads):
        name = "halves"

        def on_epoch_end(self, state):
            state.optimizer.param_groups[0]["lr"] /= 2

    result, _ = train(digits, [Reads, Halves, ReadsToo])
    note, = result.metrics["diagnostics"]
    assert note.startswith("training callback 'halves'") and "lr from 0.001 to 0.0005" in note


class Exit(BaseException):
    """A BaseException that is no stop signal."""


@pytest.mark.parametrize("error", [SystemExit(3), SystemExit(0), SystemExit("bye"), Exit("x"),
                                   GeneratorExit()], ids=repr)
@pytest.mark.parametrize("hook", ["on_step", "on_epoch_end", "on_candidate_start",
                                  "on_candidate_end"])
def test_a_base_exception_from_a_callback_is_a_diagnostic(digits, plain, error, hook):
    class Quits(TrainingCallback):
        name = "quits"
        every_steps = 2

    def quit(self, state):
        raise error
    setattr(Quits, hook, quit)
    result = evaluator(digits, [Quits]).descriptor_evaluate(net())
    assert figures(result) == plain
    note, = result.metrics["diagnostics"]
    assert f"'quits' (Quits) failed in {hook}" in note and type(error).__name__ in note


@pytest.mark.parametrize("error", [SystemExit(3), Exit("x")], ids=repr)
def test_under_strict_callbacks_a_base_exception_fails_the_candidate(digits, error):
    class Quits(TrainingCallback):
        name = "quits"

        def on_epoch_end(self, state):
            raise error

    result = evaluator(digits, [Quits], strict_callbacks=True).descriptor_evaluate(net())
    assert result.status == "failed" and type(error).__name__ in result.error


def test_a_stop_signal_from_a_callback_still_stops(digits):
    from nord.errors import RunInterrupted

    class Signalled(TrainingCallback):
        name = "signalled"

        def on_epoch_end(self, state):
            raise RunInterrupted("SIGTERM")

    with pytest.raises(RunInterrupted):
        evaluator(digits, [Signalled]).descriptor_evaluate(net())


SYS_EXIT_PLUGIN = '''
import sys

from nord.evaluators.callbacks import TrainingCallback, register_callback


@register_callback("quitter")
class Quitter(TrainingCallback):
    name = "quitter"

    def on_epoch_end(self, state):
        sys.exit(3)
'''


def test_sys_exit_in_a_callback_does_not_end_the_run(tmp_path):
    from nord.app.cli import main
    plugin = tmp_path / "quitting.py"
    plugin.write_text(SYS_EXIT_PLUGIN)
    journal = tmp_path / "run.db"
    assert main(["run", "--algorithm", "random", "--budget", "2", "--epochs", "1", "--threads",
                 "1", "--journal", str(journal), "--plugin", str(plugin), "--callbacks",
                 "quitter"]) == 0
    with Journal(journal) as record:
        rows = record.evaluations()
    assert [row["status"] for row in rows] == ["ok", "ok"]
    assert all("SystemExit: 3" in row["metrics"]["diagnostics"][0] for row in rows)


@pytest.mark.parametrize("every", [50, 1000])
def test_a_step_callback_samples_an_epoch_shorter_than_its_sampling_at_its_last_step(digits,
                                                                                    every):
    steps = len(digits.train_loader(batch_size=64, fraction=0.25, seed=1))
    assert steps < every
    seen = []

    class Sparse(TrainingCallback):
        name = "sparse"
        every_steps = every

        def on_step(self, state):
            seen.append((state.epoch, state.step))
            return {"sparse": float(state.step)}

    _, records = train(digits, [Sparse])
    assert seen == [(1, steps), (2, steps)]
    assert [r.series for r in records] == [[[steps, "sparse", float(steps)]]] * 2


def test_histograms_record_and_their_rules_fire_in_short_epochs(digits):
    result, records = train(digits, [Histograms], stop_rules=["act_hist/conv/5 >= 0"])
    assert any(name.startswith("act_hist/conv/") for name in records[0].metrics)
    assert any(name.startswith("grad_hist/conv/") for name in records[0].metrics)
    assert result.metrics["stopped_by"]["epoch"] == 1


def test_the_help_of_callbacks_lists_every_registered_one():
    from nord.app.commands.run import run_arguments
    from nord.evaluators.callbacks import CALLBACKS, list_callbacks, register_callback

    def help_text():
        return next(options["help"] for name, _, options in run_arguments()
                    if name == "callbacks")

    assert all(name in help_text() for name in list_callbacks())
    register_callback("probe_of_help", returning({}), description="seen in the help")
    try:
        assert "probe_of_help: seen in the help" in help_text()
    finally:
        CALLBACKS.unregister("probe_of_help")


def test_the_report_says_whether_a_callback_changed_the_result():
    from types import SimpleNamespace

    from nord.report.series import watch_notes
    rows = [{"candidate": 0, "metrics": {"diagnostics": ["training callback 'a' failed"]}},
            {"candidate": 1, "metrics": {"diagnostics": ["training callback 'b' changed the "
                                                         "optimizer's lr"],
                                         "callback_changes": ["lr", "weights"]}}]
    first, second = watch_notes(SimpleNamespace(said=rows))
    assert first.endswith("(result unchanged)")
    assert second.endswith("(a callback changed its lr, weights: result changed)")
