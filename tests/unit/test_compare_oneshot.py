"""`nord compare --oneshot`: a weight-sharing search's curve (its derived cell's table accuracy
against the seconds it searched) beside the black-box methods' curves in simulated time; in
the table, the JSON and the figure; refused, in one line and before any run, where it cannot
be drawn."""
import json
import math

import numpy as np
import pytest

from nord.app.cli import main
from nord.benchmarks.nasbench201 import NASBench201Space, genome_to_cell
from nord.comparisons.anytime import SimulatedSetting, write_anytime_plot
from nord.comparisons.compare import ComparisonResult, load_json, run_comparison
from nord.comparisons.dataset_table import DatasetTable
from nord.comparisons.oneshot import (oneshot_curves, oneshot_plot, read_oneshot_run,
                                      read_oneshot_runs)
from nord.errors import ConfigurationError
from nord.journal import Journal, RunRecord
from nord.journal.records import SearchEpochRecord
from tests.helpers.journals import ev, write_journal

SMALL = SimulatedSetting(time_budget=3000, workers=4, mode="async")
GENOMES = [(0, 0, 0, 0, 0, 0), (3, 1, 3, 0, 3, 1), (3, 3, 4, 1, 3, 1)]


def table_accuracy(genome, dataset="cifar10"):
    """The 200-epoch test accuracy that scores a black-box run's returned cell."""
    table = DatasetTable.of(dataset)
    return float(table.arrays.reported_accuracy[table.evaluator.evaluate_genome(genome)
                                                 .metrics["index"]])


def search_journal(path, seconds, genomes=GENOMES, method="gdas", seed=0, dataset="cifar10",
                   status="finished", lookups=None, epochs=None, planned=None, execution=None,
                   ranks=None, **settings):
    """A weight-sharing search's journal as nord run writes it: its run record, then one row
    per search epoch (``epochs``: their numbers, default 1, 2, ...; ``lookups``: the table
    accuracies journaled, default the table's for cifar10, NaN elsewhere). ``status`` None:
    left open (the writer, this process, still holds it); ``execution`` and ``ranks``: what the
    record says of where it ran, besides the device asked for."""
    epochs = epochs or list(range(1, len(seconds) + 1))
    if lookups is None:
        lookups = [table_accuracy(genome) if dataset == "cifar10" else math.nan
                   for genome in genomes]
    journal = Journal(path)
    journal.start(RunRecord(
        algorithm=method, parameters={"tau_max": 10.0, "tau_min": 0.1, **settings}, seed=seed,
        space=NASBench201Space().describe(),
        evaluator={"evaluator": "weight sharing", "method": method,
                   "search_epochs": planned or len(seconds), "supernet": {"channels": 4},
                   **({"ranks_per_network": ranks} if ranks else {})},
        dataset={"name": dataset}, budget=1, execution={"device": "cuda:0", "threads": 1,
                                                        **(execution or {})}))
    for epoch, spent, genome, lookup in zip(epochs, seconds, genomes, lookups):
        journal.search_epoch(SearchEpochRecord(
            epoch, genome_to_cell(genome), genome, {"0<-1": {"none": 1.0}},
            {"weight_loss": 2.3}, lookup, spent))
    if status is None:
        return journal
    journal.finish(status, "a test")
    journal.close()
    return path


# --- one run ---------------------------------------------------------------------------------
def test_a_searchs_curve_is_its_cells_table_accuracy_against_its_seconds_summed(tmp_path):
    path = search_journal(tmp_path / "gdas.db", [2.0, 3.0, 5.5])
    run = read_oneshot_run(path, "cifar10")
    accuracies = [table_accuracy(genome) for genome in GENOMES]
    assert run.curve == [(2.0, accuracies[0]), (5.0, accuracies[1]), (10.5, accuracies[2])]
    assert run.search_seconds == 10.5 and run.epochs == 3
    assert (run.final_cell, run.final_accuracy) == (genome_to_cell(GENOMES[2]), accuracies[2])
    assert (run.method, run.seed, run.state, run.complete) == ("gdas", 0, "finished", True)
    assert "device cuda:0" in run.device


