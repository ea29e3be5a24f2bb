"""BOHB: the categorical kernel densities, the model on the largest budget with enough
results, the random share, refusals, seeds, resume by replay, runs under Hyperband (toy and
real training, kill -9 included) and the command line's refusals."""
import itertools
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from nord.app.cli import main
from nord.errors import ConfigurationError, SearchSpaceError
from nord.evaluators.result import EvaluationResult
from nord.journal import Journal
from nord.search.algorithms.bohb import BOHB, CategoricalKDE, categorical_bandwidths
from nord.search.algorithms.random_search import RandomSearch
from nord.search.algorithms.registry import make_algorithm
from nord.search.engine import run_search
from nord.search.schedulers import make_scheduler
from nord.search.spaces.base import SearchSpace
from tests.helpers.journals import journaled_evaluations
from tests.helpers.toy import ToyCurves, ToySpace, journal_rows, toy_accuracy

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[2]


class Three(SearchSpace):
    """Three unordered genes of 3, 4 and 2 values (the second offset, to check the bounds)."""

    lower = (0, 2, 0)
    upper = (2, 5, 1)


class Wide(ToySpace):
    """ToySpace's networks with 40 widths and 5 kernels: too many to meet repeats often."""

    lower = (1, 1)
    upper = (40, 5)


SIZES = np.array([3, 4, 2])
ALL = np.array(list(itertools.product(range(3), range(4), range(2))))


def told(algorithm, genome, accuracy, epochs):
    candidate = algorithm.ask()
    candidate.genome = tuple(genome)
    algorithm.tell(candidate, EvaluationResult(accuracy=accuracy, epochs=epochs))


def hyperband(**settings):
    return make_scheduler("hyperband", min_epochs=1, max_epochs=9, eta=3, **settings)


# --- the kernel densities ------------------------------------------------------------------------
@pytest.mark.parametrize("bandwidths", [[0.0, 0.0, 0.0], [0.2, 0.5, 0.1], [2 / 3, 3 / 4, 1 / 2]])
def test_a_density_sums_to_one_over_every_genome(bandwidths):
    points = np.array([[0, 1, 1], [2, 3, 0], [0, 1, 0]])
    density = CategoricalKDE(points, SIZES, np.array(bandwidths)).density(ALL)
    assert density.sum() == pytest.approx(1.0) and (density >= 0).all()
    if bandwidths[0] == 2 / 3:                  # every kernel at its widest is uniform
        assert np.allclose(density, 1 / len(ALL))


def test_draws_follow_the_density_they_come_from():
    kde = CategoricalKDE(np.array([[0, 1, 1], [2, 3, 0]]), SIZES, np.array([0.3, 0.2, 0.1]))
    draws = kde.sample(np.random.default_rng(0), 40_000)
    index = {tuple(row): i for i, row in enumerate(ALL.tolist())}
    frequencies = np.bincount([index[tuple(row)] for row in draws.tolist()],
                              minlength=len(ALL)) / len(draws)
    assert np.abs(frequencies - kde.density(ALL)).max() < 0.01


def test_widened_draws_never_pass_the_uniform_kernel():
    kde = CategoricalKDE(np.array([[0, 0, 0]]), SIZES, np.array([0.5, 0.5, 0.4]))
    draws = kde.sample(np.random.default_rng(1), 30_000, widen=10.0)
    assert np.allclose([np.mean(draws[:, gene] == 0) for gene in range(3)],
                       1 / SIZES, atol=0.015)


def test_bandwidths_follow_agreement_with_a_floor_and_a_ceiling():
    agree = np.zeros((8, 3), dtype=int)
    assert categorical_bandwidths(agree, SIZES, 1e-3).tolist() == [1e-3] * 3
    spread = ALL                               # every value equally often
    bandwidths = categorical_bandwidths(spread, SIZES, 1e-3)
    rate = len(spread) ** (-1 / 7)
    assert bandwidths == pytest.approx((SIZES - 1) / SIZES * rate)
    assert (bandwidths <= (SIZES - 1) / SIZES).all()
    half = np.array([[0, 0, 0], [0, 0, 0], [1, 0, 0], [2, 0, 0]])
    assert categorical_bandwidths(half, SIZES, 1e-3)[0] == pytest.approx(0.5 * 4 ** (-1 / 7))


