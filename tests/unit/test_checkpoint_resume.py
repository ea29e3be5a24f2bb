"""Checkpoints within training: a stopped evaluation goes on from its last epoch, exactly.

A run killed in the middle of a candidate's training is stood in for, in this process, by an
exception that no evaluator catches (a ``BaseException``), raised from a training callback or
from the epoch report: what a ``kill -9`` leaves behind is the same (the checkpoint of the
last epoch, and the journal's rows so far). Real kills of real processes are in
tests/parallel/test_resume_in_flight.py.
"""
import os
import signal

import pytest
import torch

from nord.app.search_progress import closing_line, resumed_line
from nord.data import Digits
from nord.errors import ConfigurationError, RunInterrupted
from nord.evaluators.base import Leg
from nord.evaluators.callbacks import TrainingCallback
from nord.evaluators.checkpoints import LegProgress, load_checkpoint, save_checkpoint
from nord.evaluators.local import LocalEvaluator
from nord.nn.network import NeuralNet
from nord.journal import Journal
from nord.parallel.signals import interruptible
from nord.search.algorithms.random_search import RandomSearch
from nord.search.engine import run_search
from nord.search.schedulers import make_scheduler
from nord.search.spaces import make_space
from tests.helpers.journals import conv_descriptor
from tests.helpers.toy import journal_rows

TIMES = ("started", "ended", "train_time", "eval_time", "asked", "recorded", "seconds")


class Stop(KeyboardInterrupt):
    """Stands in for a kill: nothing in nord catches it as a candidate's failure (a callback's
    other exceptions, BaseExceptions included, are its diagnostics)."""


class Epochs(TrainingCallback):
    """Counts every epoch it is told of, across candidates and evaluations (a log a user would
    keep, handed over by a factory that returns this one instance), and stops the run when
    told to."""

    name = "epochs"

    def __init__(self, stop_at=None):
        self.seen = []
        self.stop_at = stop_at   # (number of epochs seen so far, where: 'step' or 'epoch')

    def on_epoch_end(self, state):
        self.seen.append(state.epoch)
        if self.stop_at == (len(self.seen), "epoch"):
            raise Stop
        return {"epoch_seen": float(state.epoch)}

    every_steps = 1

    def on_step(self, state):
        if state.step == 2 and self.stop_at == (len(self.seen), "step"):
            raise Stop


@pytest.fixture(scope="module")
def digits():
    return Digits(seed=0)


def evaluator(digits, epochs=5, callbacks=(), **kwargs):
    # a factory returning the same instance: the log lives across evaluations
    return LocalEvaluator(curator=digits, epochs=epochs, batch_size=64, seed=3,
                          data_fraction=0.25, keep_model=True,
                          callbacks=[lambda callback=callback: callback for callback in callbacks],
                          **kwargs)


def net():
    return conv_descriptor(4)


def weights(model):
    return {name: tensor.clone() for name, tensor in model.state_dict().items()}


def same_result(a, b):
    fields = ("accuracy", "loss", "reported_accuracy", "epochs", "n_params", "status")
    assert [getattr(a, f) for f in fields] == [getattr(b, f) for f in fields]
    assert a.metrics["train_loss"] == b.metrics["train_loss"]
    assert a.metrics["test_loss"] == b.metrics["test_loss"]


# --- the evaluator ---------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["step", "epoch"])
def test_an_evaluation_stopped_mid_training_goes_on_from_its_last_epoch_exactly(
        digits, tmp_path, where):
    whole = evaluator(digits)
    expected = whole.descriptor_evaluate(net())
    expected_weights = weights(whole.model)

    path = str(tmp_path / "candidate-0.pt")
    log = Epochs(stop_at=(3, where))         # stopped in epoch 4, or at the end of epoch 3
    reported = []
    leg = Leg(checkpoint=path, report=reported.append, checkpoint_every=1, keep_at_end=False)
    with pytest.raises(Stop):
        evaluator(digits, callbacks=[log]).descriptor_evaluate(net(), leg)
    assert os.path.exists(path)
    log.stop_at = None
    again = evaluator(digits, callbacks=[log])
    result = again.descriptor_evaluate(net(), leg)
    kept = 3 if where == "step" else 2    # a stop inside epoch 3's callbacks: epoch 3 again
    assert result.metrics["epochs_resumed"] == kept
    same_result(result, expected)
    for name, tensor in weights(again.model).items():
        assert torch.equal(tensor, expected_weights[name]), name
    # every epoch told to the callbacks once, but the one whose callbacks were cut short
    assert log.seen == [1, 2, 3, 4, 5] if where == "step" else [1, 2, 3, 3, 4, 5]
    # the journal is told every epoch, those the stop may have kept from it again
    assert [r.epoch for r in reported][-5:] == [1, 2, 3, 4, 5]
    assert reported[-1].metrics == {"epoch_seen": 5.0}


