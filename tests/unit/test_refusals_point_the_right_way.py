"""A refusal names what is really wrong and the way out, in the words of the command."""
import pytest

from nord.app.cli import main
from nord.app.settings import RunConfig
from nord.data import Digits
from nord.errors import ConfigurationError
from nord.evaluators.local import LocalEvaluator
from nord.search.algorithms.registry import make_algorithm
from nord.search.spaces import make_space


def test_workers_with_zero_cost_scoring_are_refused_for_what_zero_cost_does():
    with pytest.raises(ConfigurationError, match="scores untrained networks") as refused:
        RunConfig(evaluation="zero-cost", worker_processes=2)
    assert "trains each network on several MPI ranks" not in str(refused.value)


def test_workers_under_mpirun_are_refused_for_mpirun_not_for_the_cpus(monkeypatch):
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "3")
    with pytest.raises(ConfigurationError, match="launched by mpirun with 3 ranks"):
        RunConfig(worker_processes=64)


def test_a_plug_in_given_as_a_file_is_imported_and_recorded_by_its_path(tmp_path, monkeypatch):
    plugin = tmp_path / "my_file_plugin_callback.py"
    plugin.write_text("from nord.evaluators.callbacks import TrainingCallback, "
                      "register_callback\n\nclass Seen(TrainingCallback):\n"
                      "    def on_epoch_end(self, state):\n        return {}\n\n"
                      "register_callback('seen_by_file_plugin', Seen)\n")
    monkeypatch.chdir(tmp_path)
    config = RunConfig(plugins="./my_file_plugin_callback.py",
                       callbacks=["seen_by_file_plugin"])
    assert config.plugins == [str(plugin)]
    with pytest.raises(ConfigurationError, match=r"there is no file .*elsewhere\.py; .*or the "
                                                 r"path of a Python file"):
        RunConfig(plugins="./elsewhere.py")


def test_a_setting_resume_cannot_change_is_refused_saying_how_to_run_with_it(capsys):
    with pytest.raises(SystemExit) as ended:
        main(["resume", "runs/x.db", "--epochs", "3", "--lr=0.1"])
    assert ended.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("nord resume: --epochs, --lr cannot change on resume")
    assert "nord config runs/x.db > run.toml" in error and "usage: nord [-h]" not in error


def test_an_unknown_flag_is_refused_with_its_command_s_usage(capsys):
    with pytest.raises(SystemExit):
        main(["list", "runs", "--bogus"])
    error = capsys.readouterr().err
    assert "usage: nord list" in error and "unrecognized arguments: --bogus" in error


def test_resume_help_says_each_default_once(capsys):
    with pytest.raises(SystemExit):
        main(["resume", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: auto) (default: the journal's)" not in text
    assert text.count("(default:") == text.count("(default: the journal's)") + 1   # --budget


def test_a_batch_larger_than_the_data_is_sized_as_the_data():
    digits = Digits(seed=0)
    space = make_space("conv", input_shape=tuple(digits.input_shape), layers=2)
    descriptor = space.to_descriptor(space.lower)
    huge = LocalEvaluator(curator=digits, batch_size=100_000_000)
    whole = LocalEvaluator(curator=digits, batch_size=digits.n_train)
    assert huge.memory_need(descriptor) == whole.memory_need(descriptor)
    assert huge.descriptor_evaluate(descriptor).ok


def test_a_near_miss_algorithm_name_gets_a_guess():
    with pytest.raises(ConfigurationError, match="did you mean 'regularized_evolution'"):
        make_algorithm("regularised_evolution", make_space("nasbench201"))
