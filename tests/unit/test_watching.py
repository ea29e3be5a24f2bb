"""Looking inside each candidate: fresh callbacks per candidate, failures that stay diagnostics,
watching that changes no result, and per-step series kept (thinned) in the journal."""
import pytest
import torch

from nord.data import Digits
from nord.errors import ConfigurationError
from nord.evaluators import watch as watch_module
from nord.evaluators.base import Leg
from nord.evaluators.callbacks import TrainingCallback
from nord.journal import Journal
from nord.search.algorithms.random_search import RandomSearch
from nord.search.engine import run_search
from nord.search.spaces import make_space
from tests.helpers.watching import evaluator, figures, net


@pytest.fixture(scope="module")
def digits():
    return Digits(seed=0)


@pytest.fixture(scope="module")
def plain(digits):
    return [figures(evaluator(digits).descriptor_evaluate(net(width))) for width in (4, 6)]


class Counting(TrainingCallback):
    name = "count"

    def __init__(self):
        self.count = 0
        self.kept = None
        self.calls = []

    def on_candidate_start(self, state):
        self.calls.append(("start", state.epoch))

    def on_epoch_end(self, state):
        self.count += 1
        # a tensor of this candidate's shape: the next candidate must not see it
        weight = state.model.layer_modules["conv"].weight
        if self.kept is not None:
            assert self.kept.shape == weight.shape
        self.kept = weight.detach().clone()
        return {"count": self.count}

    def on_candidate_end(self, state):
        self.calls.append(("end", state.epoch))


@pytest.mark.parametrize("spec", [Counting, Counting(), lambda: Counting()],
                         ids=["class", "instance", "factory"])
def test_every_candidate_gets_a_fresh_callback(digits, spec):
    records = []
    judge = evaluator(digits, [spec])
    for width in (4, 6, 4):
        result = judge.descriptor_evaluate(net(width), Leg(report=records.append))
        assert result.ok, result.error
        assert "diagnostics" not in result.metrics
    assert [r.metrics["count"] for r in records] == [1, 2] * 3


def test_start_and_end_hooks_frame_each_evaluation(digits):
    made = []

    def factory():
        made.append(Counting())
        return made[-1]

    evaluator(digits, [factory], epochs=2).descriptor_evaluate(net())
    assert made[-1].calls == [("start", 0), ("end", 2)]


class Raising(TrainingCallback):
    name = "raising"
    every_steps = 3

    def on_step(self, state):
        raise RuntimeError("broken metric")

    def on_epoch_end(self, state):
        raise ValueError("broken too")


class Meddling(TrainingCallback):
    """Draws random numbers, switches the network to eval mode, runs the probe through it."""

    name = "meddling"
    every_steps = 2

    def on_step(self, state):
        torch.rand(100)
        state.model.eval()
        with torch.no_grad():
            return {"probe_mean": float(state.model(state.probe).mean())}

    def on_epoch_end(self, state):
        torch.randn(10)
        return {"rand": 1.0}


def test_a_raising_callback_is_a_diagnostic_and_changes_no_result(digits, plain):
    judge = evaluator(digits, [Raising, Counting])
    for width, expected in zip((4, 6), plain):
        result = judge.descriptor_evaluate(net(width))
        assert figures(result) == expected
        first, *rest = result.metrics["diagnostics"]
        assert not rest    # left out after its first failure
        assert "'raising'" in first and "on_step at epoch 1, step 3" in first
        assert "RuntimeError: broken metric" in first


def test_a_strict_callback_fails_its_candidate(digits):
    result = evaluator(digits, [Raising], strict_callbacks=True).descriptor_evaluate(net())
    assert result.status == "failed" and "broken metric" in result.error


def test_watching_changes_no_result(digits, plain):
    judge = evaluator(digits, [Meddling, Counting])
    assert [figures(judge.descriptor_evaluate(net(w))) for w in (4, 6)] == plain


def test_callbacks_that_are_not_callbacks_are_refused(digits):
    with pytest.raises(ConfigurationError, match="returned int"):
        evaluator(digits, [lambda: 3])
    with pytest.raises(ConfigurationError, match="TrainingCallback classes"):
        evaluator(digits, ["grad_norm"])

    class Listens(TrainingCallback):
        topics = ("activation",)
    with pytest.raises(ConfigurationError, match="'activation'.*activations, gradients"):
        evaluator(digits, [Listens])


class EveryFive(TrainingCallback):
    name = "every5"
    every_steps = 5

    def on_step(self, state):
        return {"every5/loss": state.metrics["loss"], "every5/lr": state.metrics["lr"]}


