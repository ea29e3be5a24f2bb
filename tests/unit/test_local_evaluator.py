"""LocalEvaluator: results, failures recorded (not raised), reproducibility, arguments."""
import gc
import math
import os

import numpy as np
import pytest
import torch

from nord import NeuralDescriptor
from nord.data import Digits, TensorCurator
from nord.errors import ConfigurationError
from nord.evaluators.local import LocalEvaluator, NeuralEvaluator
from nord.evaluators.result import FAILED_FITNESS, EvaluationResult


def small_net(width=8):
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {"out_channels": width, "kernel_size": 3})
    d.add_layer_sequential("relu")
    return d


@pytest.fixture(scope="module")
def digits():
    return Digits(seed=0)


def test_result_fields_are_filled(digits):
    result = LocalEvaluator(curator=digits, epochs=2, seed=0).descriptor_evaluate(small_net())
    assert result.ok and result.status == "ok" and result.error == ""
    assert 0.0 <= result.accuracy <= 1.0 and math.isfinite(result.loss)
    assert result.train_time > 0 and result.eval_time > 0
    assert result.epochs == 2
    assert result.descriptor_hash == small_net().hash
    assert result.fitness == pytest.approx(1 - result.accuracy)
    assert result.metrics["test_samples"] == sum(len(y) for _, y in digits.test_loader(batch_size=100))


def test_trains_better_than_chance(digits):
    result = LocalEvaluator(curator=digits, epochs=5, seed=0).descriptor_evaluate(small_net(16))
    assert result.accuracy > 0.5  # 10 classes: chance is 0.1


def test_parameter_count_matches_the_network(digits):
    from nord.nn.network import NeuralNet
    expected = NeuralNet(small_net(), digits.input_shape, digits.num_classes).count_parameters()
    result = LocalEvaluator(curator=digits, epochs=1).descriptor_evaluate(small_net())
    assert result.n_params == expected


def test_same_seed_gives_same_result(digits):
    # pinned to the CPU: on a GPU equal seeds give equal results only with deterministic kernels
    first = LocalEvaluator(curator=digits, epochs=2, seed=3, device="cpu").descriptor_evaluate(
        small_net())
    second = LocalEvaluator(curator=digits, epochs=2, seed=3, device="cpu").descriptor_evaluate(
        small_net())
    assert first.accuracy == second.accuracy and first.loss == second.loss


def test_different_seed_gives_different_weights(digits):
    first = LocalEvaluator(curator=digits, epochs=1, seed=1).descriptor_evaluate(small_net())
    second = LocalEvaluator(curator=digits, epochs=1, seed=2).descriptor_evaluate(small_net())
    assert first.loss != second.loss


def test_network_that_does_not_build_is_a_failed_result(digits):
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {"out_channels": 4, "kernel_size": 50})
    result = LocalEvaluator(curator=digits).descriptor_evaluate(d)
    assert result.status == "failed"
    assert "ShapeError" in result.error and "conv2d_0" in result.error
    assert math.isnan(result.accuracy)
    assert result.fitness == FAILED_FITNESS
    assert result.descriptor_hash == d.hash


def test_invalid_descriptor_is_a_failed_result(digits):
    result = LocalEvaluator(curator=digits).descriptor_evaluate(NeuralDescriptor())
    assert result.status == "failed" and "EmptyDescriptorError" in result.error


def test_diverging_network_is_a_failed_result_and_evaluator_stays_usable(digits):
    evaluator = LocalEvaluator(curator=digits, epochs=1, optimizer="sgd", lr=1e12)
    diverged = evaluator.descriptor_evaluate(small_net())
    assert diverged.status == "failed" and "NonFiniteLossError" in diverged.error
    evaluator.lr = 1e-3
    assert evaluator.descriptor_evaluate(small_net()).ok


def test_out_of_memory_is_a_failed_result_and_evaluator_stays_usable(digits):
    # 10**8 outputs from 640 features ask for ~256 GiB of weights: refused before allocating,
    # on a host of any size (tests/unit/test_memory_estimate.py times it)
    huge = NeuralDescriptor()
    huge.add_layer_sequential("conv2d", {"out_channels": 10, "kernel_size": 1})
    huge.add_layer_sequential("linear", {"out_features": 10**8})
    evaluator = LocalEvaluator(curator=digits, epochs=1, device="cpu")
    result = evaluator.descriptor_evaluate(huge)
    assert result.status == "failed"
    assert "CandidateTooLargeError" in result.error and "memory" in result.error.lower()
    assert evaluator.descriptor_evaluate(small_net()).ok


