"""The `nord` command: run, resume, list, report, layers, and clear errors (exit code 2)."""
import json

import pytest

from nord.app.cli import main
from nord.journal import Journal
from nord.app.settings import RunConfig
from nord.errors import ConfigurationError


def test_run_on_the_benchmark_then_resume_and_list(tmp_path, capsys):
    journal = tmp_path / "rea.db"
    assert main(["run", "--space", "nasbench201", "--algorithm", "regularized_evolution",
                 "--budget", "25", "--seed", "3", "--journal", str(journal)]) == 0
    out = capsys.readouterr().out
    assert "1/25 evaluations" in out and "done: 25 evaluations" in out
    with Journal(journal) as record:
        rows = record.evaluations()
        assert len(rows) == 25 and record.metadata()["config"]["seed"] == 3
    before = journal_files(tmp_path)
    assert main(["resume", str(journal)]) == 0   # finished: nothing to do, nothing written
    out = capsys.readouterr().out
    assert ("holds a finished run in which its budget of 25 evaluations is used (25 "
            "evaluations): nothing to do") in out
    assert "--budget N, with N > 25" in out and "done:" not in out
    assert journal_files(tmp_path) == before
    with Journal(journal) as record:
        assert [r["genome"] for r in record.evaluations()] == [r["genome"] for r in rows]
        assert record.metadata()["resumed"] == 0
    assert f"raise it: nord resume {journal} --budget N, with N > 25" in out
    assert main(["resume", str(journal), "--budget", "30"]) == 0   # as the message says
    assert ("30 evaluations (25 from the journal, 5 evaluated; 0 failed)" in
        capsys.readouterr().out)
    assert main(["list", str(tmp_path)]) == 0
    listing = capsys.readouterr().out
    assert "rea.db" in listing and "regularized_evolution" in listing and "30/30" in listing


def test_resume_of_a_run_whose_algorithm_stopped_by_itself_says_so(tmp_path, capsys):
    journal = tmp_path / "sga.db"
    assert main(["run", "--space", "nasbench201", "--algorithm", "pygmo", "--population", "4",
                 "--generations", "1", "--budget", "20", "--journal", str(journal)]) == 0
    capsys.readouterr()
    before = journal_files(tmp_path)
    assert main(["resume", str(journal)]) == 0
    out = capsys.readouterr().out
    assert "stopped by itself after 8 evaluations, before its budget of 20: nothing to do" in out
    assert journal_files(tmp_path) == before


def test_resume_with_a_budget_below_the_journal_is_refused_untouched(tmp_path, capsys):
    journal = tmp_path / "r.db"
    assert main(["run", "--space", "nasbench201", "--algorithm", "random", "--budget", "6",
                 "--journal", str(journal)]) == 0
    before = journal_files(tmp_path)
    assert main(["resume", str(journal), "--budget", "4"]) == 2
    assert "Give a budget of at least 6" in capsys.readouterr().err
    assert main(["resume", str(journal), "--budget", "0"]) == 2
    assert "budget must be an integer >= 1; got 0" in capsys.readouterr().err
    assert journal_files(tmp_path) == before


def journal_files(folder):
    """Each file of the folder and its bytes."""
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_report_writes_a_page(tmp_path, capsys):
    journal = tmp_path / "random.db"
    assert main(["run", "--space", "nasbench201", "--algorithm", "random", "--budget", "12",
                 "--journal", str(journal)]) == 0
    assert main(["report", str(journal), "--out", str(tmp_path / "report"), "--format",
                 "html"]) == 0
    page = (tmp_path / "report" / "report.html").read_text()
    assert "1 (candidates evaluated before their results are told)" in page
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert summary


def test_resume_of_a_missing_journal_is_a_clear_error(tmp_path, capsys):
    assert main(["resume", str(tmp_path / "missing.db")]) == 2
    assert "no journal" in capsys.readouterr().err
    assert not (tmp_path / "missing.db").exists()


