"""`nord run --config`, `nord config`, `--version`, help with defaults, and the run flags of the
protocol (validation split, schedulers)."""
import argparse
import math

import pytest

from nord import __version__
from nord.app.cli import build_parser, main
from nord.app.commands.run import RUN_FLAGS
from nord.app.config_file import read_config, to_toml
from nord.journal import Journal

BENCH = ["--space", "nasbench201", "--algorithm", "rea", "--budget", "12"]


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"nord {__version__}"


def _options(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from ((f"{name} {o}", a) for o, a in _options(sub))
        elif action.option_strings:
            yield action.option_strings[-1], action


def test_every_run_flag_says_its_default():
    """Each option of 'nord run' has a help line naming its default (switches and the
    config file aside), and the main help has no reStructuredText markup."""
    parser = build_parser()
    checked = 0
    for name, action in _options(parser):
        if not name.startswith("run ") or isinstance(action, (argparse._StoreTrueAction,
                                                              argparse._HelpAction)):
            continue
        if name == "run --config":
            continue
        assert action.help and "default" in action.help, name
        checked += 1
    # with --population and --generations; switches have no default to name
    assert checked == sum(kind != "flag" for _, _, kind, _ in RUN_FLAGS) + 2
    assert "``" not in parser.format_help() and "``" not in parser.description


def test_a_config_file_sets_what_flags_do_and_flags_override_it(tmp_path):
    (tmp_path / "run.toml").write_text(
        'algorithm = "random"\nbudget = 7\nseed = 5\nspace = "nasbench201"\n'
        '[algorithm_params]\n')
    journal = tmp_path / "r.db"
    assert main(["run", "--config", str(tmp_path / "run.toml"), "--seed", "2",
                 "--journal", str(journal)]) == 0
    with Journal(journal) as record:
        meta = record.metadata()
    assert meta["algorithm"] == "random" and meta["budget"] == 7
    assert meta["config"]["seed"] == 2 and meta["config"]["evaluation"] == "benchmark"


def test_nord_config_prints_what_repeats_the_run(tmp_path, capsys):
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    assert main(["run", *BENCH, "--seed", "4", "--params", '{"sample_size": 3}',
                 "--population", "6", "--journal", str(first)]) == 0
    capsys.readouterr()
    assert main(["config", str(first)]) == 0
    text = capsys.readouterr().out
    assert "journal" not in read_config_text(tmp_path, text)
    (tmp_path / "a.toml").write_text(text)
    assert main(["run", "--config", str(tmp_path / "a.toml"), "--journal", str(second)]) == 0
    with Journal(first) as a, Journal(second) as b:
        assert a.metadata()["config"] == b.metadata()["config"]
        assert a.metadata()["parameters"] == b.metadata()["parameters"]
        assert [r["genome"] for r in a.evaluations()] == [r["genome"] for r in b.evaluations()]
    assert b"population_size = 6" in (tmp_path / "a.toml").read_bytes()


def read_config_text(folder, text):
    path = folder / "probe.toml"
    path.write_text(text)
    from nord.app.settings import RunConfig
    from dataclasses import fields
    return read_config(str(path), [f.name for f in fields(RunConfig)])


@pytest.mark.parametrize("content, words", [
    ("budget = [", "is not valid TOML"),
    ("algoritm = 'rea'", "unknown setting 'algoritm'; did you mean 'algorithm'?"),
    ("epochs = 'three'", "bad.toml: epochs must be an integer"),
    ("budget = 'ten'", "bad.toml: budget must be an integer >= 1; got 'ten'"),
    ("max_attempts = 0", "bad.toml: max_attempts (kills of the run's process by one "
                         "candidate before it is given up) must be an integer >= 1; got 0"),
    ("population = 5", "'population' is a flag's name (--population); in a file it is "
                       "'population_size' in the [algorithm_params] table"),
    ("generations = 3", "write '[algorithm_params]' and below it 'generations = 3'"),
])
def test_a_bad_config_file_is_a_clear_error(tmp_path, capsys, content, words):
    (tmp_path / "bad.toml").write_text(content + "\n")
    assert main(["run", "--config", str(tmp_path / "bad.toml"), "--journal",
                 str(tmp_path / "r.db")]) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "r.db").exists()


