"""TPE, GP-BO and CMA-ES through Optuna: genes become the right distributions, settings and
spaces are checked, failures are failed trials, runs are seeded, resume to the uninterrupted
run, give the same candidates for any number of workers, and are registered."""
import importlib.util
import subprocess
import sys

import numpy as np
import pytest

optuna = pytest.importorskip("optuna",
                             reason="optuna is not installed (pip install 'nord[optuna]')")
from optuna.distributions import (CategoricalDistribution, FloatDistribution,  # noqa: E402
                                  IntDistribution)
from optuna.trial import TrialState  # noqa: E402

from nord.app.cli import main  # noqa: E402
from nord.benchmarks.nasbench201 import NASBench201Space  # noqa: E402
from nord.errors import (ConfigurationError, MissingDependencyError,  # noqa: E402
                         SearchSpaceError)
from nord.evaluators.result import EvaluationResult  # noqa: E402
from nord.journal import Journal  # noqa: E402
from nord.search.algorithms.optuna_adapter import (CMAES, TPE, GaussianProcessBO,  # noqa: E402
                                                   gene_kinds, import_optuna)
from nord.search.algorithms.random_search import RandomSearch  # noqa: E402
from nord.search.algorithms.registry import make_algorithm  # noqa: E402
from nord.search.engine import run_search  # noqa: E402
from nord.search.executors import SerialExecutor, SimulatedExecutor  # noqa: E402
from nord.search.spaces.base import SearchSpace  # noqa: E402
from tests.helpers.toy import (Interrupting, ToyEvaluator, ToySpace, ask_and_tell,  # noqa: E402
                               journal_rows)

pytestmark = pytest.mark.timeout(120)

needs_cmaes = pytest.mark.skipif(importlib.util.find_spec("cmaes") is None,
                                 reason="cmaes is not installed (pip install cmaes)")


class Mixed(SearchSpace):
    """An unordered choice, an ordered integer and a real gene."""

    lower = (0, 2, 0.0)
    upper = (3, 9, 1.0)
    integer = (True, True, False)
    categorical = (True, False, False)


class Ordered(SearchSpace):
    """Three ordered integer genes and a real one: what CMA-ES can search."""

    lower = (0, 0, 0, -1.0)
    upper = (20, 20, 20, 1.0)
    integer = (True, True, True, False)


def peak(genome) -> EvaluationResult:
    """Accuracy falls with the distance from (14, 5, 9, 0.3)."""
    distance = sum(abs(g - t) for g, t in zip(genome, (14, 5, 9, 0.3)))
    return EvaluationResult(accuracy=1.0 / (1.0 + distance))


# --- genes -> distributions -------------------------------------------------------------
def test_each_gene_becomes_the_distribution_of_its_kind():
    algorithm = TPE(Mixed(), seed=0)
    assert gene_kinds(Mixed()) == ["categorical", "int", "float"]
    first, second, third = algorithm._distributions.values()
    assert first == CategoricalDistribution((0, 1, 2, 3))
    assert second == IntDistribution(2, 9) and third == FloatDistribution(0.0, 1.0)
    assert algorithm.parameters()["genes"] == ["categorical", "int", "float"]


def test_nasbench201_edges_are_categorical_and_conv_genes_ordered():
    from nord.search.spaces.conv import ConvSpace
    assert gene_kinds(NASBench201Space()) == ["categorical"] * 6
    assert gene_kinds(ConvSpace()) == ["int"] * 4


def test_candidates_are_genomes_of_the_space():
    space = Mixed()
    for candidate in ask_and_tell(TPE(space, seed=1, n_startup_trials=3), peak, 25):
        assert space.normalise(candidate) == candidate
        assert [type(value) for value in candidate] == [int, int, float]


@pytest.mark.parametrize("flags, words", [((True, True), "2 flags for 3 genes"),
                                          ((False, False, True), "flags real-valued genes")])
def test_a_wrong_categorical_mask_is_refused(flags, words):
    class Bad(Mixed):
        categorical = flags

    with pytest.raises(SearchSpaceError, match=words):
        TPE(Bad(), seed=0)


# --- refusals -------------------------------------------------------------------------------
def test_cmaes_refuses_a_space_of_unordered_choices_and_says_what_to_use():
    with pytest.raises(SearchSpaceError) as error:
        CMAES(NASBench201Space(), seed=0)
    message = str(error.value)
    assert "positions [0, 1, 2, 3, 4, 5]" in message and "categorical" in message
    assert "'tpe'" in message


