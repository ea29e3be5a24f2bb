"""nord.legacy: the 2018 module names, signatures, defaults and fitness, one behaviour per test.

The 2018 calls beyond these (descriptor views, module globals, loaders, output wording) are
tested in test_legacy_calls.py, a 2018 checkout's folders in test_legacy_checkout.py; the
fixtures and the small CIFAR-10 are in tests/helpers/legacy.py.
"""
import copy
import importlib
import re
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn

import nord.legacy
from nord.architecture.descriptor import NeuralDescriptor
from nord.architecture.layers import get_layer_spec
from nord.data.files import read_cifar10
from nord.errors import ConfigurationError, MissingDataError, UnknownLayerError
from nord.legacy.utils import (extract_params, format_time, generate_layer_parameters,
                               get_convolution_out_size, get_logger, get_random_value,
                               progress_bar)
from tests.helpers.legacy import LOG_LINE, N_TEST, N_TRAIN, conv_descriptor
from tests.helpers.legacy import cifar_root, legacy_data, log_files, neural_nets  # noqa: F401


@pytest.fixture
def clean_2018_names():
    """Forget the 2018 top-level modules afterwards, so tests do not see each other's imports."""
    before = {name: module for name, module in sys.modules.items() if _is_2018_name(name)}
    yield
    for name in [name for name in sys.modules if _is_2018_name(name)]:
        del sys.modules[name]
    sys.modules.update(before)


def _is_2018_name(name):
    return name == "utils" or name == "neural_nets" or name.startswith("neural_nets.")


# --- the 2018 module names -------------------------------------------------------------------
def test_2018_names_are_the_nord_legacy_modules(clean_2018_names):
    import neural_nets
    import neural_nets.distributed.environment
    import neural_nets.layers.layer_types
    import utils

    assert neural_nets is sys.modules["nord.legacy.neural_nets"]
    assert neural_nets.layers.layer_types is sys.modules["nord.legacy.neural_nets.layers.layer_types"]
    assert neural_nets.distributed.environment is sys.modules[
        "nord.legacy.neural_nets.distributed.environment"]
    assert utils is sys.modules["nord.legacy.utils"]
    from neural_nets import NeuralEvaluator
    assert NeuralEvaluator is sys.modules["nord.legacy.neural_nets.local.neural_evaluator"].NeuralEvaluator


