"""A refusal names what is really wrong and the way out, in the words of the command."""
import argparse

import pytest

from nord.app.cli import build_parser, main
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


def _refusal(argv, capsys) -> str:
    """What ``nord ARGV`` says when argparse refuses it: one line, exit status 2."""
    with pytest.raises(SystemExit) as ended:
        main(argv)
    assert ended.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "usage:" not in error, error
    return error


def _commands(parser=None, words=()):
    """Every (sub)command: (its words, its parser), ``nord data download`` included."""
    parser = parser or build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*words, name), sub
                yield from _commands(sub, (*words, name))


def _leaves():
    return [(words, sub) for words, sub in _commands()
            if not any(isinstance(a, argparse._SubParsersAction) for a in sub._actions)]


def _flags(sub):
    return [option for action in sub._actions for option in action.option_strings
            if option.startswith("--")]


def _required(sub):
    """Words that satisfy a command's required arguments, so that argparse gets to the
    flags."""
    words = []
    for action in sub._actions:
        if not action.option_strings and action.nargs not in ("?", "*"):
            words.append("x.db")
        elif action.required and action.option_strings:
            words += [action.option_strings[-1], "x"]
    return words


def _mistyped(flag: str) -> str:
    """The flag with two letters in its middle swapped: no abbreviation of any flag."""
    middle = len(flag) // 2 + 1
    return flag[:middle] + flag[middle + 1] + flag[middle] + flag[middle + 2:]


@pytest.mark.parametrize("words, flag", [
    (words, flag) for words, sub in _leaves() for flag in _flags(sub)
    if len(flag) >= 6 and flag != "--help"], ids=lambda value: " ".join(value)
                                             if isinstance(value, tuple) else value)
def test_a_mistyped_flag_of_any_command_gets_one_line_with_the_nearest(words, flag, capsys):
    """Every flag of every command, two letters swapped."""
    sub = dict(_leaves())[words]
    typo = _mistyped(flag)
    error = _refusal([*words, *_required(sub), typo, "1"], capsys)
    assert error.startswith(f"nord {' '.join(words)}: unknown flag {typo} (did you mean {flag}?)")
    assert f"'nord {' '.join(words)} --help'" in error


def test_under_mpirun_rank_0_alone_says_a_refusal(monkeypatch, capsys):
    import nord.app.cli as cli
    monkeypatch.setattr(cli, "QUIET_RANKS_WAIT", 0)
    for rank, said in (("1", ""), ("0", "nord run: unknown flag --algoritm")):
        monkeypatch.setenv("OMPI_COMM_WORLD_RANK", rank)
        with pytest.raises(SystemExit) as ended:
            main(["run", "--algoritm", "rea"])
        assert ended.value.code == 2
        error = capsys.readouterr().err
        assert error.startswith(said) if said else error == ""


def test_the_trial_s_mistyped_algorithm_flag_gets_its_nearest(capsys):
    assert _refusal(["run", "--algoritm", "rea"], capsys) == (
        "nord run: unknown flag --algoritm (did you mean --algorithm?); see 'nord run --help'\n")


def test_a_mistyped_flag_of_resume_is_no_setting_resume_keeps(capsys):
    error = _refusal(["resume", "x.db", "--budegt", "3"], capsys)
    assert "did you mean --budget?" in error and "cannot change on resume" not in error


@pytest.mark.parametrize("argv, words", [
    (["comapre"], "nord: unknown command 'comapre' (did you mean compare?); the commands are "
                  "run, resume,"),
    (["data", "downlaod", "mnist"], "nord data: unknown command 'downlaod' (did you mean "
                                    "download?)"),
    (["compare", "--mode", "asnyc"], "nord compare: --mode takes one of sync, async; got "
                                     "'asnyc' (did you mean async?)"),
    (["report", "x.db", "--out", "o", "--format", "hmtl"], "(did you mean html?)"),
    (["compare", "--repeats", "often"], "--repeats takes one of charge, free; got 'often'; see"),
    (["list", "runs", "--bogus"], "nord list: unknown flag --bogus; see 'nord list --help'"),
    (["export", "a.db", "b.db", "c.db"], "nord export: unexpected argument c.db"),
])
def test_a_mistyped_command_or_choice_gets_one_line(argv, words, capsys):
    assert words in _refusal(argv, capsys)