@pytest.mark.parametrize("make, words", [
    (lambda: TPE(Mixed(), n_startup_trials=0), "n_startup_trials (random proposals before "
                                                "the model is used) must be an integer >= 1"),
    (lambda: TPE(Mixed(), n_startup_trials=-3), "n_startup_trials"),
    (lambda: TPE(Mixed(), n_startup_trials=2.5), "n_startup_trials"),
    (lambda: TPE(Mixed(), n_ei_candidates=0), "n_ei_candidates"),
    (lambda: TPE(Mixed(), multivariate="yes"), "multivariate must be True or False"),
    (lambda: GaussianProcessBO(Mixed(), n_startup_trials=0), "n_startup_trials"),
    (lambda: GaussianProcessBO(Mixed(), deterministic_objective=1), "deterministic_objective"),
    (lambda: CMAES(Ordered(), sigma0=0), "sigma0 (CMA-ES's initial step size) must be a "
                                         "finite number > 0"),
    (lambda: CMAES(Ordered(), sigma0=float("nan")), "sigma0"),
    (lambda: CMAES(Ordered(), population_size=1), "population_size"),
    (lambda: CMAES(Ordered(), n_startup_trials=0), "n_startup_trials")])
def test_bad_settings_are_refused_with_the_parameter_and_the_rule(make, words):
    with pytest.raises(ConfigurationError) as error:
        make()
    assert words in str(error.value)


def test_missing_optuna_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)
    with pytest.raises(MissingDependencyError, match=r'pip install "nord\[optuna\]"'):
        import_optuna()
    with pytest.raises(MissingDependencyError):
        TPE(Mixed(), seed=0)


def test_missing_cmaes_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "cmaes" else object())
    with pytest.raises(MissingDependencyError, match="pip install cmaes"):
        CMAES(Ordered(), seed=0)


@pytest.mark.processes
def test_importing_the_registry_does_not_import_optuna():
    code = ("import sys, nord.search.algorithms.registry; "
            "assert 'optuna' not in sys.modules, 'optuna imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_optunas_logging_is_left_as_the_caller_set_it():
    optuna.logging.set_verbosity(optuna.logging.INFO)
    try:
        ask_and_tell(TPE(Mixed(), seed=0), peak, 3)
        assert optuna.logging.get_verbosity() == optuna.logging.INFO
    finally:
        optuna.logging.set_verbosity(optuna.logging.WARNING)


# --- results ----------------------------------------------------------------------------------
def test_the_study_minimises_fitness_and_failures_are_failed_trials():
    algorithm = TPE(Mixed(), seed=0)
    first, second = algorithm.ask(), algorithm.ask()
    algorithm.tell(first, EvaluationResult(accuracy=0.75))
    algorithm.tell(second, EvaluationResult.failure("out of memory"))
    trials = algorithm.study.trials
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.FAIL]
    assert trials[0].value == pytest.approx(0.25)
    assert algorithm.best is first


def test_a_non_finite_accuracy_is_a_failed_trial():
    algorithm = TPE(Mixed(), seed=0)
    candidate = algorithm.ask()
    algorithm.tell(candidate, EvaluationResult(accuracy=float("nan")))
    assert algorithm.study.trials[0].state == TrialState.FAIL


def test_failures_do_not_count_as_startup_trials():
    """Optuna's samplers leave failed trials out: the model starts after 3 successes."""
    algorithm = TPE(Mixed(), seed=0, n_startup_trials=3)
    ask_and_tell(algorithm, lambda genome: EvaluationResult.failure("no"), 5)
    ask_and_tell(algorithm, peak, 3)
    complete = algorithm.study.get_trials(states=(TrialState.COMPLETE,))
    assert len(complete) == 3 and len(algorithm.study.trials) == 8


def test_telling_a_candidate_twice_is_refused():
    algorithm = TPE(Mixed(), seed=0)
    candidate = algorithm.ask()
    algorithm.tell(candidate, peak(candidate.genome))
    with pytest.raises(ConfigurationError, match="told already"):
        algorithm.tell(candidate, peak(candidate.genome))


def test_results_may_be_told_out_of_order():
    algorithm = TPE(Mixed(), seed=0)
    asked = [algorithm.ask() for _ in range(4)]
    for candidate in reversed(asked):
        algorithm.tell(candidate, peak(candidate.genome))
    values = [t.value for t in algorithm.study.trials]
    assert values == [pytest.approx(peak(c.genome).fitness) for c in asked]


# --- determinism --------------------------------------------------------------------------------
@pytest.mark.parametrize("make, steps", [
    pytest.param(lambda seed: TPE(Ordered(), seed=seed, n_startup_trials=4), 12, id="tpe"),
    pytest.param(lambda seed: GaussianProcessBO(Ordered(), seed=seed, n_startup_trials=2), 5,
                 id="gp-bo", marks=[pytest.mark.slow, pytest.mark.timeout(600)]),
    pytest.param(lambda seed: CMAES(Ordered(), seed=seed), 12, id="cmaes", marks=needs_cmaes)])
def test_the_same_seed_gives_the_same_run_and_another_seed_another(make, steps):
    first, again, other = (ask_and_tell(make(seed), peak, steps) for seed in (3, 3, 4))
    assert first == again
    assert first != other