def test_on_step_values_become_the_journal_series(digits, tmp_path):
    path = tmp_path / "run.db"
    space = make_space("conv", layers=2, channels=(2, 4), kernel_size=(1, 3))
    run_search(RandomSearch(space, seed=0), evaluator(digits, [EveryFive]), budget=2,
               journal=str(path))
    with Journal(path) as journal:
        rows = journal.series()
        epochs = journal.epochs()
        assert journal.series(candidate=1) == [r for r in rows if r["candidate"] == 1]
    assert {r["name"] for r in rows} == {"every5/loss", "every5/lr"}
    assert {r["candidate"] for r in rows} == {e["candidate"] for e in epochs}
    assert {r["epoch"] for r in rows} == {1, 2}
    assert all(r["step"] % 5 == 0 and r["leg"] is None for r in rows)
    steps = len(digits.train_loader(batch_size=64, fraction=0.25, seed=1))
    rates = [r for r in rows if r["name"] == "every5/lr"]
    assert len([r for r in rates if r["candidate"] == 0]) == 2 * (steps // 5)
    assert all(r["value"] == 1e-3 for r in rates)


def test_series_are_thinned_evenly_and_keep_each_epochs_last_value(digits, monkeypatch):
    monkeypatch.setattr(watch_module, "MAX_POINTS", 7)
    records = []

    class EveryStep(TrainingCallback):
        every_steps = 1

        def on_step(self, state):
            return {"s": float(state.step)}

    evaluator(digits, [EveryStep], epochs=3).descriptor_evaluate(net(), Leg(report=records.append))
    steps = len(digits.train_loader(batch_size=64, fraction=0.25, seed=1))
    kept = [point for record in records for point in record.series]
    assert len(kept) <= 7 < 3 * steps
    for record in records:
        assert record.series[-1][0] == steps                # the epoch's last step
    kept = {(r.epoch - 1) * steps + step - 1 for r in records for step, _, _ in r.series}
    stride = -(-3 * steps // (7 - 3))                       # room for 4, and 3 epoch ends
    ends = {epoch * steps - 1 for epoch in (1, 2, 3)}
    assert kept == set(range(0, 3 * steps, stride)) | ends  # evenly spaced, and the ends


class Stop(KeyboardInterrupt):
    """Stands in for a kill (a stop signal: what a callback's other exceptions are not)."""


def test_a_resumed_evaluation_reports_the_same_series(digits, tmp_path):
    whole = []
    evaluator(digits, [EveryFive], epochs=3).descriptor_evaluate(net(), Leg(report=whole.append))

    class Killer(TrainingCallback):
        every_steps = 1

        def on_step(self, state):
            if state.epoch == 3 and state.step == 2:
                raise Stop

    path = str(tmp_path / "c.pt")
    first, again = [], []
    leg = dict(checkpoint=path, checkpoint_every=1, keep_at_end=False)
    with pytest.raises(Stop):
        evaluator(digits, [EveryFive, Killer], epochs=3).descriptor_evaluate(
            net(), Leg(report=first.append, **leg))
    evaluator(digits, [EveryFive], epochs=3).descriptor_evaluate(net(), Leg(report=again.append,
                                                                            **leg))
    assert [r.epoch for r in again] == [1, 2, 3]     # epochs 1 and 2 again, from the checkpoint
    assert [r.series for r in again] == [r.series for r in whole]


def test_the_report_draws_the_series_and_says_what_the_callbacks_said(digits, tmp_path):
    from nord.report.summary import write_report
    path = tmp_path / "run.db"
    space = make_space("conv", layers=2, channels=(2, 4), kernel_size=(1, 3))
    run_search(RandomSearch(space, seed=0), evaluator(digits, [EveryFive, Raising], epochs=1),
               budget=1, journal=str(path))
    write_report([path], tmp_path / "report")
    page = (tmp_path / "report" / "report.md").read_text()
    assert "### Step by step: run" in page and (tmp_path / "report" / "series-run.png").exists()
    assert "candidate 0: training callback 'raising'" in page and "result unchanged" in page


USER_PLUGIN = '''
from nord.evaluators.callbacks import TrainingCallback, register_callback


@register_callback("user_counting")
class Counting(TrainingCallback):
    name = "user_counting"

    def __init__(self):
        self.epochs = 0

    def on_epoch_end(self, state):
        self.epochs += 1
        return {"user_counting": self.epochs}


@register_callback("user_raising")
class Raising(TrainingCallback):
    name = "user_raising"
    every_steps = 3

    def on_step(self, state):
        raise RuntimeError("always")


@register_callback("user_every5")
class EveryFive(TrainingCallback):
    name = "user_every5"
    every_steps = 5

    def on_step(self, state):
        return {"user_every5/loss": state.metrics["loss"]}
'''


def test_a_users_plugin_through_the_command_line(tmp_path):
    from nord.app.cli import main
    plugin = tmp_path / "user_callbacks.py"
    plugin.write_text(USER_PLUGIN)
    common = ["run", "--algorithm", "random", "--budget", "3", "--threads", "1"]

    def run(name, *flags, epochs=2):
        assert main([*common, "--epochs", str(epochs), "--journal", str(tmp_path / name),
                     *flags]) == 0
        with Journal(tmp_path / name) as journal:
            return journal.evaluations(), journal.epochs(), journal.series()

    plain, _, _ = run("plain.db")
    watched, epochs, series = run("watched.db", "--plugin", str(plugin), "--callbacks",
                                  "user_counting,user_raising,user_every5")
    assert [figures_of(row) for row in watched] == [figures_of(row) for row in plain]
    assert all("user_raising" in row["metrics"]["diagnostics"][0] for row in watched)
    assert {row["metrics"]["user_counting"] for row in epochs if row["epoch"] == 1} == {1.0}
    assert series and all(row["step"] % 5 == 0 for row in series)
    assert {row["candidate"] for row in series} == {0, 1, 2}
    stopped, epochs, _ = run("stopped.db", "--stop-when", "train_loss > 0", epochs=4)
    assert [row["epochs"] for row in stopped] == [1, 1, 1]
    assert sorted((row["candidate"], row["epoch"]) for row in epochs) == [(0, 1), (1, 1), (2, 1)]


def figures_of(row):
    return (row["status"], row["accuracy"], row["reported_accuracy"], row["loss"])