def test_a_flag_overrides_a_bad_value_of_the_config_file(tmp_path):
    (tmp_path / "run.toml").write_text("space = 'nasbench201'\nbudget = 'ten'\n")
    assert main(["run", "--config", str(tmp_path / "run.toml"), "--budget", "3", "--journal",
                 str(tmp_path / "r.db")]) == 0
    with Journal(tmp_path / "r.db") as journal:
        assert journal.count() == 3


def test_a_missing_config_file_is_a_clear_error(tmp_path, capsys):
    assert main(["run", "--config", str(tmp_path / "none.toml")]) == 2
    assert "none.toml does not exist" in capsys.readouterr().err


def test_toml_writes_plain_values_that_read_back():
    import tomllib
    values = {"a": 1, "b": 0.001, "c": "x \"y\"\n", "d": True, "e": None, "f": [1, 2],
              "g": {"h": (3, 4), "i": {"j": "k"}}, "l": math.inf, "weird key": 2}
    back = tomllib.loads(to_toml(values, comment="two\nlines"))
    assert back == {"a": 1, "b": 0.001, "c": "x \"y\"\n", "d": True, "f": [1, 2],
                    "g": {"h": [3, 4], "i": {"j": "k"}}, "l": math.inf, "weird key": 2}


@pytest.mark.parametrize("args, words", [
    (["--scheduler", "asha", "--max-epochs", "9"],
     "the asha scheduler works in async mode, not in sync mode; use --mode async"),
    (["--scheduler", "annealing"], "unknown scheduler 'annealing'"),
    (["--max-epochs", "9"], "--max-epochs set(s) an early-stopping scheduler"),
    (["--scheduler", "sha", "--epochs", "1"], "nothing to stop early"),
    (["--scheduler", "sha", "--max-epochs", "9", "--eta", "1"], "eta must be an integer >= 2"),
    (["--space", "nasbench201", "--scheduler", "sha"], "no training to stop"),
    (["--valid-fraction", "1.5"], "valid_fraction"),
])
def test_bad_protocol_flags_are_refused_before_anything_is_loaded(tmp_path, capsys, args, words):
    assert main(["run", "--budget", "3", "--journal", str(tmp_path / "r.db"), *args]) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "r.db").exists()


@pytest.mark.slow
def test_a_run_with_asha_records_its_legs_and_the_validation_split(tmp_path, capsys):
    journal = tmp_path / "asha.db"
    assert main(["run", "--algorithm", "random", "--budget", "6", "--mode", "async",
                 "--scheduler", "asha", "--max-epochs", "3", "--space-params",
                 '{"layers": 1, "channels": [1, 4]}', "--journal", str(journal)]) == 0
    with Journal(journal) as record:
        meta, legs, epochs = record.metadata(), record.legs(), record.epochs()
        rows = record.evaluations()
    assert meta["scheduler"] == {"scheduler": "asha", "min_epochs": 1, "max_epochs": 3,
                                 "eta": 3, "brackets": 1}
    assert meta["evaluator"]["epochs"] == 3
    assert meta["dataset"]["validation"]["fraction"] == 0.1
    assert meta["dataset"]["n_valid"] > 0 and not meta["extra"].get("warnings")
    assert legs and epochs and len(rows) == 6
    assert all(row["metrics"]["selection"] == "validation" for row in rows if row["status"] == "ok"
               and not row["cached"])
    assert not (tmp_path / "asha.db.checkpoints").exists()


def test_selecting_on_test_data_is_warned_and_journaled(tmp_path, capsys):
    journal = tmp_path / "r.db"
    assert main(["run", "--algorithm", "random", "--budget", "2", "--valid-fraction", "0",
                 "--space-params", '{"layers": 1, "channels": [1, 4]}',
                 "--journal", str(journal)]) == 0
    assert "warning: there is no validation split" in capsys.readouterr().err
    with Journal(journal) as record:
        meta = record.metadata()
        rows = record.evaluations()
    assert "TEST accuracy" in meta["extra"]["warnings"][0]
    assert meta["dataset"]["n_valid"] == 0
    assert {row["metrics"].get("selection") for row in rows if not row["cached"]} == {"test"}