# --- the model -------------------------------------------------------------------------------------
def test_the_good_and_bad_points_are_the_best_and_worst_of_a_budget():
    algorithm = BOHB(Three(), seed=0, min_points_in_model=2, top_n_percent=25)
    accuracies = [0.1, 0.9, 0.5, 0.3, 0.8, 0.2, 0.7, 0.6]
    for position, accuracy in enumerate(accuracies):
        told(algorithm, (position % 3, 2 + position % 4, position % 2), accuracy, 3)
    good, bad = algorithm.split(3)
    by_accuracy = sorted(range(8), key=lambda i: -accuracies[i])
    expected = [[i % 3, i % 4, i % 2] for i in by_accuracy]
    assert good.tolist() == expected[:2]       # max(2, 25 % of 8)
    assert bad.tolist() == expected[2:]        # max(2, 8 - 2): the rest


def test_a_small_budget_overlaps_good_and_bad_as_the_paper_says():
    algorithm = BOHB(Three(), seed=0, min_points_in_model=3)
    for position in range(5):                  # N_min + 2 results: both sets take N_min
        told(algorithm, (position % 3, 2, 0), position / 10, 1)
    good, bad = algorithm.split(1)
    assert len(good) == len(bad) == 3 and good[-1].tolist() == bad[0].tolist()


def test_the_model_is_fitted_on_the_largest_budget_with_enough_results():
    algorithm = BOHB(Three(), seed=0, min_points_in_model=2)
    assert algorithm.model_budget() is None
    for position in range(6):
        told(algorithm, (position % 3, 2 + position % 4, 0), 0.5, 1)
    assert algorithm.model_budget() == 1
    for position in range(3):                   # 3 < N_min + 2 at budget 9: not yet
        told(algorithm, (0, 2, 1), 0.5, 9)
    assert algorithm.model_budget() == 1
    told(algorithm, (0, 2, 1), 0.5, 9)
    assert algorithm.model_budget() == 9


def test_proposals_come_from_the_good_results_of_the_modelled_budget():
    """Budget 1 says gene 0 should be 0, budget 9 says 2: the larger budget wins."""
    algorithm = BOHB(Three(), seed=0, min_points_in_model=3, top_n_percent=30,
                     bandwidth_factor=1.0, num_samples=8)
    rng = np.random.default_rng(5)
    for budget, best in ((1, 0), (9, 2)):
        for _ in range(20):
            genome = (int(rng.integers(3)), int(2 + rng.integers(4)), int(rng.integers(2)))
            told(algorithm, genome, 0.9 if genome[0] == best else 0.1, budget)
    assert algorithm.model_budget() == 9
    before = dict(algorithm.proposals)
    asked = [algorithm.ask().genome for _ in range(60)]
    assert sum(genome[0] == 2 for genome in asked) > 50
    assert algorithm.proposals == {"random": before["random"], "model": before["model"] + 60}


def test_failures_are_the_worst_results_and_those_without_epochs_are_not_modelled():
    algorithm = BOHB(Three(), seed=0, min_points_in_model=1)
    for position in range(4):
        candidate = algorithm.ask()
        algorithm.tell(candidate, EvaluationResult.failure("does not build"))
    assert algorithm.model_budget() is None and len(algorithm.observations[0]) == 4
    told(algorithm, (0, 2, 0), 0.2, 3)
    candidate = algorithm.ask()
    candidate.genome = (1, 3, 1)
    algorithm.tell(candidate, EvaluationResult.failure("diverged", epochs=3))
    told(algorithm, (2, 4, 0), 0.1, 3)
    good, bad = algorithm.split(3)
    assert good.tolist()[0] == [0, 0, 0] and bad.tolist()[-1] == [1, 1, 1]


def test_a_random_fraction_of_one_is_random_search():
    bohb = BOHB(Wide(), seed=4, random_fraction=1.0, min_points_in_model=1)
    random = RandomSearch(Wide(), seed=4)
    for step in range(40):
        mine, theirs = bohb.ask(), random.ask()
        assert mine.genome == theirs.genome
        bohb.tell(mine, EvaluationResult(accuracy=toy_accuracy(*mine.genome), epochs=1))
    assert bohb.model_budget() == 1 and bohb.proposals == {"random": 40, "model": 0}


