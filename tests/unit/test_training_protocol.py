"""Training the way NAS research does it: select on validation, report test, every epoch
recorded, callbacks, and legs of training resumed from checkpoints bit for bit."""
import math

import pytest
import torch

from nord import NeuralDescriptor
from nord.data import Digits
from nord.evaluators.callbacks import DeadReLUs, GradientNorms, TrainingCallback, WeightNorms
from nord.evaluators.local import LocalEvaluator
from nord.search.executors import Task
from nord.nn.training import test_counts as count_correct


def net(width=8, dropout=True):
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {"out_channels": width, "kernel_size": 3}, "conv")
    d.add_layer_sequential("relu", name="relu")
    if dropout:      # dropout draws random numbers: resuming must restore the generator
        d.add_layer_sequential("dropout", {"p": 0.3}, "drop")
    return d


@pytest.fixture(scope="module")
def digits():
    return Digits(seed=0)


def task(descriptor, **leg):
    made = Task(0, (0,), descriptor.hash, descriptor=descriptor, **{
        k: v for k, v in leg.items() if k != "report"})
    made.report = leg.get("report")
    return made


def test_the_search_signal_is_validation_and_the_test_accuracy_is_reported(digits):
    # pinned to the CPU: the counts below are taken there
    evaluator = LocalEvaluator(curator=digits, epochs=2, seed=0, keep_model=True, device="cpu")
    result = evaluator.descriptor_evaluate(net())
    model = evaluator.model
    valid = count_correct(model, digits.test_loader(batch_size=500, split="valid"), torch.device("cpu"))
    test = count_correct(model, digits.test_loader(batch_size=500, split="test"), torch.device("cpu"))
    assert result.accuracy == valid[0] / valid[1] and result.reported_accuracy == test[0] / test[1]
    assert result.metrics["selection"] == "validation"
    assert result.metrics["valid_samples"] == digits.n_valid > 0


def test_without_a_validation_split_the_test_accuracy_is_the_signal_and_says_so():
    data = Digits(seed=0, valid_fraction=0)
    result = LocalEvaluator(curator=data, epochs=1, seed=0).descriptor_evaluate(net())
    assert result.metrics["selection"] == "test" and result.accuracy == result.reported_accuracy


def test_every_epoch_is_reported_with_its_validation_figures(digits):
    epochs = []
    result = LocalEvaluator(curator=digits, epochs=3, seed=0).evaluate_task(
        task(net(), report=epochs.append))
    assert [e.epoch for e in epochs] == [1, 2, 3]
    assert epochs[-1].valid_accuracy == result.accuracy
    assert all(math.isfinite(e.train_loss) and e.seconds > 0 for e in epochs)


def test_builtin_callbacks_store_their_scalars_with_each_epoch(digits):
    epochs = []
    evaluator = LocalEvaluator(curator=digits, epochs=2, seed=0,
                               callbacks=[GradientNorms(every_steps=2), WeightNorms(), DeadReLUs()])
    result = evaluator.evaluate_task(task(net(), report=epochs.append))
    assert result.ok, result.error
    metrics = epochs[-1].metrics
    assert metrics["grad_norm/conv"] > 0 and metrics["weight_norm/conv"] > 0
    assert 0.0 <= metrics["dead_relu/relu"] <= 1.0 and metrics["dead_relu"] == metrics["dead_relu/relu"]
    assert "grad_norm/relu" not in metrics     # no parameters, no norm


def test_dead_relus_counts_units_that_never_fire(digits):
    class KillBias(TrainingCallback):
        name = "kill"

        def on_epoch_end(self, state):
            with torch.no_grad():   # a hugely negative bias: every unit after the ReLU is dead
                state.model.layer_modules["conv"].bias.fill_(-1e6)
            return {}

    epochs = []
    (LocalEvaluator(curator=digits, epochs=1, seed=0, callbacks=[KillBias(), DeadReLUs()])
        .evaluate_task(task(net(dropout=False), report=epochs.append)))
    assert epochs[0].metrics["dead_relu"] == 1.0