def test_zero_epochs_tests_the_initial_weights(digits):
    result = LocalEvaluator(curator=digits, epochs=0, seed=0).descriptor_evaluate(small_net())
    assert result.ok and result.epochs == 0 and result.train_time < 1.0


def test_keep_model_keeps_the_trained_network(digits):
    evaluator = LocalEvaluator(curator=digits, epochs=1, keep_model=True)
    evaluator.descriptor_evaluate(small_net())
    assert isinstance(evaluator.model, torch.nn.Module)
    assert LocalEvaluator(curator=digits).model is None


def test_data_fraction_uses_fewer_batches():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 1, 6, 6)).astype("float32")
    y = rng.integers(0, 3, 200)
    curator = TensorCurator(x[:160], y[:160], x[160:], y[160:])
    evaluator = LocalEvaluator(curator=curator, epochs=1, batch_size=10, data_fraction=0.25,
                               progress=True)
    result = evaluator.descriptor_evaluate(small_net())
    assert result.ok
    assert len(curator.train_loader(batch_size=10, fraction=0.25)) == 4


def test_default_curator_is_digits():
    assert isinstance(LocalEvaluator().get_curator(), Digits)


def test_paper_name_is_an_alias():
    assert NeuralEvaluator is LocalEvaluator


@pytest.mark.parametrize("kwargs, words", [
    ({"epochs": -1}, "epochs"),
    ({"batch_size": 0}, "batch sizes"),
    ({"data_fraction": 0}, "data_fraction"),
    ({"data_fraction": 1.5}, "data_fraction"),
    ({"threads": 0}, "threads"),
    ({"lr": -1.0}, "learning rate"),
    ({"device": "tpu"}, "device"),
])
def test_bad_arguments_are_rejected(kwargs, words):
    with pytest.raises(ConfigurationError, match=words):
        LocalEvaluator(**kwargs)


def test_unknown_optimizer_is_refused_naming_the_valid_ones():
    with pytest.raises(ConfigurationError, match="sgd"):
        LocalEvaluator(optimizer="adagrad-ish")


def test_cuda_request_without_gpu_is_refused_clearly():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ConfigurationError, match="CUDA is not available"):
        LocalEvaluator(device="cuda")


def test_result_round_trips_through_dict():
    result = EvaluationResult(accuracy=0.5, n_params=3, metrics={"a": 1}, reported_accuracy=0.9)
    assert EvaluationResult.from_dict(result.to_dict()) == result
    assert result.final_accuracy == 0.9


def test_a_one_sample_remainder_batch_does_not_fail_batch_norm():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(41, 4)).astype("float32")  # 33 training samples: 32 + 1
    y = rng.integers(0, 2, 41)
    curator = TensorCurator(x[:33], y[:33], x[33:], y[33:])
    d = NeuralDescriptor()
    d.add_layer_sequential("linear", {"out_features": 8})
    d.add_layer_sequential("batch_norm1d", {})
    result = LocalEvaluator(curator=curator, batch_size=32, epochs=1).descriptor_evaluate(d)
    assert result.ok, result.error


def test_progress_bar_is_shown_when_asked(digits, capsys):
    LocalEvaluator(curator=digits, epochs=2, progress=True).descriptor_evaluate(small_net())
    err = capsys.readouterr().err
    assert "epoch 1/2" in err and "epoch 2/2" in err and "loss" in err
    LocalEvaluator(curator=digits, epochs=1).descriptor_evaluate(small_net())
    assert capsys.readouterr().err == ""


@pytest.mark.processes
def test_a_checkpoint_that_fills_the_disk_leaves_no_partial_file(tmp_path):
    from nord.evaluators.checkpoints import save_checkpoint
    from tests.helpers.disks import tmpfs
    from tests.helpers.journals import conv_descriptor

    model = torch.nn.Linear(200, 200)   # 160 kB of weights: more than the disk holds
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with tmpfs(tmp_path / "small", "size=64k") as disk:
        failed = False
        try:   # torch says ENOSPC as a RuntimeError
            save_checkpoint(str(disk / "candidate-3.pt"), conv_descriptor(4), model, optimizer, 1)
        except (OSError, RuntimeError):
            failed = True
        gc.collect()   # torch's writer keeps the file open until collected
        assert failed and os.listdir(disk) == []