# --- settings ---------------------------------------------------------------------------------------
def test_defaults_are_the_nasbench201_papers_and_are_recorded():
    algorithm = make_algorithm("BOHB", Three(), seed=2)
    assert isinstance(algorithm, BOHB)
    assert algorithm.parameters() == {
        "algorithm": "bohb", "seed": 2, "random_fraction": 0.0, "num_samples": 4,
        "bandwidth_factor": 3.0, "top_n_percent": 15.0, "min_points_in_model": 4,
        "min_bandwidth": 1e-3}


@pytest.mark.parametrize("settings, words", [
    ({"bandwidth_factor": 0}, "bandwidth_factor must be a finite number > 0"),
    ({"bandwidth_factor": -1.0}, "bandwidth_factor must be a finite number > 0"),
    ({"bandwidth_factor": float("inf")}, "bandwidth_factor must be a finite number > 0"),
    ({"num_samples": 0}, "num_samples (draws from the good density per proposal) must be an "
                         "integer >= 1"),
    ({"num_samples": 2.5}, "num_samples"),
    ({"random_fraction": 1.5}, "random_fraction (the share of random proposals) must be a "
                               "number in [0, 1]"),
    ({"random_fraction": -0.1}, "random_fraction"),
    ({"random_fraction": True}, "random_fraction"),
    ({"top_n_percent": 0}, "top_n_percent (the good share of a budget's results) must be a "
                           "number in (0, 100)"),
    ({"top_n_percent": 100}, "top_n_percent"),
    ({"min_points_in_model": 0}, "min_points_in_model"),
    ({"min_bandwidth": 0}, "min_bandwidth must be a number in (0, 1)")])
def test_bad_settings_are_refused_with_the_parameter_and_the_rule(settings, words):
    with pytest.raises(ConfigurationError) as error:
        BOHB(Three(), seed=0, **settings)
    assert words in str(error.value)


def test_a_space_with_a_real_valued_gene_is_refused_clearly():
    class Mixed(SearchSpace):
        lower, upper, integer = (0, 0.0), (3, 1.0), (True, False)

    with pytest.raises(SearchSpaceError, match=r"real-valued genes \(positions \[1\]\)"):
        BOHB(Mixed(), seed=0)


# --- through the engine -------------------------------------------------------------------------
def test_without_a_scheduler_with_brackets_the_engine_refuses_before_the_journal(tmp_path):
    for scheduler in (None, make_scheduler("asha"), make_scheduler("median")):
        with pytest.raises(ConfigurationError, match="runs only under --scheduler hyperband "
                                                     "or sha"):
            run_search(BOHB(Wide(), seed=0), ToyCurves(), budget=5, scheduler=scheduler,
                       mode="async", journal=tmp_path / "r.db")
        assert not (tmp_path / "r.db").exists()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_under_hyperband_it_learns_from_every_rung_and_proposes_better_genomes(mode):
    algorithm = BOHB(Wide(), seed=0)
    summary = run_search(algorithm, ToyCurves(max_epochs=9), budget=90, mode=mode,
                         scheduler=hyperband())
    assert summary.evaluations == 90
    assert {1, 3, 9} <= set(algorithm.observations)
    assert algorithm.proposals["model"] > 40
    everything = np.mean([toy_accuracy(w, k) for w in range(1, 41) for k in range(1, 6)])
    late = [toy_accuracy(*c.genome) for c in _asked(algorithm, 30)]
    assert np.mean(late) > everything + 0.2


def _asked(algorithm, count):
    return [algorithm.ask() for _ in range(count)]


def test_a_result_told_after_several_rungs_carries_them_and_each_counts_at_its_budget(
        tmp_path):
    """Sync brackets tell a candidate once, at its last rung: the engine lists the rungs it
    passed (from its legs), so BOHB files it under each budget it reached, as the paper does."""
    algorithm = BOHB(Wide(), seed=2)
    run_search(algorithm, ToyCurves(max_epochs=9), budget=19, mode="sync",
               scheduler=hyperband(), journal=tmp_path / "r.db")
    with Journal(tmp_path / "r.db") as journal:
        told, legs = journal.evaluations(told=True), journal.legs()
    passed = {}
    for leg in legs:
        passed.setdefault(leg["candidate"], []).append([leg["target_epochs"], leg["accuracy"]])
    carried = [row for row in told if "rungs" in row["metrics"]]
    assert carried                                   # some went on past their first rung
    for row in told:
        if row["cached"] or row["candidate"] not in passed:
            continue
        assert row["metrics"].get("rungs", []) == passed[row["candidate"]][:-1]
    reached = Counter(leg["target_epochs"] for leg in legs if leg["status"] == "ok")
    filed = {budget: len(seen) for budget, seen in algorithm.observations.items()}
    uncached = sum(1 for row in told if row["cached"])
    assert uncached == 0 and {b: filed.get(b, 0) for b in reached} == dict(reached)


