"""nord.legacy: the 2018 calls beyond the examples, each with 2018's meaning or a message that
says what to write instead: the descriptor's attributes and views, any module class as a
layer, the evaluators' module globals and loaders, the Environment's ``comm`` and
``close_workers``, and where the data is read from.
"""
import copy
import sys

import pytest
import torch
import torch.nn as nn

import nord.legacy
from nord.architecture.descriptor import NeuralDescriptor as NordDescriptor
from nord.errors import ConfigurationError, UnknownLayerError
from nord.legacy.smoke import write_cifar10
from nord.report.architecture import layered_layout
from tests.helpers.legacy import N_TEST, N_TRAIN, conv_descriptor, run_python
from tests.helpers.legacy import cifar_root, legacy_data, neural_nets  # noqa: F401


class Scale(nn.Module):
    """A layer of the user's own, as 2018 programs could add any class."""

    def __init__(self, factor=2.0):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


@pytest.fixture
def descriptor_module(neural_nets):
    return sys.modules["nord.legacy.neural_nets.neural_descriptor"]


@pytest.fixture
def local(neural_nets):
    """The module ``neural_nets.local.neural_evaluator`` (its 2018 globals)."""
    return sys.modules["nord.legacy.neural_nets.local.neural_evaluator"]


@pytest.fixture
def distributed(neural_nets):
    """The module ``neural_nets.distributed.neural_evaluator`` (its 2018 globals)."""
    return sys.modules["nord.legacy.neural_nets.distributed.neural_evaluator"]


def branching(neural_nets):
    """2018's descriptor example in small: a convolution feeding two pools."""
    d = neural_nets.NeuralDescriptor()
    d.add_layer(nn.Conv2d, [3, 4, 3], "conv")
    d.add_layer(nn.MaxPool2d, [2, 2])
    d.add_layer(nn.AvgPool2d, {"kernel_size": 2, "padding": 1})
    d.connect_layers("conv", "1_Layer")
    d.connect_layers("conv", "2_Layer")
    return d


# --- the descriptor ---------------------------------------------------------------------------
def test_first_last_and_current_layer_are_2018s(neural_nets):
    d = neural_nets.NeuralDescriptor()
    assert (d.first_layer, d.last_layer, d.current_layer) == ("", "", 0)
    d.add_layer(nn.Conv2d, [3, 4, 3], "conv")
    d.add_layer_sequential(nn.ReLU6, [])
    assert (d.first_layer, d.last_layer, d.current_layer) == ("conv", "1_Layer", 2)


def test_generated_names_read_default_suffix_when_a_layer_is_added(neural_nets, descriptor_module,
                                                                   monkeypatch):
    d = neural_nets.NeuralDescriptor()
    d.add_layer_sequential(nn.Conv2d, [3, 4, 3])
    monkeypatch.setattr(descriptor_module, "DEFAULT_SUFFIX", "Node")
    d.add_layer_sequential(nn.ReLU6, [])
    assert d.layer_names == ["0_Layer", "1_Node"] and d.connections["0_Layer"] == ["1_Node"]


def test_layers_read_as_class_and_parameters(neural_nets):
    d = branching(neural_nets)
    cls, params = d.layers["conv"]
    assert cls is nn.Conv2d and params == [3, 4, 3] and isinstance(cls(*params), nn.Conv2d)
    assert d.layers["1_Layer"][0] is nn.MaxPool2d and d.layers["1_Layer"][1] == [2, 2]
    assert d.layers["2_Layer"][1] == {"kernel_size": 2, "padding": 1}  # by keyword: a dict
    assert d.layers["conv"].type == "conv2d"  # and nord's Layer still
    assert list(d.layers) == ["conv", "1_Layer", "2_Layer"]


def test_connections_map_every_layer_to_the_layers_it_feeds(neural_nets):
    d = branching(neural_nets)
    assert d.connections == {"conv": ["1_Layer", "2_Layer"], "1_Layer": [], "2_Layer": []}
    assert d.connections["conv"] == ["1_Layer", "2_Layer"]


def test_the_2018_views_refuse_edits_and_name_the_method_to_call(neural_nets):
    d = branching(neural_nets)
    read_only = neural_nets.neural_descriptor.ReadOnlyError
    with pytest.raises(read_only, match=r"d\.connect_layers"):
        d.connections["1_Layer"].append("2_Layer")
    with pytest.raises(read_only, match=r"d\.add_layer"):
        d.layers["extra"] = [nn.ReLU, []]
    _, params = d.layers["conv"]
    with pytest.raises(read_only, match=r"d\.remove_layer\('conv'\)"):
        params[1] = 8
    with pytest.raises(AttributeError, match=r"set_input"):
        d.first_layer = "1_Layer"
    with pytest.raises(AttributeError, match=r"set_output"):
        d.last_layer = "conv"
    with pytest.raises(AttributeError, match=r"add_layer\(cls, params, name\)"):
        d.current_layer = 0
    mine = copy.deepcopy(params)  # a copy is the user's to change
    mine[1] = 8
    assert type(mine) is list and d.layers["conv"][1] == [3, 4, 3]


