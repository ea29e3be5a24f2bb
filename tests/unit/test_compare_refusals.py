"""`nord compare` refuses what the library refuses, in the library's words: a Python caller of
run_comparison / run_nsga2 / SimulatedSetting gets the very message the command prints."""
import pytest

from nord.app.cli import main
from nord.comparisons.compare import run_comparison
from nord.comparisons.multiobjective import run_nsga2
from nord.comparisons.anytime import SimulatedSetting, write_anytime_plot
from nord.errors import BenchmarkError, ConfigurationError, NordError


def simulated(**settings):
    return SimulatedSetting.for_dataset("cifar10", **settings)


# (the library call, the same request as nord compare flags, words naming flag and parameter)
REFUSALS = {
    "workers below 1": (
        lambda: run_comparison(seeds=1, simulation=simulated(workers=0)),
        ["--workers", "0"], ["--workers", "workers=", "got 0"]),
    "more workers than cells": (
        lambda: run_comparison(seeds=1, simulation=simulated(workers=100_000)),
        ["--workers", "100000"], ["--workers (workers=) must be at most 15,625", "got 100,000"]),
    "a budget of evaluations in simulated time": (
        lambda: run_comparison(budget=20, seeds=1, simulation=simulated(workers=4)),
        ["--budget", "20", "--workers", "4"], ["--budget 20", "budget=", "simulation="]),
    "a time budget too small for one evaluation": (
        lambda: run_comparison(seeds=1, simulation=simulated(workers=2, time_budget=100)),
        ["--workers", "2", "--time-budget", "100"],
        ["--time-budget 100", "time_budget=", "at least 208"]),
    "a time budget of 0": (
        lambda: run_comparison(seeds=1, simulation=simulated(workers=2, time_budget=0)),
        ["--workers", "2", "--time-budget", "0"], ["--time-budget", "time_budget=", "20,000"]),
    "a negative overhead": (
        lambda: run_comparison(seeds=1, simulation=simulated(workers=2, overhead=-1.0)),
        ["--workers", "2", "--overhead", "-1"], ["--overhead", "overhead=", "got -1"]),
    "seed noise on the 12-epoch signal": (
        lambda: run_comparison(seeds=1, simulation=simulated(workers=2, noise="seed")),
        ["--workers", "2", "--noise", "seed"],
        ["--noise seed", "noise='seed'", "--signal valid200", "signal='valid200'"]),
    "a latency limit in simulated time": (
        lambda: run_comparison(seeds=1, simulation=simulated(workers=2), max_latency_ms=8,
                               latency_device="pixel3"),
        ["--workers", "2", "--max-latency-ms", "8", "--latency-device", "pixel3"],
        ["--max-latency-ms", "max_latency_ms=", "--workers", "simulation="]),
    "a latency device without a limit": (
        lambda: run_comparison(budget=20, seeds=1, latency_device="pixel3"),
        ["--budget", "20", "--latency-device", "pixel3"],
        ["--latency-device pixel3", "latency_device=", "add --max-latency-ms MS"]),
    "a latency device without a limit, multi-objective": (
        lambda: run_nsga2(budget=20, seeds=1, latency_device="pixel3"),
        ["--multi-objective", "--budget", "20", "--latency-device", "pixel3"],
        ["--latency-device pixel3", "latency_device=", "add --max-latency-ms MS"]),
    "an nsga2 population below 5": (
        lambda: run_nsga2(budget=20, seeds=1, population_size=0),
        ["--multi-objective", "--budget", "20", "--population", "0"],
        ["--population must be an integer >= 5", "population_size="]),
    "settings of an algorithm not compared": (
        lambda: run_comparison(algorithms="random,rea", budget=20, seeds=1,
                               params={"tpe": {"n_startup_trials": 5}}),
        ["--algorithms", "random,rea", "--budget", "20", "--params",
         '{"tpe": {"n_startup_trials": 5}}'],
        ["--params (params=)", "'tpe'", "--algorithms random,rea"]),
    "a setting the algorithm does not take": (
        lambda: run_comparison(algorithms="rea", budget=20, seeds=1,
                               params={"rea": {"pop": 3}}),
        ["--algorithms", "rea", "--budget", "20", "--params", '{"rea": {"pop": 3}}'],
        ["--params (params=) for rea", "does not take pop", "population_size"]),
    "no seeds": (
        lambda: run_comparison(budget=20, seeds=0),
        ["--budget", "20", "--seeds", "0"], ["--seeds", "seeds=", "got 0"]),
}