def test_successive_halving_is_accepted_too():
    algorithm = BOHB(Wide(), seed=1)
    summary = run_search(algorithm, ToyCurves(max_epochs=9), budget=27, mode="sync",
                         scheduler=make_scheduler("sha", min_epochs=1, max_epochs=9, eta=3))
    assert summary.evaluations == 27 and {1, 3, 9} <= set(algorithm.observations) <= {0, 1, 3, 9}


def test_the_same_seed_gives_the_same_run_and_another_seed_another():
    def run(seed):
        algorithm = BOHB(Wide(), seed=seed)
        asked = []
        run_search(algorithm, ToyCurves(max_epochs=9), budget=40, scheduler=hyperband(),
                   on_result=lambda progress: asked.append(progress.outcome.candidate.genome))
        return asked

    assert run(3) == run(3)
    assert run(3) != run(4)


@pytest.mark.parametrize("mode, cut", [("sync", 20), ("async", 20), ("sync", 45)])
def test_a_run_resumed_half_way_rebuilds_the_uninterrupted_model(tmp_path, mode, cut):
    settings = dict(budget=30, mode=mode)
    whole = BOHB(Wide(), seed=0)
    run_search(whole, ToyCurves(max_epochs=9), journal=tmp_path / "whole.db",
               scheduler=hyperband(), **settings)

    class Interrupting(ToyCurves):
        def evaluate_task(self, task):
            if self.epochs_trained >= cut:
                raise KeyboardInterrupt
            return super().evaluate_task(task)

    with pytest.raises(KeyboardInterrupt):
        run_search(BOHB(Wide(), seed=0), Interrupting(max_epochs=9), journal=tmp_path / "cut.db",
                   scheduler=hyperband(), **settings)
    resumed = BOHB(Wide(), seed=0)
    summary = run_search(resumed, ToyCurves(max_epochs=9), journal=tmp_path / "cut.db",
                         resume=True, scheduler=hyperband(), **settings)
    assert summary.replayed > 0 and summary.evaluations == 30
    drop = ("started", "ended", "train_time", "eval_time", "asked", "recorded", "seconds",
            "worker_rank")
    assert journal_rows(tmp_path / "cut.db", drop) == journal_rows(tmp_path / "whole.db", drop)
    assert resumed.proposals == whole.proposals
    assert ({b: [(p.tolist(), loss) for p, loss in seen]
             for b, seen in resumed.observations.items()}
            == {b: [(p.tolist(), loss) for p, loss in seen]
                for b, seen in whole.observations.items()})
    assert [c.genome for c in _asked(resumed, 10)] == [c.genome for c in _asked(whole, 10)]


# --- the command line ---------------------------------------------------------------------------
@pytest.mark.parametrize("flags, words", [
    ([], "got no --scheduler. Add e.g. --scheduler hyperband --min-epochs 1 --max-epochs 9"),
    (["--scheduler", "asha", "--mode", "async", "--max-epochs", "3"], "got --scheduler asha"),
    (["--space", "nasbench201"], "compare it on the table with nord compare --algorithms bohb")])
def test_nord_run_refuses_bohb_without_brackets_before_anything_runs(tmp_path, capsys, flags,
                                                                      words):
    journal = tmp_path / "r.db"
    assert main(["run", "--algorithm", "bohb", "--budget", "3", "--journal", str(journal),
                 *flags]) == 2
    assert words in capsys.readouterr().err
    assert not journal.exists()