def test_the_2018_descriptor_is_nords_for_storing_drawing_and_hashing(neural_nets):
    d = branching(neural_nets)
    nord_d = NordDescriptor.from_dict(d.to_dict())
    assert nord_d.connections == [("conv", "1_Layer"), ("conv", "2_Layer")]
    assert nord_d.hash == d.hash and repr(d) == "NeuralDescriptor(3 layers, 2 connections)"
    again = type(d).from_dict(d.to_dict())
    assert again == d and again.connections == d.connections and again.current_layer == 3
    assert len(layered_layout(d).nodes) == 5  # input, three layers, output


def test_any_module_class_is_a_layer(neural_nets, legacy_data):
    d = neural_nets.NeuralDescriptor()
    d.add_layer_sequential(nn.Conv2d, [3, 4, 3])
    d.add_layer_sequential(Scale, [0.5])
    assert d.layers["1_Layer"].type == "scale"
    assert d.layers["1_Layer"][0] is Scale and d.layers["1_Layer"][1] == [0.5]
    net = neural_nets.NeuralNet(d, 10, torch.zeros(1, 3, 8, 8))
    assert net(torch.zeros(2, 3, 8, 8)).shape == (2, 10)
    assert any(isinstance(module, Scale) and module.factor == 0.5 for module in net.modules())
    assert neural_nets.NeuralEvaluator(epochs=1).descriptor_evaluate(d) < 0


def test_a_class_of_the_same_name_elsewhere_gets_a_name_of_its_own(neural_nets):
    class Scale(nn.Module):  # noqa: F811 - another class of the same name
        def forward(self, x):
            return x

    d = neural_nets.NeuralDescriptor()
    d.add_layer(globals()["Scale"], [], "module_level")
    d.add_layer(Scale, [], "local")
    assert d.layers["module_level"].type == "scale"
    assert d.layers["local"].type.startswith("legacy_") and d.layers["local"][0] is Scale


def test_a_class_that_is_no_module_is_refused(neural_nets):
    with pytest.raises(UnknownLayerError, match="valid layer types are"):
        neural_nets.NeuralDescriptor().add_layer(dict, [])


# --- the evaluators' module globals -----------------------------------------------------------
def test_the_module_globals_take_effect_when_set(neural_nets, local, legacy_data, monkeypatch):
    evaluator = neural_nets.NeuralEvaluator()  # made before the globals change, as in 2018
    monkeypatch.setattr(local, "EPOCHS", 2)
    monkeypatch.setattr(local, "learning_rate", 0.05)
    monkeypatch.setattr(local, "momentum", 0.9)
    monkeypatch.setattr(local, "device", torch.device("cpu"))
    evaluator.descriptor_evaluate(conv_descriptor())
    inner = evaluator.evaluator
    assert evaluator.last_result.epochs == 2
    assert (inner.lr, inner.optimizer_kwargs, str(inner.device)) == (0.05, {"momentum": 0.9}, "cpu")


def test_arguments_of_the_constructor_override_the_globals(neural_nets, local, legacy_data,
                                                           monkeypatch):
    monkeypatch.setattr(local, "EPOCHS", 3)
    evaluator = neural_nets.NeuralEvaluator(epochs=1, lr=0.2)
    evaluator.descriptor_evaluate(conv_descriptor())
    assert evaluator.last_result.epochs == 1 and evaluator.evaluator.lr == 0.2


@pytest.mark.parametrize("name, value, words", [
    ("EPOCHS", -1, r"neural_nets\.local\.neural_evaluator\.EPOCHS"),
    ("learning_rate", 0, r"neural_nets\.local\.neural_evaluator\.learning_rate"),
    ("momentum", "high", r"neural_nets\.local\.neural_evaluator\.momentum")])
def test_a_global_that_cannot_be_used_is_refused_by_its_2018_name(neural_nets, local, legacy_data,
                                                                  monkeypatch, name, value, words):
    evaluator = neural_nets.NeuralEvaluator()
    monkeypatch.setattr(local, name, value)
    with pytest.raises(ConfigurationError, match=words):
        evaluator.descriptor_evaluate(conv_descriptor())


def test_nord_legacy_epochs_sets_where_epochs_starts(local, monkeypatch):
    monkeypatch.setenv(nord.legacy.EPOCHS_ENV, "2")
    assert local.epochs_from_environment() == 2
    monkeypatch.setenv(nord.legacy.EPOCHS_ENV, "two")
    with pytest.raises(ConfigurationError, match="NORD_LEGACY_EPOCHS"):
        local.epochs_from_environment()
    monkeypatch.delenv(nord.legacy.EPOCHS_ENV)
    assert local.epochs_from_environment() == 5