def test_tpe_learns_the_peak():
    """Past its random start-up, TPE's proposals come nearer the best genome than random
    search's, over the same number of results."""
    def distance(genomes):
        return np.mean([1 / peak(g).accuracy - 1 for g in genomes[-20:]])

    tpe = distance(ask_and_tell(TPE(Ordered(), seed=0), peak, 60))
    random = distance(ask_and_tell(RandomSearch(Ordered(), seed=0), peak, 60))
    assert tpe < random / 2


@pytest.mark.slow
@pytest.mark.timeout(600)   # 79 s on 2 cores at a load of 15: each proposal refits the GP
def test_gp_bo_learns_the_peak():
    def distance(genomes):
        return np.mean([1 / peak(g).accuracy - 1 for g in genomes[-8:]])

    gp = distance(ask_and_tell(GaussianProcessBO(Ordered(), seed=0, n_startup_trials=5), peak, 16))
    random = distance(ask_and_tell(RandomSearch(Ordered(), seed=0), peak, 16))
    assert gp < random / 2


# --- through the engine ---------------------------------------------------------------------
@pytest.mark.parametrize("mode, workers", [("sync", 1), ("async", 1), ("sync", 3)])
def test_a_run_resumed_half_way_rebuilds_the_uninterrupted_study(tmp_path, mode, workers):
    """ToySpace has an undecodable genome and a failing one: both are failed trials."""
    settings = dict(budget=30, mode=mode, batch_size=workers)

    def make():
        return TPE(ToySpace(), seed=0, n_startup_trials=4)

    whole = make()
    run_search(whole, ToyEvaluator(), journal=tmp_path / "whole.db", **settings)
    with pytest.raises(KeyboardInterrupt):
        run_search(make(), Interrupting(8), journal=tmp_path / "cut.db", **settings)
    resumed = make()
    summary = run_search(resumed, ToyEvaluator(), journal=tmp_path / "cut.db", resume=True,
                         **settings)
    assert summary.replayed >= 7
    assert journal_rows(tmp_path / "cut.db") == journal_rows(tmp_path / "whole.db")
    states = [(t.params, t.state, t.value) for t in resumed.study.trials]
    assert states == [(t.params, t.state, t.value) for t in whole.study.trials]
    assert TrialState.FAIL in {t.state for t in whole.study.trials}


def test_a_sync_run_gives_the_same_candidates_for_any_number_of_workers(tmp_path):
    """Results of a batch are told in candidate order, so with the same batch size one
    worker and four give the same run."""
    def candidates(executor, name):
        run_search(TPE(NASBench201Space(), seed=5, n_startup_trials=4), executor=executor,
                   budget=24, batch_size=4, journal=tmp_path / name)
        with Journal(tmp_path / name) as journal:
            return [row["genome"] for row in journal.candidates()]

    from nord.comparisons.compare import benchmark_evaluator
    evaluator = benchmark_evaluator("cifar10")
    serial = candidates(SerialExecutor(evaluator), "serial.db")
    parallel = candidates(SimulatedExecutor(evaluator, workers=4), "four.db")
    assert len(serial) == 24 and serial == parallel


# --- registry and command line ---------------------------------------------------------------
def test_the_names_and_aliases_make_the_algorithms():
    assert isinstance(make_algorithm("tpe", Mixed(), seed=0), TPE)
    for name in ("gp-bo", "gp", "bayesopt", "GP_BO"):
        assert isinstance(make_algorithm(name, Mixed(), seed=0), GaussianProcessBO)
    with pytest.raises(SearchSpaceError):
        make_algorithm("cma-es", NASBench201Space(), seed=0)


def test_settings_are_recorded_in_the_parameters():
    algorithm = make_algorithm("tpe", Mixed(), seed=2, n_startup_trials=5)
    assert algorithm.parameters() == {
        "algorithm": "tpe", "seed": 2, "n_startup_trials": 5, "n_ei_candidates": 24,
        "multivariate": True, "constant_liar": True,
        "genes": ["categorical", "int", "float"]}


def test_nord_run_and_compare_take_them(tmp_path, capsys):
    journal = tmp_path / "tpe.db"
    assert main(["run", "--space", "nasbench201", "--algorithm", "tpe", "--budget", "12",
                 "--seed", "1", "--journal", str(journal)]) == 0
    with Journal(journal) as record:
        assert len(record.evaluations()) == 12
    assert main(["run", "--space", "nasbench201", "--algorithm", "tpe", "--budget", "5",
                 "--params", '{"n_startup_trials": 0}', "--journal", str(tmp_path / "x.db")]) == 2
    assert "n_startup_trials" in capsys.readouterr().err
    assert main(["compare", "--algorithms", "random,tpe", "--budget", "12", "--seeds", "2"]) == 0
    assert "tpe" in capsys.readouterr().out
    assert main(["compare", "--algorithms", "random,cmaes", "--budget", "12",
                 "--seeds", "2"]) == 2
    assert "unordered choices" in capsys.readouterr().err