def printed_refusal(flags, capsys) -> str:
    """What ``nord compare FLAGS`` prints on refusing them, without its 'nord compare: '."""
    capsys.readouterr()
    assert main(["compare", "--seeds", "1", *flags]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("nord compare: ") and err.count("\n") == 1, err
    return err[len("nord compare: "):-1]


@pytest.mark.parametrize("case", list(REFUSALS))
def test_a_python_caller_gets_the_refusal_the_command_prints(case, capsys):
    call, flags, words = REFUSALS[case]
    with pytest.raises(NordError) as refused:
        call()
    message = str(refused.value)
    assert message == printed_refusal(flags, capsys)
    assert all(word in message for word in words), message


def test_a_budget_of_evaluations_is_refused_with_simulated_time_before_any_run():
    progress = []
    with pytest.raises(ConfigurationError, match="--budget 100 counts evaluations"):
        run_comparison(budget=100, seeds=2, simulation=simulated(workers=4),
                       progress=lambda *seen: progress.append(seen))
    assert progress == []


def test_without_a_budget_a_comparison_counts_the_default_evaluations():
    assert run_comparison(algorithms="random", seeds=1).budget == 100
    assert run_comparison(algorithms="random", seeds=1,
                          simulation=simulated(workers=4, time_budget=2000)).budget is None


def test_seed_noise_on_the_12_epoch_signal_is_the_benchmarks_refusal():
    with pytest.raises(BenchmarkError, match="--signal valid200"):
        simulated(workers=2, noise="seed").check("cifar10")


@pytest.mark.parametrize("flags, words", [
    (["--mode", "sync"], "--mode sets up a comparison in simulated time, which needs --workers N"),
    (["--objectives", "accuracy,parameters"], "add --multi-objective, or leave --objectives out"),
    (["--multi-objective", "--workers", "4"], "leave one of them out"),
    (["--multi-objective", "--algorithms", "rea"], "always runs pygmo's nsga2"),
    (["--population", "30"], "Add --multi-objective, or leave --population out"),
    (["--multi-objective", "--params", '{"rea": {}}'], "runs nsga2 with --population"),
    (["--params", "[1]"], "--params must be a JSON object"),
])
def test_the_command_refuses_a_flag_the_comparison_it_runs_has_no_parameter_for(
        flags, words, capsys):
    assert words in printed_refusal(flags, capsys)


def test_the_anytime_plot_leaves_matplotlib_backend_alone(tmp_path, monkeypatch):
    import matplotlib   # here, not at the top: collecting this module need not import it

    def switched(*args, **kwargs):
        raise AssertionError("write_anytime_plot switched matplotlib's backend")

    monkeypatch.setattr(matplotlib, "use", switched)
    curve = {"time": [0, 1000, 2000], "mean": [90.0, 92.0, 93.0], "low": [89.0, 91.0, 92.5],
             "high": [91.0, 93.0, 93.5], "runs": [1, 1, 1]}
    path = write_anytime_plot(tmp_path / "anytime.png", {"random": curve}, "a title")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_as_many_workers_as_cells_is_the_limit():
    assert simulated(workers=15_625).check("cifar10").virtual_workers == 15_625
    with pytest.raises(ConfigurationError, match="at most 31,250"):
        simulated(workers=31_252, train_workers=2).check("cifar10")
    assert simulated(workers=31_250, train_workers=2).check("cifar10").virtual_workers == 15_625


def test_compare_never_names_a_scheduler_flag_it_does_not_have(capsys):
    """nord compare has no --scheduler: its help and its refusals say how it runs the
    algorithms that need one instead."""
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--scheduler" not in help_text
    assert "asha, bohb, hyperband run here under their scheduler" in help_text
    for flags in (["--algorithms", "asha"], ["--algorithms", "asha", "--workers", "4", "--mode",
                                             "sync"]):
        assert main(["compare", "--seeds", "1", *flags]) == 2
        error = capsys.readouterr().err
        assert "asha runs only under the asha scheduler" in error and "--scheduler" not in error