def test_a_searchs_device_is_the_one_it_searched_on_with_its_ranks(tmp_path):
    path = search_journal(tmp_path / "gdas.db", [2.0, 3.0, 5.5], ranks=2, execution={
        "device": "auto", "resolved_device": "cuda:0 (NVIDIA H200)"})
    device = read_oneshot_run(path, "cifar10").device
    assert device.startswith("device cuda:0 (NVIDIA H200)") and device.endswith("2 ranks")


def test_a_search_resumed_on_another_device_names_every_device_it_searched_on(tmp_path):
    path = search_journal(tmp_path / "gdas.db", [2.0, 3.0, 5.5], execution={
        "resolved_device": "cuda:0 (NVIDIA H200)", "searched_on": ["cpu", "cuda:0 (NVIDIA H200)"]})
    device = read_oneshot_run(path, "cifar10").device
    assert device.startswith("devices cpu, then cuda:0 (NVIDIA H200)"), device


def test_a_search_recorded_before_searches_recorded_their_ranks_is_a_seed_of_one_rank(tmp_path):
    older = search_journal(tmp_path / "a.db", [2.0, 3.0], seed=0)            # no ranks
    newer = search_journal(tmp_path / "b.db", [2.0, 3.0], seed=1, ranks=1)
    assert [run.seed for run in read_oneshot_runs([older, newer], "cifar10")["gdas"]] == [0, 1]
    twice = search_journal(tmp_path / "c.db", [2.0, 3.0], seed=2, ranks=2)
    with pytest.raises(ConfigurationError, match="ranks_per_network"):
        read_oneshot_runs([older, twice], "cifar10")


def test_the_runs_of_a_method_are_its_seeds_drawn_as_mean_and_band(tmp_path):
    slow = search_journal(tmp_path / "a.db", [2.0, 3.0, 5.0], seed=0)
    fast = search_journal(tmp_path / "b.db", [1.0, 1.0], genomes=GENOMES[1:], seed=1,
                          planned=3, status="interrupted")
    runs = read_oneshot_runs([fast, slow], "cifar10")
    assert [run.seed for run in runs["gdas"]] == [0, 1]
    curve = oneshot_curves(runs)["gdas"]
    assert curve["time"][-1] == 10.0 and len(curve["time"]) == 101   # the longest run's end
    one, three = 100 * table_accuracy(GENOMES[1]), 100 * table_accuracy(GENOMES[2])
    at = {round(time, 6): index for index, time in enumerate(curve["time"])}
    # at 1 s only the fast run has a cell; at 6 s the slow one has its second, and the fast
    # one, stopped at 2 s, holds its last
    assert (curve["runs"][at[1.0]], curve["mean"][at[1.0]]) == (1, pytest.approx(one))
    assert curve["runs"][at[6.0]] == 2
    assert curve["mean"][at[6.0]] == pytest.approx((one + three) / 2)
    assert curve["high"][at[6.0]] - curve["low"][at[6.0]] == pytest.approx(abs(three - one))


def test_a_run_still_going_or_interrupted_gives_its_finished_epochs_and_says_so(tmp_path):
    stopped = search_journal(tmp_path / "stopped.db", [2.0], planned=5, status="interrupted")
    running = search_journal(tmp_path / "running.db", [1.0, 2.0], seed=1, planned=5,
                             status=None)
    try:
        runs = read_oneshot_runs([stopped, tmp_path / "running.db"], "cifar10")["gdas"]
    finally:
        running.close()
    assert [(run.state, run.epochs) for run in runs] == [("interrupted", 1), ("running", 2)]
    assert [run.status() for run in runs] == ["interrupted: 1 of 5 epochs finished",
                                              "still running: 2 of 5 epochs finished"]
    result = run_comparison("cifar10", "random", seeds=1, simulation=SMALL,
                            oneshot=[stopped, tmp_path / "running.db"])
    table = result.table()
    assert next(line for line in table.splitlines() if line.startswith("gdas ")).split()[1] == "0/2"
    assert f"note: gdas seed 0 ({stopped}) is interrupted: 1 of 5 epochs finished" in table
    assert "gdas, one-shot (2 runs, 2 unfinished)" in oneshot_plot(result.oneshot)["oneshot"]