class Terminated(TrainingCallback):
    """Logs every epoch, and sends SIGTERM (scancel, mpirun) to this process once it has
    logged epoch ``at``: the signal lands between an epoch's callbacks and its checkpoint."""

    name = "terminated"

    def __init__(self, at):
        self.seen, self.at = [], at

    def on_epoch_end(self, state):
        self.seen.append(state.epoch)
        if state.epoch == self.at:
            os.kill(os.getpid(), signal.SIGTERM)   # Python runs the handler at once
        return {}


@pytest.mark.parametrize("at", [2, 3])
def test_a_sigterm_after_an_epochs_callbacks_keeps_that_epoch(digits, tmp_path, at):
    """The stop waits for the epoch's checkpoint, the last epoch's too: the resume trains
    none of the epochs the callbacks were told of again."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        pytest.skip("SIGTERM has a handler in this test process: interruptible leaves it")
    expected = evaluator(digits, epochs=3).descriptor_evaluate(net())
    path = str(tmp_path / "candidate-0.pt")
    log = Terminated(at)
    leg = Leg(checkpoint=path, checkpoint_every=1, keep_at_end=False)
    with pytest.raises(RunInterrupted), interruptible():
        evaluator(digits, epochs=3, callbacks=[log]).descriptor_evaluate(net(), leg)
    log.at = None
    result = evaluator(digits, epochs=3, callbacks=[log]).descriptor_evaluate(net(), leg)
    assert result.metrics["epochs_resumed"] == at
    assert log.seen == [1, 2, 3]
    same_result(result, expected)


def test_no_checkpoint_is_left_within_a_leg_when_checkpoint_every_is_0(digits, tmp_path):
    path = str(tmp_path / "candidate-0.pt")
    with pytest.raises(Stop):
        evaluator(digits, callbacks=[Epochs(stop_at=(3, "step"))]).descriptor_evaluate(
            net(), Leg(checkpoint=path, checkpoint_every=0, keep_at_end=False))
    assert not os.path.exists(path)


def fresh_training(digits):
    """A network and optimizer like the evaluator's, for a checkpoint to be loaded into."""
    model = NeuralNet(net(), digits.input_shape, digits.num_classes)
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


def test_checkpoints_every_two_epochs_keep_the_even_ones(digits, tmp_path):
    path = str(tmp_path / "candidate-0.pt")
    with pytest.raises(Stop):
        evaluator(digits, callbacks=[Epochs(stop_at=(3, "step"))]).descriptor_evaluate(
            net(), Leg(checkpoint=path, checkpoint_every=2, keep_at_end=False))
    model = fresh_training(digits)
    epochs, progress = load_checkpoint(path, net(), *model)
    assert (epochs, progress.leg_start, progress.leg_end) == (2, 0, False)
    assert [record.epoch for record in progress.records] == [1, 2]


def test_the_last_epoch_is_checkpointed_but_only_a_pause_marks_the_legs_end(digits, tmp_path):
    """A run stopped before the result of its last epoch is back goes on from there."""
    path = str(tmp_path / "candidate-0.pt")
    evaluator(digits, epochs=2).descriptor_evaluate(
        net(), Leg(checkpoint=path, checkpoint_every=1, keep_at_end=False))
    model = fresh_training(digits)
    epochs, progress = load_checkpoint(path, net(), *model)
    assert (epochs, progress.leg_end) == (2, False)
    evaluator(digits, epochs=2).descriptor_evaluate(
        net(), Leg(epochs=3, checkpoint=str(tmp_path / "c.pt"), checkpoint_every=1))
    assert load_checkpoint(str(tmp_path / "c.pt"), net(), *model)[1].leg_end