def test_another_criterion_is_refused_by_descriptor_evaluate_and_used_by_train_and_test(
        neural_nets, local, legacy_data, monkeypatch):
    calls = []

    class Counted(nn.CrossEntropyLoss):
        def forward(self, outputs, labels):
            calls.append(len(labels))
            return super().forward(outputs, labels)

    monkeypatch.setattr(local, "criterion", Counted())
    evaluator = neural_nets.NeuralEvaluator()
    with pytest.raises(ConfigurationError, match=r"criterion .* evaluator\.train\(net, EPOCHS\)"):
        evaluator.descriptor_evaluate(conv_descriptor())
    net = neural_nets.NeuralNet(conv_descriptor(), 10, torch.zeros(1, 3, 32, 32))
    evaluator.train(net, 1)
    assert sum(calls) >= N_TRAIN - 1  # every training batch (a 1-sample remainder is skipped)
    calls.clear()
    evaluator.test(net)
    assert sum(calls) == N_TEST


def test_the_distributed_globals_alone(neural_nets, distributed, legacy_data, monkeypatch):
    monkeypatch.setattr(distributed, "initial_lr", 0.02)
    monkeypatch.setattr(distributed, "final_lr", 123.0)  # recomputed at each evaluation
    monkeypatch.setattr(distributed, "EPOCHS", 1)
    evaluator = neural_nets.DistributedNeuralEvaluator()
    evaluator.descriptor_evaluate(conv_descriptor())
    assert distributed.final_lr == 0.02 and evaluator.evaluator.lr == 0.02  # times 1 rank
    assert evaluator.last_result.epochs == 1
    assert str(evaluator.evaluator.device) == "auto"  # each rank its own GPU


# --- the evaluators' loaders and output -------------------------------------------------------
def test_trainloader_testloader_and_classes(neural_nets, legacy_data):
    evaluator = neural_nets.NeuralEvaluator()
    batches = list(evaluator.trainloader)
    assert sum(len(labels) for _, labels in batches) == N_TRAIN
    assert batches[0][0].shape[1:] == (3, 32, 32) and len(batches[0][0]) <= 128
    assert sum(len(labels) for _, labels in evaluator.testloader) == N_TEST
    assert evaluator.trainloader is evaluator.trainloader and len(evaluator.testloader) == 1
    assert evaluator.classes == ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse",
                                 "ship", "truck")
    alone = neural_nets.DistributedNeuralEvaluator()
    assert alone.trainsampler is alone.trainloader and alone.testsampler is alone.testloader


def test_train_and_test_print_2018s_lines(neural_nets, legacy_data, capsys):
    evaluator = neural_nets.NeuralEvaluator()
    net = neural_nets.NeuralNet(conv_descriptor(), 10, torch.zeros(1, 3, 32, 32))
    evaluator.train(net, 1, verbose=True)
    accuracy = evaluator.test(net, verbose=True)
    lines = capsys.readouterr().out.splitlines()
    assert "Finished Training" in lines
    assert f"Accuracy of the network on the test images: {100 * accuracy:.2f} %" in lines
    assert any(line.startswith("Loss of the network on the test images: ") for line in lines)


# --- the data ---------------------------------------------------------------------------------
def test_the_2018_data_folder_is_read_when_it_holds_cifar10(neural_nets, tmp_path, monkeypatch):
    monkeypatch.delenv(nord.legacy.DATA_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    curators = neural_nets.local.data_curator
    assert curators.default_curator().root != tmp_path / "neural_nets" / "data"  # not there yet
    write_cifar10(tmp_path / "neural_nets" / "data", n_train=5, n_test=1)
    curator = curators.default_curator()
    assert (curator.root, curator.download, curator.verify) == (
        tmp_path / "neural_nets" / "data", False, True)  # 2018's download: the official files


# --- the Environment --------------------------------------------------------------------------
@pytest.mark.processes
def test_comm_is_comm_world_without_mpirun_and_close_workers_finalises(tmp_path):
    program = (
        "import nord.legacy\n"
        "from neural_nets.distributed import Environment\n"
        "from neural_nets.distributed.environment import close_workers\n"
        "import neural_nets.distributed.environment as environment\n"
        "with Environment() as e:\n"
        "    comm = e.comm\n"
        "    from mpi4py import MPI\n"
        "    assert comm is MPI.COMM_WORLD and comm.Get_size() == 1, comm\n"
        "    close_workers()\n"
        "    assert environment.env is None and not e.active\n"
        "print('finalized', MPI.Is_finalized())\n")
    done = run_python(["-c", program], tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "Master initialized.\nfinalized True\n", done.stdout