# --- in the comparison -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    folder = tmp_path_factory.mktemp("oneshot")
    paths = [search_journal(folder / "gdas0.db", [2.0, 3.0, 5.0], seed=0),
             search_journal(folder / "gdas1.db", [4.0, 3.0, 1.0], genomes=GENOMES[::-1],
                            seed=1),
             search_journal(folder / "darts.db", [7.0], genomes=GENOMES[:1], method="darts-v1")]
    return run_comparison("cifar10", "random", seeds=2, simulation=SMALL,
                          oneshot=[str(path) for path in paths])


def test_the_json_gives_each_method_its_runs_curve_and_summary_in_percent(compared):
    data = json.loads(compared.to_json())
    section = data["oneshot"]
    assert set(section["methods"]) == {"gdas", "darts-v1"}
    assert "not simulated" in section["units"]["times"] and "never saw" in section["protocol"]
    gdas = section["methods"]["gdas"]
    finals = [100 * table_accuracy(GENOMES[2]), 100 * table_accuracy(GENOMES[0])]
    assert gdas["summary"]["final_accuracy"]["mean"] == pytest.approx(np.mean(finals))
    assert gdas["summary"]["search_seconds"] == {"mean": 9.0, "std": 1.0, "min": 8.0,
                                                 "max": 10.0}
    assert gdas["summary"]["runs"] == gdas["summary"]["finished"] == 2
    first = gdas["runs"][0]
    assert first["curve"] == [[2.0, pytest.approx(100 * table_accuracy(GENOMES[0]))],
                              [5.0, pytest.approx(100 * table_accuracy(GENOMES[1]))],
                              [10.0, pytest.approx(finals[0])]]
    assert first["final_accuracy_percent"] == pytest.approx(finals[0])
    assert gdas["curve"]["time"][-1] == 10.0
    # the black-box rows are those of the same comparison without the searches
    alone = run_comparison("cifar10", "random", seeds=2, simulation=SMALL)
    assert data["algorithms"]["random"]["runs"] == json.loads(alone.to_json())[
        "algorithms"]["random"]["runs"]


def test_the_json_reads_back_with_its_searches(compared, tmp_path):
    again = load_json(compared.save_json(tmp_path / "c.json"))
    assert again.oneshot == compared.oneshot
    assert json.loads(again.to_json())["oneshot"] == json.loads(compared.to_json())["oneshot"]


def test_the_table_puts_the_searches_under_the_black_box_rows(compared):
    table = compared.table()
    black_box, searches = table.split("Weight-sharing (one-shot) searches")
    assert "random" in black_box and "gdas" not in black_box
    assert "measured on the machine it ran on" in " ".join(searches.split())
    row = next(line for line in searches.splitlines() if line.startswith("gdas"))
    assert "device cuda:0" in row and " 2 " in row


def test_without_searches_the_comparison_is_what_it_was():
    result = run_comparison("cifar10", "random", seeds=1, simulation=SMALL)
    assert "oneshot" not in result.to_dict() and "Weight-sharing" not in result.table()
    assert ComparisonResult.from_dict(result.to_dict()).oneshot == {}