def test_run_into_an_existing_journal_without_resume_is_refused(tmp_path, capsys):
    journal = tmp_path / "r.db"
    args = ["run", "--space", "nasbench201", "--algorithm", "random", "--budget", "5",
            "--journal", str(journal)]
    assert main(args) == 0
    assert main(args) == 2
    assert "resume" in capsys.readouterr().err


def test_unknown_algorithm_lists_the_valid_names(capsys):
    assert main(["run", "--space", "nasbench201", "--algorithm", "annealing", "--budget", "5"]) == 2
    err = capsys.readouterr().err
    assert "regularized_evolution" in err and "random" in err


def test_layers_lists_the_registry(capsys):
    assert main(["layers"]) == 0
    out = capsys.readouterr().out
    assert "conv2d" in out and "torch.nn.Conv2d" in out


def test_config_rejects_a_benchmark_space_with_training():
    with pytest.raises(ConfigurationError, match="nasbench201"):
        RunConfig(space="nasbench201", evaluation="local")


def test_config_round_trips_through_a_dict():
    config = RunConfig(algorithm="random", budget=7, seed=4, space_params={"layers": 3})
    assert RunConfig.from_dict(config.to_dict()) == config


def test_compare_prints_the_table_and_saves_json(tmp_path, capsys):
    out = tmp_path / "compare.json"
    assert main(["compare", "--benchmark", "nasbench201", "--dataset", "cifar10",
                 "--algorithms", "random,rea", "--budget", "20", "--seeds", "6",
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "random" in printed and "rea" in printed and "±" in printed
    saved = json.loads(out.read_text())
    from nord.comparisons.compare import load_json
    result = load_json(out)
    assert len(result.values("rea", "reported_accuracy")) == 6 and saved


def test_compare_multi_objective_reports_hypervolumes(tmp_path, capsys):
    assert main(["compare", "--multi-objective", "--budget", "40", "--seeds", "2",
                 "--population", "8", "--report", str(tmp_path / "front")]) == 0
    printed = capsys.readouterr().out
    assert "hypervolume" in printed and "exact front" in printed
    assert (tmp_path / "front" / "front_vs_exact.png").is_file()


def test_compare_rejects_an_unknown_algorithm(capsys):
    assert main(["compare", "--algorithms", "random,annealing", "--seeds", "2"]) == 2
    assert "rea" in capsys.readouterr().err


@pytest.mark.parametrize("args, words", [
    (["--report", "out"], "add --workers N, or --multi-objective"),
    (["--multi-objective", "--workers", "4"], "leave one of them out"),
    (["--population", "30"], "Add --multi-objective, or leave --population out"),
    (["--multi-objective", "--population", "0"], "--population must be an integer >= 5"),
    (["--workers", "4"], "--budget 20 counts evaluations, but with --workers"),
    (["--multi-objective", "--algorithms", "rea"], "always runs pygmo's nsga2"),
    (["--latency-device", "pixel3"], "add --max-latency-ms MS"),
    (["--processes", "-1"], "--processes must be an integer >= 0 (0: one per CPU); got -1"),
    (["--json", "{tmp}"], "is a folder; give a file path, e.g. {tmp}/compare.json"),
    (["--json", "{tmp}/a-file/x.json"], "is not a folder you can write"),
    (["--workers", "2", "--time-budget", "3000", "--report", "{tmp}/a-file"],
     "names a folder to write into, but {tmp}/a-file is a file"),
])
def test_compare_refuses_flags_it_would_ignore_before_any_work(tmp_path, capsys, args, words):
    (tmp_path / "a-file").write_text("")
    args = [arg.format(tmp=tmp_path) for arg in args]
    budget = [] if "--time-budget" in args else ["--budget", "20"]
    assert main(["compare", "--seeds", "3", *budget, *args]) == 2
    out, err = capsys.readouterr()
    assert words.format(tmp=tmp_path) in err
    assert "test acc." not in out and "seeds" not in err   # refused before any run, no table


@pytest.mark.parametrize("args, words", [
    (["--params", "{bad"], "does not parse"),
    (["--params", "[1]"], "JSON object"),
    (["--space-params", '{"foo": 1}'], "layers, channels"),
    (["--space", "nasbench201", "--space-params", '{"foo": 1}'], "parameters are channels"),
    (["--params", '{"seed": 3}'], "--seed"),
    (["--group-size", "0"], "group_size"),
    (["--max-params", "0"], "max_params"),
    (["--lr", "-1"], "learning rate"),
    (["--lr", "inf"], "lr (--lr) must be a number > 0 (the learning rate); got inf"),
    (["--seed", "4294967296"], "seed must be an integer in [0, 4294967295] (numpy and "
                               "scikit-learn take 32-bit seeds); got 4294967296"),
    (["--threads", "10000"], "CPUs this process may use; got 10000"),
    (["--space-params", '{"layers": 1000}'], "layers must be an integer in [1, 100]: the space "
                                             "builds plain chains of convolutions"),
    (["--max-attempts", "0"], "max_attempts (kills of the run's process by one candidate before "
                              "it is given up) must be an integer >= 1; got 0"),
    (["--optimizer-is-not-a-flag"], None),
])
def test_bad_run_arguments_are_clear_errors(args, words, capsys):
    if words is None:  # argparse's own error: exit status 2 as well
        with pytest.raises(SystemExit) as stop:
            main(["run", *args])
        assert stop.value.code == 2
        return
    assert main(["run", "--budget", "2", *args]) == 2
    assert words in capsys.readouterr().err


def test_the_largest_seed_runs(tmp_path, capsys):
    assert main(["run", "--budget", "1", "--seed", "4294967295", "--epochs", "1",
                 "--space-params", '{"layers": 1, "channels": [2, 4]}', "--threads", "1",
                 "--journal", str(tmp_path / "r.db")]) == 0, capsys.readouterr().err


def test_resume_may_change_where_the_run_executes(tmp_path, capsys):
    """What the README says: a resume may change --device, --threads and --backend."""
    journal = str(tmp_path / "r.db")
    assert main(["run", "--space", "nasbench201", "--algorithm", "random", "--budget", "2",
                 "--journal", journal]) == 0
    assert main(["resume", journal, "--budget", "3", "--threads", "1", "--device", "cpu",
                 "--backend", "torch"]) == 0, capsys.readouterr().err
    with Journal(journal) as record:
        execution = record.metadata()["execution"]
        assert record.count() == 3
    assert (execution["threads"], execution["device"], execution["backend"]) == (1, "cpu", "torch")
    assert main(["resume", journal, "--budget", "4", "--threads", "10000"]) == 2
    assert "got 10000" in capsys.readouterr().err


def test_max_attempts_is_recorded_reaches_the_engine_and_a_resume_may_change_it(
        tmp_path, capsys, monkeypatch):
    import nord.search.engine as engine
    given = []
    real = engine.run_search

    def spy(*args, **kwargs):
        given.append(kwargs["max_attempts"])
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "run_search", spy)
    journal = str(tmp_path / "r.db")
    assert main(["run", "--space", "nasbench201", "--algorithm", "random", "--budget", "2",
                 "--max-attempts", "3", "--journal", journal]) == 0
    with Journal(journal) as record:
        assert record.metadata()["execution"]["max_attempts"] == 3
    assert main(["resume", journal, "--budget", "3"]) == 0     # the journal's, kept
    assert main(["resume", journal, "--budget", "4", "--max-attempts", "1"]) == 0
    with Journal(journal) as record:
        assert record.metadata()["execution"]["max_attempts"] == 1
    assert given == [3, 3, 1]
    assert main(["resume", journal, "--budget", "5", "--max-attempts", "0"]) == 2
    assert "must be an integer >= 1; got 0" in capsys.readouterr().err


def test_max_attempts_defaults_to_the_engines(tmp_path):
    from nord.search.engine.loop import MAX_ATTEMPTS
    assert RunConfig().max_attempts == MAX_ATTEMPTS


def test_an_unwritable_journal_is_a_clear_error(capsys):
    assert main(["run", "--space", "nasbench201", "--budget", "2",
                 "--journal", "/proc/no-such-folder/run.db"]) == 2
    assert "cannot create a journal at '/proc/no-such-folder/run.db'" in capsys.readouterr().err


def test_run_resume_without_the_original_flags_takes_the_journals_settings(tmp_path, capsys):
    journal = str(tmp_path / "r.db")
    assert main(["run", "--space", "nasbench201", "--algorithm", "random", "--dataset",
                 "cifar100", "--seed", "7", "--budget", "2", "--journal", journal]) == 0
    assert main(["run", "--resume", "--journal", journal, "--budget", "3"]) == 0, (
        capsys.readouterr().err)
    with Journal(journal) as record:
        assert record.count() == 3 and record.metadata()["config"]["dataset"] == "cifar100"
    assert main(["run", "--resume", "--journal", journal, "--budget", "4", "--seed", "8"]) == 2
    assert "its run has config.seed=7, this one config.seed=8" in capsys.readouterr().err


def test_resume_refuses_changed_training_settings(tmp_path, capsys):
    journal = str(tmp_path / "r.db")
    base = ["run", "--space", "nasbench201", "--algorithm", "random", "--journal", journal]
    assert main([*base, "--budget", "4"]) == 0
    assert main([*base, "--budget", "4", "--dataset", "cifar100", "--resume"]) == 2
    assert ('its run has config.dataset="cifar10", this one config.dataset="cifar100"' in
        capsys.readouterr().err)


def test_a_setting_added_later_is_recorded_only_when_set_so_older_journals_resume(tmp_path):
    journal = str(tmp_path / "r.db")
    assert main(["run", "--space", "nasbench201", "--algorithm", "random", "--budget", "3",
                 "--journal", journal]) == 0
    with Journal(journal) as record:
        assert "data_checksums" not in record.metadata()["config"]   # as older journals
    assert main(["run", "--space", "nasbench201", "--algorithm", "random", "--budget", "5",
                 "--journal", journal, "--resume"]) == 0
    with Journal(journal) as record:
        assert record.count() == 5


@pytest.mark.parametrize("args, words", [
    (["--space", "nasbench201", "--epochs", "50"], "--epochs 50 set(s) how candidates are trained"),
    (["--space", "nasbench201", "--lr", "0.5", "--optimizer", "sgd"], "--lr 0.5, --optimizer sgd"),
    (["--space", "nasbench201", "--valid-fraction", "0"], "--valid-fraction 0.0"),
    (["--space", "nasbench201", "--data-root", "data"], "--data-root data"),
    (["--space", "nasbench201", "--max-params", "100"], "--max-params 100"),
    (["--data-root", "data"], "--data-root points at a data set's files, but digits is built in"),
])
def test_settings_a_run_would_not_use_are_refused_not_recorded(tmp_path, capsys, args, words):
    journal = tmp_path / "r.db"
    assert main(["run", "--budget", "2", "--journal", str(journal), *args]) == 2
    assert words in capsys.readouterr().err
    assert not journal.exists()


def test_paths_of_the_wrong_kind_are_named_as_such(tmp_path, capsys):
    journal = tmp_path / "r.db"
    assert main(["run", "--space", "nasbench201", "--budget", "2", "--journal", str(journal)]) == 0
    (tmp_path / "notes.db").write_text("not a journal")
    capsys.readouterr()
    assert main(["resume", str(tmp_path)]) == 2
    assert f"no journal at '{tmp_path}': the path is a folder" in capsys.readouterr().err
    assert main(["report", str(journal), "--out", str(tmp_path / "notes.db")]) == 2
    assert "names a folder to write into, but" in capsys.readouterr().err
    # a file named on its own that is no journal fails the command; the others are listed
    assert main(["list", str(tmp_path / "notes.db"), str(journal)]) == 2
    out, err = capsys.readouterr()
    assert "r.db" in out and err.startswith("nord list: ") and "is not a nord journal" in err
    assert main(["list", str(tmp_path)]) == 0   # in a folder, it is skipped
    assert "skipped" in capsys.readouterr().err


@pytest.mark.parametrize("device", ["cuda:x", "gpu", "cuda:"])
def test_a_malformed_device_is_refused_before_anything_is_loaded(tmp_path, capsys, device):
    assert main(["run", "--device", device, "--budget", "1",
                 "--journal", str(tmp_path / "r.db")]) == 2
    assert (f"unknown device '{device}'; use 'auto', 'cpu', 'cuda' or 'cuda:N'" in
        capsys.readouterr().err)
    assert not (tmp_path / "r.db").exists()


def test_resume_with_a_larger_budget_is_remembered(tmp_path, capsys):
    journal = str(tmp_path / "r.db")
    base = ["run", "--space", "nasbench201", "--algorithm", "random", "--journal", journal]
    assert main([*base, "--budget", "4"]) == 0
    assert main([*base, "--budget", "9", "--resume"]) == 0
    assert main(["resume", journal]) == 0  # a later resume keeps the extended budget
    with Journal(journal) as record:
        assert record.count() == 9 and record.metadata()["budget"] == 9
        assert record.metadata()["execution"]["budget"] == 9


def test_max_params_refuses_larger_networks_as_failed_evaluations(tmp_path, capsys):
    journal = str(tmp_path / "r.db")
    assert main(["run", "--algorithm", "random", "--budget", "2", "--epochs", "1",
                 "--device", "cpu", "--max-params", "10", "--journal", journal]) == 0
    with Journal(journal) as record:
        rows = record.evaluations()
        assert record.metadata()["config"]["max_params"] == 10
    assert [row["status"] for row in rows] == ["failed", "failed"]
    assert all("above the limit of 10 (max_params, --max-params)" in row["error"] for row in rows)


def test_a_validation_split_larger_than_the_training_split_is_warned_about(tmp_path, capsys):
    assert main(["run", "--budget", "1", "--epochs", "1", "--valid-fraction", "0.99",
                 "--space-params", '{"layers": 1, "channels": [2, 4]}', "--threads", "1",
                 "--journal", str(tmp_path / "r.db")]) == 0
    err = capsys.readouterr().err
    assert "warning: valid_fraction=0.99 holds out" in err and "networks train on only" in err
    with Journal(tmp_path / "r.db") as record:
        assert "networks train on only" in record.metadata()["extra"]["warnings"][0]


def test_a_journal_path_whose_folders_are_missing_is_refused_not_created(tmp_path, capsys):
    journal = tmp_path / "missing" / "deeper" / "r.db"
    assert main(["run", "--space", "nasbench201", "--budget", "2", "--journal",
                 str(journal)]) == 2
    assert f"the folder '{tmp_path / 'missing'}' does not exist" in capsys.readouterr().err
    assert not (tmp_path / "missing").exists()
    one_level = tmp_path / "runs" / "r.db"   # the journal's own folder is made, and said
    assert main(["run", "--space", "nasbench201", "--budget", "2", "--journal",
                 str(one_level)]) == 0
    assert (f"the journal's folder {tmp_path / 'runs'} does not exist: creating it" in
        capsys.readouterr().out)
    assert one_level.is_file()


def test_compare_refuses_a_json_path_in_a_missing_folder(tmp_path, capsys):
    target = tmp_path / "missing" / "x" / "y.json"
    assert main(["compare", "--seeds", "1", "--budget", "5", "--json", str(target)]) == 2
    assert f"the folder {target.parent} does not exist" in capsys.readouterr().err
    assert not (tmp_path / "missing").exists()