# --- start-up: a bad argument is answered before anything heavy is imported -----------------
@pytest.mark.processes
@pytest.mark.parametrize("argv", [
    ["run", "--budget", "-1"], ["run", "--dataset", "cifar11"], ["run", "--algorithm", "nope"],
    ["run", "--scheduler", "asha", "--min-epochs", "9", "--max-epochs", "3"],
    ["run", "--valid-fraction", "1.5"], ["run", "--lr", "-0.1"], ["run", "--seed", "-1"],
    ["run", "--lr-schedule", "cosin"], ["run", "--weight-decay", "-1"],
    ["run", "--recipe", "nasbench2"], ["run", "--augment", "crop,rotate"]])
def test_a_bad_argument_is_refused_before_torch_or_the_data_load(argv):
    import subprocess
    import sys
    probe = ("import sys\nfrom nord.app.cli import main\ncode = main(%r)\n"
             "print('exit', code, 'heavy', sorted(m for m in ('torch', 'sklearn', 'mpi4py') "
             "if m in sys.modules))" % (argv,))
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert "exit 2 heavy []" in done.stdout, done.stdout + done.stderr
    assert done.stderr.startswith("nord run: "), done.stderr


# --- help: every flag of every command explains itself, with its default --------------------
def _commands(parser, path=("nord",)):
    import argparse
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, path + (name,))


def test_every_flag_of_every_command_has_help_that_gives_its_default():
    import argparse

    from nord.app.cli import build_parser
    missing = []
    for path, parser in _commands(build_parser()):
        for action in parser._actions:
            if not action.option_strings or isinstance(action, (argparse._HelpAction,
                                                                argparse._VersionAction)):
                continue
            name = f"{' '.join(path)} {action.option_strings[-1]}"
            if not action.help:
                missing.append(f"{name}: no help")
            elif (action.default not in (None, False, argparse.SUPPRESS)
                    and "default" not in action.help):
                missing.append(f"{name}: default {action.default!r} not said")
    assert not missing, missing


def test_compare_takes_the_benchmark_names_of_the_data_sets(capsys):
    from nord.app.cli import main
    assert main(["compare", "--dataset", "ImageNet16-120", "--algorithms", "random",
                 "--budget", "5", "--seeds", "2"]) == 0
    assert "ImageNet16-120" in capsys.readouterr().out


def test_report_warns_on_the_terminal_when_a_run_selected_on_test_data(tmp_path, capsys):
    from nord.app.cli import main
    journal = tmp_path / "test-selected.db"
    assert main(["run", "--dataset", "digits", "--valid-fraction", "0", "--budget", "2",
                 "--epochs", "1", "--journal", str(journal)]) == 0
    capsys.readouterr()
    assert main(["report", str(journal), "--out", str(tmp_path / "report")]) == 0
    assert "selected its architectures on TEST data" in capsys.readouterr().err


# --- training callbacks from the command line -------------------------------------------------
def test_run_records_the_callbacks_it_is_given_and_config_repeats_them(tmp_path, capsys):
    from nord.app.cli import main
    from nord.journal import Journal
    journal = tmp_path / "look.db"
    assert main(["run", "--dataset", "digits", "--budget", "2", "--epochs", "1",
                 "--callbacks", "grad_norm,dead-relus", "--journal", str(journal)]) == 0
    with Journal(journal) as record:
        metrics = [row["metrics"] for row in record.epochs()]
        assert record.metadata()["config"]["callbacks"] == ["grad_norm", "dead_relu"]
    assert metrics and all(any(key.startswith("grad_norm/") for key in m) for m in metrics)
    assert all("dead_relu" in m for m in metrics)
    capsys.readouterr()
    assert main(["config", str(journal)]) == 0
    assert 'callbacks = ["grad_norm", "dead_relu"]' in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--callbacks", "grad_norm,lr"], "unknown training callback 'lr'; valid names are: "
                                       "dead_relu (dead_relus), grad_norm"),
    (["--space", "nasbench201", "--callbacks", "grad_norm"], "train nothing; drop --callbacks"),
    (["--callbacks", "grad_norm,dead_relu,dead-relus"],
     "--callbacks names dead_relu more than once (aliases included)"),
])
def test_bad_callbacks_are_refused_with_the_valid_names(argv, message, capsys):
    from nord.app.cli import main
    assert main(["run", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nord run: ") and message in err