def test_the_figure_draws_the_searches_dashed_with_a_caption(compared, tmp_path):
    parts = oneshot_plot(compared.oneshot)
    assert set(parts["oneshot"]) == {"gdas, one-shot (2 runs)", "darts-v1, one-shot (1 run)"}
    assert "simulated time" in parts["caption"] and "device cuda:0" in parts["caption"]
    path = write_anytime_plot(tmp_path / "anytime.png", compared.curves(), "a title", **parts)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_search_far_below_the_black_box_curves_stays_in_sight(monkeypatch, tmp_path):
    import nord.comparisons.anytime as anytime
    drawn = []
    monkeypatch.setattr(anytime, "save_figure", lambda figure, path: drawn.append(figure))
    black_box = {"time": [0, 1000, 2000], "mean": [92.0, 93.0, 94.0], "low": [91.5, 92.5, 93.8],
                 "high": [92.5, 93.5, 94.2], "runs": [1, 1, 1]}
    darts = {"time": [0, 500, 1000], "mean": [None, 70.0, 54.3], "low": [None, 70.0, 54.3],
             "high": [None, 70.0, 54.3], "runs": [0, 1, 1]}
    anytime.write_anytime_plot(tmp_path / "a.png", {"rea": black_box}, "t")
    anytime.write_anytime_plot(tmp_path / "b.png", {"rea": black_box}, "t",
                               oneshot={"darts-v1, one-shot (1 run)": darts}, caption="c")
    alone, beside = (figure.axes[0].get_ylim() for figure in drawn)
    assert alone[0] == pytest.approx(91.5) and beside[0] < 54.3 < 94.2 < beside[1]


# --- refusals --------------------------------------------------------------------------------
def refusal_cases(folder):
    """(name, journals, settings of run_comparison, flags, words) for each refusal."""
    gdas = search_journal(folder / "gdas.db", [1.0, 1.0])
    other_seed = search_journal(folder / "same-seed.db", [1.0, 1.0])
    other_settings = search_journal(folder / "tau.db", [1.0, 1.0], seed=1, tau_max=5.0)
    digits = search_journal(folder / "digits.db", [1.0], dataset="digits")
    cifar100 = search_journal(folder / "c100.db", [1.0], dataset="cifar100",
                              lookups=[0.7])
    no_lookup = search_journal(folder / "nan.db", [1.0, 1.0], lookups=[0.9, math.nan])
    gap = search_journal(folder / "gap.db", [1.0, 1.0], epochs=[1, 3])
    blackbox = write_journal(folder / "rea.db", [[ev(0.5)]], algorithm="rea")
    workers = ["--workers", "4", "--time-budget", "3000"]
    return [
        ("no time axis", [gdas], {}, [], ["--oneshot (oneshot=)", "no time axis",
                                          "--workers N (simulation=)"]),
        ("no search epochs", [blackbox], {"simulation": SMALL}, workers,
         ["holds no search epochs", "a run of rea", "--algorithm gdas"]),
        ("off the table", [digits], {"simulation": SMALL}, workers,
         ["searched digits", "no table accuracy", "--dataset cifar10 (dataset=)"]),
        ("another data set", [cifar100], {"simulation": SMALL}, workers,
         ["searched cifar100", "--dataset cifar10 (dataset=)", "give --dataset cifar100"]),
        ("an epoch without its table accuracy", [no_lookup], {"simulation": SMALL}, workers,
         ["search epoch 2 of its 2 has no table accuracy"]),
        ("an epoch missing", [gap], {"simulation": SMALL}, workers,
         ["search epochs 1, 3, without epoch 2"]),
        ("a journal given twice", [gdas, gdas], {"simulation": SMALL}, workers,
         ["names one journal twice"]),
        ("two runs of one seed", [gdas, other_seed], {"simulation": SMALL}, workers,
         ["two gdas runs with seed 0", "give each seed once"]),
        ("runs of other settings", [gdas, other_settings], {"simulation": SMALL}, workers,
         ["other gdas settings", "parameters.tau_max: 5.0 against 10.0",
          "differ in the seed only"]),
        ("no journal", [folder / "none.db"], {"simulation": SMALL}, workers,
         ["none.db", "does not exist"]),
    ]


