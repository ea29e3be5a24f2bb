"""The experiments take `nord run`'s flags from nord.app.commands.run (one definition of each),
with the paper's defaults where they differ on purpose."""
import argparse
import importlib.util

import pytest

from nord.app.cli import build_parser
from nord.app.commands.run import add_run_flags
from nord.errors import ConfigurationError
from tests.mpirun import REPO


@pytest.fixture(scope="module")
def common():
    spec = importlib.util.spec_from_file_location("experiments_common",
                                                  REPO / "experiments" / "common.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def helps(parser):
    return {action.option_strings[-1]: action.help for action in parser._actions
            if action.option_strings}


def run_helps():
    commands = next(action for action in build_parser()._actions
                    if isinstance(action, argparse._SubParsersAction))
    return helps(commands.choices["run"])


def test_an_experiment_flag_is_nord_runs_flag(common):
    ours, theirs = helps(common.parser("experiment1", "a test")), run_helps()
    shared = set(ours) & set(theirs) - {"--help"}
    assert len(shared) == len(common.SHARED_FLAGS)
    differing = {flag for flag in shared if ours[flag] != theirs[flag]}
    assert differing == {"--population", "--generations", "--journal"}
    assert ours["--journal"].endswith("(default: runs/experiment1.db)")
    assert "default: 10" in ours["--population"] and "default: 10" in ours["--generations"]


def test_the_paper_defaults_and_nord_runs_make_the_config(common, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = common.parser("experiment3", "a test", flags=("group_size",),
                         defaults={"group_size": 1}).parse_args([])
    config = common.config_from(args, evaluation="distributed", algorithm="genetic")
    assert (config.algorithm_params["population_size"], config.budget) == (10, 110)
    assert (config.dataset, config.epochs, config.mode, config.group_size) == ("digits", 1,
                                                                               "sync", 1)
    assert config.journal == "runs/experiment3.db" and (tmp_path / "runs").is_dir()


def test_a_flag_given_reaches_the_config(common, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = common.parser("experiment2", "a test", flags=("backend",)).parse_args(
        ["--backend", "torch", "--lr", "0.01", "--smoke", "--journal", "r.db"])
    config = common.config_from(args, evaluation="data-parallel", algorithm="pygmo")
    assert (config.backend, config.lr, config.journal, config.budget) == ("torch", 0.01,
                                                                          "r.db", 12)


def test_a_name_that_is_no_run_flag_is_refused_with_the_names():
    with pytest.raises(ConfigurationError, match="'population_size'.*population, generations"):
        add_run_flags(argparse.ArgumentParser(), ["epochs", "population_size"])