def test_a_utils_module_of_the_user_comes_first(clean_2018_names, tmp_path, monkeypatch):
    (tmp_path / "utils.py").write_text("OWN = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("utils", None)
    import utils
    assert getattr(utils, "OWN", False)


def test_a_neural_nets_package_of_the_user_gets_no_legacy_submodules(clean_2018_names, tmp_path,
                                                                     monkeypatch):
    (tmp_path / "neural_nets").mkdir()
    (tmp_path / "neural_nets" / "__init__.py").write_text("OWN = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [n for n in sys.modules if _is_2018_name(n)]:
        del sys.modules[name]
    import neural_nets
    assert neural_nets.OWN
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("neural_nets.layers")


def test_a_2018_module_that_does_not_exist_is_a_plain_import_error(clean_2018_names):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("neural_nets.no_such_module")


def test_install_is_idempotent():
    nord.legacy.install()
    nord.legacy.install()
    assert nord.legacy.installed()
    assert sum(type(f).__name__ == "LegacyNames" for f in sys.meta_path) == 1
    assert isinstance(sys.meta_path[0], nord.legacy.imports.LegacyNames)


# --- layer helpers --------------------------------------------------------------------------
def test_flatten_builds_in_a_descriptor(neural_nets):
    Flatten = neural_nets.layers.layer_types.Flatten
    d = NeuralDescriptor()
    d.add_layer(nn.Conv2d, [3, 4, 3], "conv")
    d.add_layer(Flatten, [], "flat")
    d.add_layer(nn.Linear, [4 * 6 * 6, 5], "lin")
    d.connect_layers("conv", "flat")
    d.connect_layers("flat", "lin")
    net = neural_nets.NeuralNet(d, 10, torch.zeros(1, 3, 8, 8))
    assert net(torch.zeros(2, 3, 8, 8)).shape == (2, 10)
    assert Flatten()(torch.zeros(2, 3, 4, 4)).shape == (2, 48)


@pytest.mark.parametrize("layer, group", [(nn.Conv2d, "convolutions"), (nn.PReLU, "activations"),
                                          (nn.CrossEntropyLoss, "losses"), (nn.LPPool2d, "pooling"),
                                          (nn.AlphaDropout, "dropout"), (nn.Linear, "linear"),
                                          (nn.Flatten, "flatten"), (nn.Identity, None)])
def test_find_layer_type_names_the_2018_group(neural_nets, layer, group):
    assert neural_nets.layers.find_layer_type(layer) == group


@pytest.mark.parametrize("layer, params", [(nn.ConvTranspose2d, [3, 4, 3]), (nn.PReLU, []),
                                           (nn.Softmax, [1]), (nn.LogSoftmax, [1]),
                                           (nn.Hardtanh, []), (nn.LPPool2d, [2, 2]),
                                           (nn.AlphaDropout, [0.1]), (nn.SELU, [])])
def test_2018_layer_classes_that_nord_lacked_build(neural_nets, layer, params):
    d = NeuralDescriptor()
    d.add_layer_sequential(layer, params)
    net = neural_nets.NeuralNet(d, 10, torch.zeros(1, 3, 8, 8))
    assert net(torch.zeros(2, 3, 8, 8)).shape == (2, 10)


def test_the_added_layers_never_modify_their_input_in_place(neural_nets):
    assert dict(get_layer_spec(nn.Hardtanh).forced) == {"inplace": False}
    assert dict(get_layer_spec(nn.MaxPool3d).forced) == {"return_indices": False}


def test_nord_layers_keep_their_names(neural_nets):
    assert nn.Conv2d not in neural_nets.layers.layer_types.REGISTERED
    assert get_layer_spec(nn.Conv2d).name == "conv2d"
    assert get_layer_spec(nn.ConvTranspose2d).name == "conv_transpose2d"


def test_a_layer_that_needs_a_second_input_is_refused_with_the_valid_names(neural_nets):
    with pytest.raises(UnknownLayerError, match="valid layer types are"):
        NeuralDescriptor().add_layer(nn.MaxUnpool2d, [2])


# --- NeuralNet(descriptor, num_classes, sample) ---------------------------------------------
def test_neural_net_takes_its_input_shape_from_the_sample(neural_nets):
    net = neural_nets.NeuralNet(conv_descriptor(3), 7, torch.zeros(1, 3, 16, 12))
    assert net.input_shape == (3, 16, 12)
    assert net(torch.zeros(5, 3, 16, 12)).shape == (5, 7)


@pytest.mark.parametrize("shape", [(3, 32, 32), (3072,)])
def test_neural_net_refuses_a_sample_without_its_batch_dimension(neural_nets, shape):
    with pytest.raises(ConfigurationError, match="unsqueeze"):
        neural_nets.NeuralNet(conv_descriptor(), 10, torch.zeros(shape))


# --- the data ---------------------------------------------------------------------------------
def test_legacy_cifar10_scales_pixels_to_minus_one_one(neural_nets, cifar_root):
    raw = read_cifar10(cifar_root / "cifar-10-batches-py")[0]
    curator = neural_nets.local.data_curator.LegacyCIFAR10(cifar_root, download=False, verify=False)
    images, _ = curator.tensors("train")
    assert torch.allclose(images, torch.from_numpy(raw.astype(np.float32) / 127.5 - 1), atol=1e-6)


def test_nord_legacy_data_names_a_folder_read_without_checksums(neural_nets, legacy_data):
    curator = neural_nets.local.data_curator.default_curator()
    assert (curator.root, curator.download, curator.verify) == (legacy_data, False, False)
    assert curator.n_train == N_TRAIN and curator.input_shape == (3, 32, 32)


def test_without_nord_legacy_data_the_official_cifar10_is_downloaded_and_verified(
        neural_nets, tmp_path, monkeypatch):
    monkeypatch.delenv(nord.legacy.DATA_ENV, raising=False)
    monkeypatch.setenv("NORD_DATA_ROOT", str(tmp_path))
    curator = neural_nets.local.data_curator.default_curator()
    assert (curator.root, curator.download, curator.verify) == (tmp_path, True, True)


def test_missing_data_stops_the_evaluation_instead_of_scoring_zero(neural_nets, tmp_path,
                                                                   monkeypatch):
    monkeypatch.setenv(nord.legacy.DATA_ENV, str(tmp_path))
    with pytest.raises(MissingDataError):
        neural_nets.NeuralEvaluator().descriptor_evaluate(conv_descriptor())


def test_get_cifar10_gives_2018_batches_and_class_names(neural_nets, legacy_data):
    trainloader, testloader, classes = neural_nets.get_cifar10(train_batch=32)
    batches = list(trainloader)
    assert all(x.shape[1:] == (3, 32, 32) and len(x) <= 32 for x, _ in batches)
    assert sum(len(y) for _, y in batches) == N_TRAIN and batches[0][1].dtype == torch.int64
    assert sum(len(y) for _, y in testloader) == N_TEST
    assert len(classes) == 10 and classes[0] == "plane"


def test_get_cifar10_distributed_shares_the_test_set_out(neural_nets, legacy_data):
    seen = []
    for rank in range(2):
        train, sampler, test, _, _ = neural_nets.get_cifar10_distributed(2, rank)
        assert sampler is train and hasattr(sampler, "set_epoch")
        seen.append(sum(len(y) for _, y in test))
    assert sum(seen) == N_TEST and min(seen) > 0


# --- NeuralEvaluator ----------------------------------------------------------------------
def test_the_2018_training_defaults(neural_nets, legacy_data):
    inner = neural_nets.NeuralEvaluator().evaluator
    assert (inner.epochs, inner.optimizer, inner.lr, inner.optimizer_kwargs) == (
        5, "sgd", 0.01, {"momentum": 0.5})
    assert (inner.batch_size, inner.test_batch_size) == (128, 128)
    assert isinstance(inner.get_curator(), neural_nets.local.data_curator.LegacyCIFAR10)


def test_descriptor_evaluate_returns_minus_the_test_accuracy(neural_nets, legacy_data):
    evaluator = neural_nets.NeuralEvaluator()
    fitness = evaluator.descriptor_evaluate(conv_descriptor())
    result = evaluator.last_result
    assert type(fitness) is float and fitness == -result.accuracy
    assert result.epochs == 5 and result.metrics["test_samples"] == N_TEST
    assert fitness < -0.5  # the classes are easy patterns: training found them


def test_untrained_tests_the_initial_weights(neural_nets, legacy_data):
    evaluator = neural_nets.NeuralEvaluator()
    untrained = evaluator.descriptor_evaluate(conv_descriptor(), untrained=True)
    assert evaluator.last_result.epochs == 0
    assert untrained > evaluator.descriptor_evaluate(conv_descriptor())
    assert evaluator.descriptor_evaluate(conv_descriptor(), untrained=True) == untrained  # seeded


def test_a_network_that_cannot_be_built_scores_zero(neural_nets, legacy_data):
    evaluator = neural_nets.NeuralEvaluator()
    assert evaluator.descriptor_evaluate(conv_descriptor(kernel=40)) == 0.0
    assert evaluator.last_result.status == "failed"
    assert "ShapeError" in evaluator.last_result.error


def test_verbose_raises_for_a_network_that_cannot_be_built(neural_nets, legacy_data):
    failed = neural_nets.local.neural_evaluator.EvaluationFailed
    with pytest.raises(failed, match="ShapeError"):
        neural_nets.NeuralEvaluator().descriptor_evaluate(conv_descriptor(kernel=40), verbose=True)


def test_verbose_prints_the_test_accuracy_in_2018s_words(neural_nets, legacy_data, capsys):
    evaluator = neural_nets.NeuralEvaluator(epochs=1)
    fitness = evaluator.descriptor_evaluate(conv_descriptor(), verbose=True)
    loss = evaluator.last_result.metrics["test_loss"]
    assert capsys.readouterr().out.endswith(
        "Finished Training\n"
        f"Accuracy of the network on the test images: {-100 * fitness:.2f} %\n"
        f"Loss of the network on the test images: {loss:.4f} \n")
    evaluator.descriptor_evaluate(conv_descriptor(), untrained=True, verbose=True)
    out = capsys.readouterr().out
    assert "Finished Training" not in out and "Accuracy of the network on the test images" in out


def test_get_sample_has_the_2018_layout(neural_nets, legacy_data):
    sample = neural_nets.NeuralEvaluator().get_sample()
    assert isinstance(sample, np.ndarray) and sample.shape == (32, 32, 3)
    batch = torch.Tensor(sample).transpose(2, 0).unsqueeze(0)  # as 2018 programs did
    assert neural_nets.NeuralNet(conv_descriptor(), 10, batch)(batch).shape == (1, 10)


def test_train_and_test_take_a_torch_network(neural_nets, legacy_data):
    evaluator = neural_nets.NeuralEvaluator()
    net = neural_nets.NeuralNet(conv_descriptor(), 10, torch.zeros(1, 3, 32, 32))
    before = evaluator.test(net)
    evaluator.train(net, 3)
    assert 0 <= before < evaluator.test(net) <= 1


def test_deep_copies_share_the_evaluator(neural_nets, legacy_data):
    evaluator = neural_nets.NeuralEvaluator()
    problem = {"evaluator": evaluator}
    assert copy.deepcopy(problem)["evaluator"] is evaluator


def test_bad_settings_are_refused_at_construction(neural_nets, legacy_data):
    with pytest.raises(ConfigurationError, match="learning rate"):
        neural_nets.NeuralEvaluator(lr=0)


def test_the_distributed_evaluator_alone_equals_the_local_one(neural_nets, legacy_data):
    local = neural_nets.NeuralEvaluator(epochs=1).descriptor_evaluate(conv_descriptor())
    alone = neural_nets.DistributedNeuralEvaluator(epochs=1)
    assert alone.descriptor_evaluate(conv_descriptor()) == local
    assert alone.evaluator.scale_lr and alone.evaluator.optimizer == "sgd"


# --- Environment and its log file -----------------------------------------------------------
def test_environment_appends_the_2018_log_file(neural_nets, log_files):
    module = neural_nets.distributed.environment
    for message in ("first;1", "second;2"):
        with module.Environment(logger="experiment") as env:
            assert module.env is env
            env.log(message)
    assert module.env is None
    lines = (log_files / "experiment.log").read_text().splitlines()
    assert len(lines) == 2
    for line, message in zip(lines, ("first;1", "second;2")):
        assert re.fullmatch(LOG_LINE % ("experiment", message), line), line


def test_environment_logs_to_nord_log_by_default(neural_nets, log_files):
    with neural_nets.distributed.Environment() as env:
        env.log("hello")
    assert re.fullmatch(LOG_LINE % ("NORD", "hello"), (log_files / "NORD.log").read_text().strip())


def test_environment_has_the_2018_names(neural_nets, log_files, capsys):
    with neural_nets.distributed.Environment() as env:
        assert (env.world_rank, env.world_size, env.local_rank, env.master()) == (0, 1, 0, True)
    assert capsys.readouterr().out == "Master initialized.\n"  # 2018's status line


# --- utils ----------------------------------------------------------------------------------
def test_get_logger_writes_each_line_once(log_files):
    get_logger("twice")
    get_logger("twice").info("x")
    assert (log_files / "twice.log").read_text().count(";twice;INFO;x") == 1


def test_extract_params_reads_the_constructor():
    assert extract_params(nn.Conv2d, non_empty_only=True) == ["in_channels", "out_channels",
                                                             "kernel_size"]
    assert "stride" in extract_params(nn.Conv2d)


def test_generate_layer_parameters_draws_typed_values():
    names, values = generate_layer_parameters(nn.Conv2d)
    assert names == ["in_channels", "out_channels", "kernel_size"]
    assert all(isinstance(v, int) and 0 <= v < 64 for v in values)


def test_small_helpers():
    assert get_convolution_out_size(32, 5) == 28
    assert get_convolution_out_size(32, 3, padding=1, stride=2) == 16.5
    assert (format_time(0), format_time(3.25), format_time(3725)) == ("0ms", "3s250ms", "1h2m")


def test_get_random_value_draws_the_asked_type():
    assert isinstance(get_random_value(int), int) and 0 <= get_random_value(int) < 64
    assert 0 <= get_random_value(float) < 1
    assert get_random_value(bool) in (True, False) and get_random_value(str) is None


def test_progress_bar_writes_one_line_per_step(capsys):
    for step in range(3):
        progress_bar(step, 3, "Loss: 0.50")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[-1].startswith(" [" + "=" * 40 + "] 3/3")
    assert all(line.endswith("| Loss: 0.50") for line in lines)