def test_a_leg_that_ended_before_the_stop_is_not_trained_again(digits, tmp_path):
    """Killed after its last epoch was checkpointed but before the result was journaled, a
    leg goes on from its end: nothing is trained, and its result is the one it had."""
    path = str(tmp_path / "candidate-0.pt")
    first = evaluator(digits, epochs=3).descriptor_evaluate(net(), Leg(checkpoint=path))
    log = Epochs()
    reported = []
    again = evaluator(digits, epochs=3, callbacks=[log]).descriptor_evaluate(
        net(), Leg(checkpoint=path, report=reported.append))
    assert again.metrics["epochs_resumed"] == 3 and log.seen == []
    same_result(again, first)
    assert [record.epoch for record in reported] == [1, 2, 3]


def test_the_next_leg_of_a_paused_candidate_reports_only_its_own_epochs(digits, tmp_path):
    path = str(tmp_path / "candidate-0.pt")
    evaluator(digits).descriptor_evaluate(net(), Leg(epochs=2, checkpoint=path,
                                                     checkpoint_every=1))
    reported = []
    result = evaluator(digits).descriptor_evaluate(
        net(), Leg(epochs=4, resume_from=path, checkpoint=path, report=reported.append,
                   checkpoint_every=1))
    assert [record.epoch for record in reported] == [3, 4]
    assert result.metrics["epochs_resumed"] == 2


def test_a_checkpoint_written_before_it_kept_its_progress_still_loads(digits, tmp_path):
    """A pause of an older nord (no progress in the file) goes on as the next leg."""
    path = str(tmp_path / "old.pt")
    model, optimizer = fresh_training(digits)
    save_checkpoint(path, net(), model, optimizer, 2)
    state = torch.load(path, weights_only=True)
    del state["progress"], state["parts"]
    state["format"] = "nord.checkpoint/2"
    torch.save(state, path)
    epochs, progress = load_checkpoint(path, net(), model, optimizer)
    assert (epochs, progress.leg_start, progress.leg_end, progress.records) == (2, 2, True, [])


def test_progress_keeps_numpy_scalars_as_plain_numbers():
    import numpy as np
    from nord.evaluators.result import EpochRecord
    progress = LegProgress(records=[EpochRecord(1, 0.5, 0.9, 0.4, 1.0, {"x": np.float32(2)})])
    state = progress.to_state()
    assert state["records"][0]["metrics"] == {"x": 2.0}
    assert LegProgress.from_state(state, 1).records[0].metrics == {"x": 2.0}


# --- the engine ------------------------------------------------------------------------------
def space(digits):
    return make_space("conv", input_shape=tuple(digits.input_shape), layers=2)


def search(digits, journal, log, budget=3, resume=False, scheduler=None, mode="sync",
           checkpoint_every=1, epochs=4):
    return run_search(RandomSearch(space(digits), seed=1),
                      evaluator(digits, epochs=epochs, callbacks=[log]), budget=budget,
                      journal=journal, resume=resume, mode=mode, scheduler=scheduler,
                      checkpoint_every=checkpoint_every)


def rows(path):
    evaluations, candidates = journal_rows(path, drop=TIMES + ("worker_rank",))
    for row in evaluations:
        row["metrics"].pop("epochs_resumed", None)
    with Journal(path) as journal:
        curves = [{k: v for k, v in row.items() if k not in TIMES + ("worker_rank",)}
                  for row in journal.epochs()]
    return evaluations, candidates, curves


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_run_stopped_in_a_candidates_training_goes_on_from_its_checkpoint(
        digits, tmp_path, mode):
    whole = Epochs()
    search(digits, tmp_path / "whole.db", whole, mode=mode)
    log = Epochs(stop_at=(6, "step"))        # in the third epoch of the second candidate
    with pytest.raises(Stop):
        search(digits, tmp_path / "stopped.db", log, mode=mode)
    assert os.listdir(f"{tmp_path / 'stopped.db'}.checkpoints") == ["candidate-1.pt"]
    with Journal(tmp_path / "stopped.db") as journal:
        assert journal.state() == "interrupted"   # Stop is a KeyboardInterrupt
    log.stop_at = None
    summary = search(digits, tmp_path / "stopped.db", log, resume=True, mode=mode)
    assert len(log.seen) == len(whole.seen)                    # no epoch trained twice
    assert rows(tmp_path / "stopped.db") == rows(tmp_path / "whole.db")
    assert (summary.resumed_candidates, summary.resumed_epochs) == (1, 2)
    with Journal(tmp_path / "stopped.db") as journal:
        assert journal.resumed() == {1: 2}
        assert journal.summary()["resumed"] == {1: 2}
    assert "1 candidate went on from checkpoints (2 epochs not trained again)" in closing_line(
        summary)
    assert not os.path.exists(f"{tmp_path / 'stopped.db'}.checkpoints")   # all gone