@pytest.fixture(scope="module")
def refusals(tmp_path_factory):
    return {case[0]: case[1:] for case in refusal_cases(tmp_path_factory.mktemp("refused"))}


@pytest.mark.parametrize("case", [
    "no time axis", "no search epochs", "off the table", "another data set",
    "an epoch without its table accuracy", "an epoch missing", "a journal given twice",
    "two runs of one seed", "runs of other settings", "no journal"])
def test_a_search_that_cannot_be_drawn_is_refused_in_one_line_before_any_run(
        case, refusals, tmp_path, capsys):
    journals, settings, flags, words = refusals[case]
    told = []
    with pytest.raises(ConfigurationError) as refused:
        run_comparison("cifar10", "random", seeds=1, progress=lambda *seen: told.append(seen),
                       oneshot=[str(path) for path in journals], **settings)
    message = str(refused.value)
    assert told == [] and all(word in message for word in words), message
    out = tmp_path / "c.json"
    assert main(["compare", "--seeds", "1", "--algorithms", "random", *flags, "--json", str(out),
                 "--oneshot", *map(str, journals)]) == 2
    printed, error = capsys.readouterr()
    assert printed == "" and error == f"nord compare: {message}\n"
    assert not out.exists()


def test_the_flag_is_refused_with_multi_objective(tmp_path, capsys):
    assert main(["compare", "--multi-objective", "--oneshot", "x.db", "y.db"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "--oneshot x.db y.db" in error
    assert "Leave one of them out" in error


def test_the_flag_takes_several_journals_and_is_repeatable(capsys):
    for flags in (["--oneshot", "a.db", "b.db"], ["--oneshot", "a.db", "--oneshot", "b.db"]):
        assert main(["compare", "--multi-objective", *flags]) == 2
        assert "--oneshot a.db b.db" in capsys.readouterr().err


# --- a real search, end to end ---------------------------------------------------------------
@pytest.mark.slow
def test_compare_draws_a_real_search_beside_the_black_box_methods(tmp_path, capsys):
    from tests.helpers.datafiles import md5, write_cifar_folder
    from nord.app.runner import run
    from nord.app.settings import RunConfig
    pytest.importorskip("torch")
    write_cifar_folder(tmp_path / "data", per_batch=8, n_test=8)
    files = sorted((tmp_path / "data" / "cifar-10-batches-py").iterdir())
    journal = tmp_path / "gdas.db"
    run(RunConfig(algorithm="gdas", space="nasbench201", dataset="cifar10",
                  data_root=str(tmp_path / "data"),
                  data_checksums={path.name: md5(path) for path in files},
                  search_epochs=2, supernet_channels=4, supernet_cells=1, threads=1,
                  journal=str(journal)), progress=False)
    out = tmp_path / "c.json"
    assert main(["compare", "--workers", "4", "--time-budget", "3000", "--seeds", "1",
                 "--algorithms", "random", "--oneshot", str(journal), "--json", str(out),
                 "--report", str(tmp_path / "report")]) == 0
    assert "Weight-sharing (one-shot) searches" in capsys.readouterr().out
    with Journal(journal) as journaled:
        epochs = journaled.search_epochs()
    drawn = json.loads(out.read_text())["oneshot"]["methods"]["gdas"]["runs"][0]
    assert drawn["curve"] == [[pytest.approx(sum(row["seconds"] for row in epochs[:k + 1])),
                               pytest.approx(100 * row["lookup_accuracy"])]
                              for k, row in enumerate(epochs)]
    # the same metric as the black-box rows: the table's 200-epoch test accuracy of the cell
    assert [row["lookup_accuracy"] for row in epochs] == [
        table_accuracy(row["genome"]) for row in epochs]
    assert (tmp_path / "report" / "anytime.png").stat().st_size > 10_000