@pytest.mark.parametrize("registry, words, flag", [
    ("nord.search.algorithms.registry:ALGORITHMS", ["run"], "--algorithm"),
    ("nord.search.algorithms.registry:ALGORITHMS", ["compare"], "--algorithms"),
    ("nord.search.spaces.registry:SPACES", ["run"], "--space"),
    ("nord.data.registry:CURATORS", ["run"], "--dataset"),
    ("nord.benchmarks.nasbench201.table:DATASET_NAMES", ["run"], "--dataset"),
    ("nord.benchmarks.nasbench201.table:DATASET_NAMES", ["compare"], "--dataset"),
    ("nord.nn.recipe:RECIPES", ["run"], "--recipe"),
    ("nord.search.schedulers:SCHEDULERS", ["run"], "--scheduler"),
])
def test_a_flag_s_help_names_what_its_registry_holds_now(registry, words, flag):
    """Registered a moment ago, named in the help: a help text cannot lag its registry."""
    from nord.registry import import_dotted
    registry = import_dotted(registry.replace(":", "."))
    registry.register("zz-registered-now", registry.get(registry.names()[0]),
                      description="registered by a test")
    try:
        sub = dict(_commands())[tuple(words)]
        action = next(a for a in sub._actions if flag in a.option_strings)
        assert "zz-registered-now" in action.help
    finally:
        registry.unregister("zz-registered-now")


def test_every_command_has_a_description():
    for words, sub in _commands():
        assert sub.description, f"nord {' '.join(words)} has no description"


def test_plugin_help_names_every_registry_a_plug_in_can_add_to_and_files(capsys):
    """Every registry whose hint tells a user to register their own is named, so the help
    cannot lag a new one."""
    import sys
    from importlib import import_module

    import nord.app.commands.run as run_command
    from nord.registry import Registry
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    plugin = text[text.rindex("--plugin NAMES"):text.rindex("--callbacks NAMES")]
    assert "./mynas.py" in plugin and "training callbacks" in plugin
    import_module("nord.app.assembly")   # imports every part a run is built from
    extensible = [value for name, module in list(sys.modules.items())
                  if name.startswith("nord.") for value in vars(module).values()
                  if type(value) is Registry and "register" in value.hint.lower()]
    assert len(extensible) >= 7
    assert {id(registry) for registry in extensible} <= {
        id(registry) for registry in run_command.plugin_registries()}
    for registry in run_command.plugin_registries():
        assert registry.kind.split(" (")[0] in plugin


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


@pytest.mark.parametrize("argv, words", [
    (["--mode", "asnyc"], "mode (--mode) must be one of sync, async; got 'asnyc' (did you mean "
                          "'async'?)"),
    (["--evaluation", "benchmrk"], "got 'benchmrk' (did you mean 'benchmark'?)"),
    (["--backend", "horovd"], "got 'horovd' (did you mean 'horovod'?)"),
    (["--workers", "1", "--mps", "of"], "--mps must be one of auto, on, off; got 'of' (did you "
                                        "mean 'off'?)"),
    (["--evaluation", "zero-cost", "--proxy", "synflw"], "(did you mean 'synflow'?)"),
    (["--mode", "sideways"], "must be one of sync, async; got 'sideways'\n"),
])
def test_a_mistyped_choice_of_a_run_gets_its_nearest(argv, words, capsys, tmp_path):
    """The choices a run's configuration checks (not argparse) name the nearest one too."""
    journal = tmp_path / "run.db"
    assert main(["run", *argv, "--journal", str(journal)]) == 2
    error = capsys.readouterr().err
    assert words in error and error.count("\n") == 1, error
    assert not journal.exists()