def test_without_checkpoints_a_stopped_candidate_trains_from_the_start(digits, tmp_path):
    whole = Epochs()
    search(digits, tmp_path / "whole.db", whole, checkpoint_every=0)
    log = Epochs(stop_at=(6, "step"))
    with pytest.raises(Stop):
        search(digits, tmp_path / "stopped.db", log, checkpoint_every=0)
    assert not os.path.exists(f"{tmp_path / 'stopped.db'}.checkpoints")
    log.stop_at = None
    summary = search(digits, tmp_path / "stopped.db", log, resume=True, checkpoint_every=0)
    assert len(log.seen) == len(whole.seen) + 2                # its two epochs again
    assert rows(tmp_path / "stopped.db") == rows(tmp_path / "whole.db")
    assert summary.resumed_candidates == 0
    assert summary.checkpoint_peak_bytes is None


def test_checkpoints_are_measured_and_deleted_as_candidates_end(digits, tmp_path):
    summary = search(digits, tmp_path / "r.db", Epochs(), budget=2)
    assert summary.checkpoint_peak_bytes > 0
    assert "checkpoints peaked at" in closing_line(summary)
    assert not os.path.exists(f"{tmp_path / 'r.db'}.checkpoints")


def test_a_new_run_never_goes_on_from_another_runs_checkpoints(digits, tmp_path):
    """Checkpoints left beside a journal that was deleted belong to another run."""
    log = Epochs(stop_at=(6, "step"))
    with pytest.raises(Stop):
        search(digits, tmp_path / "r.db", log)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{tmp_path / 'r.db'}{suffix}"):
            os.remove(f"{tmp_path / 'r.db'}{suffix}")
    summary = search(digits, tmp_path / "r.db", Epochs())
    assert summary.resumed_candidates == 0


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_scheduled_leg_stopped_midway_goes_on_from_its_checkpoint(digits, tmp_path, mode):
    kind = "asha" if mode == "async" else "sha"

    def scheduled(journal, log, resume=False):
        return search(digits, journal, log, budget=6, resume=resume, mode=mode, epochs=4,
                      scheduler=make_scheduler(kind, min_epochs=1, max_epochs=4, eta=2))

    whole = Epochs()
    scheduled(tmp_path / "whole.db", whole)
    with Journal(tmp_path / "whole.db") as journal:
        promoted = [leg for leg in journal.legs() if leg["start_epochs"] > 0]
    assert promoted and any(leg["target_epochs"] - leg["start_epochs"] >= 2 for leg in promoted)
    # stop inside the second epoch of the first leg that trains two or more (legs run one
    # after the other in this process, in the order they were handed out)
    leg = next(leg for leg in promoted if leg["target_epochs"] - leg["start_epochs"] >= 2)
    with Journal(tmp_path / "whole.db") as journal:
        before = sum(other["target_epochs"] - other["start_epochs"]
                     for other in journal.legs() if other["leg"] < leg["leg"])
    log = Epochs(stop_at=(before + 1, "step"))
    with pytest.raises(Stop):
        scheduled(tmp_path / "stopped.db", log)
    log.stop_at = None
    summary = scheduled(tmp_path / "stopped.db", log, resume=True)
    assert len(log.seen) == len(whole.seen)                    # no epoch trained twice
    assert summary.resumed_epochs == 1
    assert rows(tmp_path / "stopped.db") == rows(tmp_path / "whole.db")
    with Journal(tmp_path / "stopped.db") as journal:
        assert journal.resumed() == {leg["candidate"]: 1}


def test_checkpoint_every_is_checked(digits):
    with pytest.raises(ConfigurationError, match="checkpoint_every"):
        run_search(RandomSearch(space(digits), seed=1), evaluator(digits), budget=1,
                   checkpoint_every=-1)


def test_the_resumed_line_names_the_candidates_and_the_epochs():
    assert resumed_line({4: 3, 2: 1}) == ("went on from checkpoints after a stop: candidates "
                                          "2 (+1), 4 (+3); 4 epochs not trained again")
    assert resumed_line({n: 1 for n in range(20)}).endswith(
        "candidates 0 (+1), 1 (+1), 2 (+1), 3 (+1), 4 (+1), 5 (+1), 6 (+1), 7 (+1), and 12 more; "
        "20 epochs not trained again")