def _what_was_measured(journal):
    with Journal(journal) as record:
        rows = [(row["candidate"], row["genome"], row["status"], row["epochs"],
                 row["accuracy"], row["reported_accuracy"]) for row in record.evaluations()]
        legs = [(leg["candidate"], leg["start_epochs"], leg["target_epochs"], leg["decision"],
                 leg["accuracy"]) for leg in record.legs()]
        return rows, legs, record.state()


@pytest.mark.processes
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_real_training_killed_with_sigkill_resumes_to_the_uninterrupted_journal(tmp_path):
    nord = [sys.executable, "-m", "nord"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    run = ["run", "--algorithm", "bohb", "--scheduler", "hyperband", "--min-epochs", "1",
           "--max-epochs", "3", "--budget", "24", "--threads", "1", "--seed", "3",
           "--params", '{"min_points_in_model": 3}']
    whole, killed = tmp_path / "whole.db", tmp_path / "killed.db"
    assert main(run + ["--journal", str(whole)]) == 0    # only the killed run needs a process
    process = subprocess.Popen(nord + run + ["--journal", str(killed)], env=env,
                               cwd=str(tmp_path), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while journaled_evaluations(killed) < 10:
        assert process.poll() is None, process.stdout.read().decode()
        assert time.monotonic() < deadline, "the run did not record evaluations in time"
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert journaled_evaluations(killed) < 24
    assert main(["resume", str(killed)]) == 0
    assert _what_was_measured(killed) == _what_was_measured(whole)
    with Journal(whole) as record:
        assert {row["epochs"] for row in record.evaluations(told=True)} >= {1, 3}


# --- on NAS-Bench-201: Hyperband over the table's two fidelities -------------------------------
def test_the_table_answers_a_leg_at_each_of_its_two_fidelities_and_fails_others():
    from nord.benchmarks.nasbench201 import BenchmarkEvaluator, NASBench201Space
    from nord.comparisons.fidelities import TableFidelities
    from nord.search.executors import Task

    space, genome = NASBench201Space(), (3, 3, 4, 1, 3, 1)
    key, descriptor = space.identify(genome)
    table = TableFidelities("cifar10")
    answers = {}
    for epochs in (12, 200, 36):
        answers[epochs] = table.evaluate_task(Task(0, genome, key, space, descriptor,
                                                   epochs=epochs))
    assert answers[12].accuracy == BenchmarkEvaluator("cifar10").query(key).accuracy
    assert answers[200].accuracy == BenchmarkEvaluator(
        "cifar10", signal="valid200").query(key).accuracy
    assert (answers[12].epochs, answers[200].epochs) == (12, 200)
    assert answers[12].reported_accuracy == answers[200].reported_accuracy
    assert answers[36].status == "failed" and "after 12 and 200 epochs only, not after 36" in (
        answers[36].error)


def test_a_budget_of_12_epoch_evaluations_buys_whole_brackets_then_what_fits():
    from nord.comparisons.fidelities import bracket_scheduler, candidates_within

    assert bracket_scheduler().bracket_sizes() == [17, 2]
    # bracket 0: 17 x 12 + 188 epochs; bracket 1: 2 x 200
    assert candidates_within(16) == 0 and candidates_within(17) == 1
    assert candidates_within(33) == 17 and candidates_within(66) == 19
    assert candidates_within(100) == 36          # 392 + 400 + 392 epochs <= 1200


def test_a_bracketed_seed_returns_the_best_of_the_highest_fidelity(monkeypatch):
    from nord.benchmarks.nasbench201 import BenchmarkEvaluator
    from nord.comparisons import fidelities

    told = []
    real = fidelities.run_search

    def spy(*args, **kwargs):
        keep = kwargs["on_result"]
        kwargs["on_result"] = lambda progress: (told.append(progress.outcome), keep(progress))
        return real(*args, **kwargs)

    monkeypatch.setattr(fidelities, "run_search", spy)
    run = fidelities.run_bracketed_seed("bohb", "cifar10", 70, seed=1)
    full = [outcome for outcome in told if outcome.result.epochs == 200]
    best = max(full, key=lambda outcome: outcome.result.accuracy)
    assert len(told) == fidelities.candidates_within(70) and len(full) >= 3
    assert run.index == best.key and run.reported_accuracy == best.result.reported_accuracy
    assert run.accuracy == BenchmarkEvaluator("cifar10").query(best.key).accuracy
    assert run.evaluations == (17 * 12 + 188 + 2 * 200) / 12    # 19 candidates: 2 brackets
    assert fidelities.run_bracketed_seed("bohb", "cifar10", 70, seed=1) == run


def test_nord_compare_takes_bohb_with_its_protocol_and_refuses_what_it_cannot_do(
        tmp_path, capsys):
    import json

    assert main(["compare", "--algorithms", "random,bohb", "--budget", "40", "--seeds", "2",
                 "--json", str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    assert "note: bohb ran under synchronous Hyperband over the table's 12- and 200-epoch" in out
    assert "note: random" not in out
    saved = json.loads((tmp_path / "c.json").read_text())["algorithms"]
    assert "Hyperband" in saved["bohb"]["protocol"] and "protocol" not in saved["random"]
    assert main(["compare", "--algorithms", "bohb", "--budget", "10", "--seeds", "2"]) == 2
    assert "give --budget 17 or more" in capsys.readouterr().err
    assert main(["compare", "--algorithms", "bohb", "--workers", "4", "--seeds", "2",
                 "--signal", "valid200"]) == 2
    assert "got --signal valid200 (signal='valid200'). Leave --signal and --noise out" in (
        capsys.readouterr().err)
    assert main(["compare", "--algorithms", "bohb", "--max-latency-ms", "8", "--latency-device",
                 "pixel3", "--seeds", "2"]) == 2
    assert "a latency limit (--max-latency-ms, max_latency_ms=) is not supported" in (
        capsys.readouterr().err)


def test_a_leg_costs_its_share_of_the_cells_200_epoch_training_time():
    from nord.benchmarks.nasbench201 import BenchmarkEvaluator, NASBench201Space
    from nord.comparisons.fidelities import TableFidelities
    from nord.search.executors import Task

    space, genome = NASBench201Space(), (3, 3, 4, 1, 3, 1)
    key, descriptor = space.identify(genome)
    table = TableFidelities("cifar100")
    full = BenchmarkEvaluator("cifar100", signal="valid200").train_cost(key)

    def leg(epochs, resume_from=None):
        return table.evaluate_task(Task(0, genome, key, space, descriptor, epochs=epochs,
                                        resume_from=resume_from))

    first, promoted, whole = leg(12), leg(200, resume_from="paused.pt"), leg(200)
    assert table.evaluation_cost(first) == pytest.approx(
        BenchmarkEvaluator("cifar100").evaluation_cost(first))      # as the 12-epoch rows
    assert table.evaluation_cost(first) == pytest.approx(full * 12 / 200)
    assert table.evaluation_cost(promoted) == pytest.approx(full * 188 / 200)
    assert table.evaluation_cost(whole) == pytest.approx(full)
    assert table.evaluation_cost(leg(36)) == 0.0


def test_in_simulated_time_it_returns_the_best_of_the_highest_fidelity_told(monkeypatch):
    from nord.benchmarks.nasbench201 import load_table
    from nord.comparisons import anytime

    setting = anytime.SimulatedSetting.for_dataset("cifar10", workers=4, mode="sync",
                                                   time_budget=30_000)
    traced = []
    real = anytime.simulate

    def spy(*args, **kwargs):
        traced.append(real(*args, **kwargs))
        return traced[-1]

    monkeypatch.setattr(anytime, "simulate", spy)
    run = anytime.run_simulated_seed("bohb", "cifar10", 3, setting)
    trace = traced[0]
    assert set(trace.epochs) == {12, 200} and len(trace.epochs) == len(trace.indices)
    full = [i for i, epochs in enumerate(trace.epochs) if epochs == 200]
    best = max(full, key=lambda i: (trace.accuracies[i], -i))
    arrays = load_table().arrays("cifar10")
    assert run.index == trace.indices[best]
    assert run.accuracy == pytest.approx(arrays.accuracy[run.index])     # its 12-epoch signal
    assert run.curve[-1][1] == run.reported_accuracy
    assert anytime.run_simulated_seed("bohb", "cifar10", 3, setting) == run


def test_nord_compare_in_simulated_time_takes_bohb_in_sync_mode(capsys):
    assert main(["compare", "--algorithms", "random,bohb", "--workers", "4", "--mode", "sync",
                 "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert "note: bohb ran under synchronous Hyperband" in out and "sim. time" in out
