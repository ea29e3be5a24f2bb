"""Fixtures and helpers of the nord.legacy tests (tests/unit/test_legacy*.py).

    from tests.helpers.legacy import neural_nets, cifar_root, legacy_data, log_files  # fixtures
    write(folder, {**package_2018(), **utils_2018()})   # a NORD 2018 checkout's shape

The data is a small CIFAR-10 in the official python format, written by
``nord.legacy.smoke.write_cifar10``; each class is a colour pattern plus noise, so that a
trained network is clearly better than its initial weights.
"""
import importlib
import logging
import os
import subprocess
import sys

import pytest
import torch.nn as nn

import nord.architecture.layers
import nord.legacy
from nord.architecture.descriptor import NeuralDescriptor
from nord.legacy.smoke import write_cifar10
from tests.mpirun import REPO

N_TRAIN, N_TEST = 100, 40
LOG_LINE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d;%s;INFO;%s"


@pytest.fixture(scope="module", autouse=True)
def neural_nets():
    """The 2018 ``neural_nets`` package, with nord's layer registry private to the test module.

    Importing it registers the 2018 layer classes nord lacks; other test modules must not see
    them (they parametrise over the registry, and use some of those classes as examples of
    unregistered ones). So the import happens here, not at collection, into a copy of the
    registry that is dropped after the module.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nord.architecture.layers, "LAYERS", nord.architecture.layers.LAYERS.copy())
        yield importlib.import_module("nord.legacy.neural_nets")


@pytest.fixture(scope="module")
def cifar_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("cifar")
    write_cifar10(root, n_train=N_TRAIN, n_test=N_TEST, seed=0)
    return root


@pytest.fixture
def legacy_data(cifar_root, monkeypatch):
    """The 2018 evaluators read the small CIFAR-10 through NORD_LEGACY_DATA."""
    monkeypatch.setenv(nord.legacy.DATA_ENV, str(cifar_root))
    return cifar_root


@pytest.fixture
def log_files(tmp_path, monkeypatch):
    """Run in tmp_path; close the 2018 file loggers opened there afterwards."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for logger in list(logging.Logger.manager.loggerDict.values()):
        for handler in list(getattr(logger, "handlers", [])):
            if getattr(handler, "baseFilename", "").startswith(str(tmp_path)):
                handler.close()
                logger.removeHandler(handler)


def conv_descriptor(kernel=5):
    """nord's descriptor of a convolution and a ReLU6, which the 2018 evaluators take too."""
    d = NeuralDescriptor()
    d.add_layer_sequential(nn.Conv2d, [3, 8, kernel])
    d.add_layer_sequential(nn.ReLU6, [])
    return d


# --- a 2018 checkout, written by the tests (names only, never 2018's code) ----------------
# The shape of NORD 2018's neural_nets/ package: its files, and what its __init__.py imports.
PACKAGE_2018 = ["__init__.py", "neural_descriptor.py", "neural_builder.py", "layers/__init__.py",
                "layers/layer_parameters.py", "layers/layer_types.py", "local/data_curator.py",
                "local/neural_evaluator.py", "distributed/__init__.py",
                "distributed/data_curator.py", "distributed/environment.py",
                "distributed/neural_evaluator.py"]
IMPORTS_2018 = [("layers", "*"), ("local.data_curator", "get_cifar10"),
                ("distributed.data_curator", "get_cifar10_distributed"),
                ("neural_builder", "NeuralNet"), ("local.neural_evaluator", "NeuralEvaluator"),
                ("distributed.neural_evaluator", "DistributedNeuralEvaluator"),
                ("neural_descriptor", "NeuralDescriptor")]
UTILS_2018 = ["get_logger", "get_convolution_out_size", "extract_params", "print_all_parameters",
              "get_random_value", "generate_layer_parameters", "progress_bar", "format_time"]
FAILS = "raise ImportError('NORD 2018 file {} ran: No module named torchvision')\n"


def write(folder, files):
    """Write ``{relative path: text}`` under ``folder``."""
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def package_2018(extra_imports=(), runs=False):
    """neural_nets/ shaped as 2018's; its modules raise, or (``runs``) define the names."""
    imports = IMPORTS_2018 + list(extra_imports)
    files = {"neural_nets/__init__.py": "".join(f"from .{module} import {name}\n"
                                                for module, name in imports)}
    for name in PACKAGE_2018[1:]:
        module = name[:-3].replace("/", ".").replace(".__init__", "")
        defined = [n for m, n in imports if m == module and n != "*"]
        files[f"neural_nets/{name}"] = ("".join(f"{n} = 'own'\n" for n in defined) if runs
                                        else FAILS.format(name))
    return files


def utils_2018(extra=()):
    """utils.py shaped as 2018's: its import of neural_nets' layers and its eight functions."""
    body = "".join(f"def {name}(*args):\n    raise RuntimeError('NORD 2018 utils ran')\n"
                   for name in UTILS_2018 + list(extra))
    return {"utils.py": "from neural_nets import layers\n" + body}


def run_python(args, cwd, env=None, timeout=300):
    """``python ARGS`` in ``cwd`` with nord importable and MPI's launcher variables unset, as a
    user would run a 2018 script; returns the CompletedProcess (stdout and stderr apart)."""
    full_env = {key: value for key, value in os.environ.items()
                if not key.startswith(("OMPI_", "PMIX_", "PMI_"))}
    full_env.update(PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", **(env or {}))
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, env=full_env,
                          timeout=timeout, capture_output=True, text=True)