def test_a_strict_callback_that_raises_fails_that_candidate_only(digits):
    class Broken(TrainingCallback):
        name = "broken"

        def on_epoch_end(self, state):
            raise ValueError("no such statistic")

    evaluator = LocalEvaluator(curator=digits, epochs=1, seed=0, callbacks=[Broken],
                               strict_callbacks=True)
    result = evaluator.descriptor_evaluate(net())
    assert not result.ok and "callback 'broken'" in result.error and "no such statistic" in result.error
    evaluator.callbacks = []
    assert evaluator.descriptor_evaluate(net()).ok


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_training_resumed_from_a_checkpoint_gives_the_same_weights_bit_for_bit(tmp_path, digits,
                                                                                optimizer):
    # pinned to the CPU, where training is deterministic (tests/unit/test_gpu.py: on CUDA)
    kwargs = dict(curator=digits, seed=3, keep_model=True, optimizer=optimizer, device="cpu",
                  optimizer_kwargs={"momentum": 0.9} if optimizer == "sgd" else {})
    whole = LocalEvaluator(epochs=4, **kwargs)
    straight = whole.evaluate_task(task(net()))
    first = LocalEvaluator(epochs=4, **kwargs)
    first.evaluate_task(task(net(), epochs=2, checkpoint=str(tmp_path / "c.pt")))
    second = LocalEvaluator(epochs=4, **kwargs)        # another process, as on another worker
    resumed = second.evaluate_task(task(net(), epochs=4, resume_from=str(tmp_path / "c.pt")))
    for (name, a), (_, b) in zip(whole.model.state_dict().items(),
                                 second.model.state_dict().items()):
        assert torch.equal(a, b), name
    assert resumed.accuracy == straight.accuracy and resumed.epochs == 4
    assert resumed.metrics["epochs_resumed"] == 2   # epochs 1-2 came from the checkpoint


def test_a_damaged_checkpoint_is_trained_again_from_scratch_and_says_so(tmp_path, digits):
    path = tmp_path / "c.pt"
    path.write_bytes(b"not a checkpoint at all")
    evaluator = LocalEvaluator(curator=digits, epochs=2, seed=0, device="cpu")  # equal numbers
    result = evaluator.evaluate_task(task(net(), resume_from=str(path)))
    fresh = LocalEvaluator(curator=digits, epochs=2, seed=0, device="cpu").evaluate_task(
        task(net()))
    assert result.ok and result.accuracy == fresh.accuracy
    assert "trained again from scratch" in result.metrics["checkpoint"]
    assert result.metrics["epochs_resumed"] == 0


def test_a_checkpoint_of_another_network_is_not_used(tmp_path, digits):
    path = str(tmp_path / "c.pt")
    LocalEvaluator(curator=digits, epochs=1, seed=0).evaluate_task(task(net(8), checkpoint=path))
    result = LocalEvaluator(curator=digits, epochs=2, seed=0).evaluate_task(
        task(net(12), resume_from=path))
    assert "another architecture" in result.metrics["checkpoint"]


def test_a_missing_checkpoint_is_a_failure_that_names_the_shared_folder(tmp_path, digits):
    result = LocalEvaluator(curator=digits, epochs=2, seed=0).evaluate_task(
        task(net(), resume_from=str(tmp_path / "gone.pt")))
    assert not result.ok and "does not exist on this host" in result.error
    assert "file system they all see" in result.error


def test_a_checkpoint_holds_only_what_a_weights_only_load_accepts(tmp_path, digits):
    path = str(tmp_path / "c.pt")
    LocalEvaluator(curator=digits, epochs=1, seed=0, device="cpu").evaluate_task(
        task(net(), checkpoint=path))
    state = torch.load(path, weights_only=True)          # raises on any other pickled object
    assert state["torch_rng"].dtype == torch.uint8 and state["torch_rng"].device.type == "cpu"
    assert state["cuda_rng"] is None                      # trained on the CPU: no GPU touched


class _Marker:
    """Unpickling it would write a file: the proof that loading ran code."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_checkpoint_carrying_a_pickled_object_is_refused_not_run(tmp_path, digits):
    path, marker = str(tmp_path / "c.pt"), tmp_path / "ran"
    LocalEvaluator(curator=digits, epochs=1, seed=0, device="cpu").evaluate_task(
        task(net(), checkpoint=path))
    state = torch.load(path, weights_only=True)
    state["payload"] = _Marker(str(marker))
    torch.save(state, path)
    result = LocalEvaluator(curator=digits, epochs=2, seed=0, device="cpu").evaluate_task(
        task(net(), resume_from=path))
    assert not marker.exists()
    assert result.ok and result.metrics["epochs_resumed"] == 0
    assert "objects other than tensors" in result.metrics["checkpoint"]
    assert "trained again from scratch" in result.metrics["checkpoint"]


def test_a_checkpoint_of_the_first_format_still_resumes(tmp_path, digits):
    path = str(tmp_path / "c.pt")
    LocalEvaluator(curator=digits, epochs=1, seed=0, device="cpu").evaluate_task(
        task(net(), checkpoint=path))
    state = torch.load(path, weights_only=True)
    state.update(format="nord.checkpoint/1", cuda_rng=[])     # it listed every GPU's state
    torch.save(state, path)
    result = LocalEvaluator(curator=digits, epochs=2, seed=0, device="cpu").evaluate_task(
        task(net(), resume_from=path))
    assert result.ok and result.metrics["epochs_resumed"] == 1
    assert "checkpoint" not in result.metrics
