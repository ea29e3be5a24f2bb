"""The pygmo adapters: PygmoProblem in plain pygmo, and PygmoAlgorithm driven by ask/tell.

Expected counts are computed from the settings: pygmo evaluates the initial population,
then, with the generational algorithms used here (sga, nsga2), ``population_size`` new
individuals per generation.
"""
import copy
import gc
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from nord.errors import ConfigurationError, MissingDependencyError
from nord.evaluators.base import Evaluator
from nord.evaluators.result import FAILED_FITNESS, EvaluationResult
from nord.search.algorithms import registry
from nord.search.spaces.base import SearchSpace
from tests.unit.test_algorithms import Grid, Mixed, synthetic

pg = pytest.importorskip("pygmo")
from nord.search.algorithms.pygmo_adapter import (FAILED_N_PARAMS, SGA_DEFAULTS,  # noqa: E402
                                       PygmoAlgorithm, PygmoProblem, import_pygmo,
                                       pygmo_algorithm_names)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def closing():
    made = []
    yield made.append
    for algorithm in made:
        algorithm.close()


def ask_batch(algorithm):
    """Every candidate ask hands out before a result is needed."""
    batch = []
    while True:
        candidate = algorithm.ask()
        if candidate is None:
            return batch
        batch.append(candidate)


def drive(algorithm, evaluate=synthetic):
    """Evaluate batch after batch until pygmo is done; returns the batches."""
    batches = []
    for _ in range(10_000):
        batch = ask_batch(algorithm)
        if not batch:
            assert algorithm.finished, "ask returned None with nothing outstanding"
            return batches
        batches.append(batch)
        for candidate in batch:
            algorithm.tell(candidate, evaluate(candidate.genome))
    raise AssertionError("pygmo never finished")


def each(evaluate):
    """``[genome, ...] -> [result, ...]`` from a function of one genome."""
    return lambda genomes: [evaluate(genome) for genome in genomes]


class Recording:
    """A batch evaluation that records the batch sizes it is called with."""

    def __init__(self):
        self.batches = []

    def __call__(self, genomes):
        self.batches.append(len(genomes))
        return [synthetic(genome) for genome in genomes]


# --- PygmoProblem ---------------------------------------------------------------------------
def test_problem_puts_integer_dimensions_last():
    problem = PygmoProblem(Mixed(), each(synthetic))
    assert problem.order == (2, 0, 1)
    assert problem.get_bounds() == ([0.0, 0.0, 3.0], [1.0, 5.0, 3.0])
    assert problem.get_nix() == 2


def test_problem_maps_vectors_and_genomes_both_ways():
    problem = PygmoProblem(Mixed(), each(synthetic))
    assert problem.to_vector((4, 3, 0.25)) == [0.25, 4.0, 3.0]
    assert problem.to_genome([0.25, 4.0, 3.0]) == (4, 3, 0.25)


def test_problem_rounds_and_clips_what_real_valued_algorithms_propose():
    assert PygmoProblem(Mixed(), each(synthetic)).to_genome([1.5, 3.6, 2.9]) == (4, 3, 1.0)


def test_problem_all_integer_space():
    problem = PygmoProblem(Grid(), each(synthetic))
    assert problem.get_nix() == 4
    assert problem.order == (0, 1, 2, 3)


def test_problem_fitness_is_one_minus_accuracy():
    problem = PygmoProblem(Grid(), each(synthetic))
    assert problem.fitness([20, 3, 41, 7]) == [0.0]


def test_problem_two_objectives_add_the_parameter_count():
    problem = PygmoProblem(Grid(), each(synthetic), objectives=2)
    assert problem.get_nobj() == 2
    assert problem.fitness([20, 3, 41, 7]) == [0.0, 71.0]


def test_problem_second_objective_can_be_a_metric_of_the_results():
    def with_latency(genome):
        return EvaluationResult(accuracy=0.5, n_params=7, metrics={"latency_ms": 2.5})

    problem = PygmoProblem(Grid(), each(with_latency), objectives=2,
                           second_objective="latency_ms")
    assert problem.fitness([1, 1, 1, 1]) == [0.5, 2.5]


def test_problem_second_objective_missing_from_the_results_says_which_evaluator_reports_it():
    problem = PygmoProblem(Grid(), each(synthetic), objectives=2, second_objective="latency_ms")
    with pytest.raises(ConfigurationError, match="LatencyEvaluator"):
        problem.fitness([1, 1, 1, 1])


def test_problem_failed_results_are_worst_in_both_objectives():
    problem = PygmoProblem(Grid(), each(lambda g: EvaluationResult.failure("boom", n_params=0)),
                           objectives=2)
    assert problem.fitness([1, 1, 1, 1]) == [FAILED_FITNESS, FAILED_N_PARAMS]


def test_problem_batch_fitness_evaluates_the_whole_batch_at_once():
    evaluate = Recording()
    problem = PygmoProblem(Grid(), evaluate)
    vectors = np.array([[20, 3, 41, 7], [1, 1, 1, 1], [2, 2, 2, 2]], dtype=float)
    values = problem.batch_fitness(vectors.ravel())
    assert evaluate.batches == [3]
    assert np.allclose(values, [synthetic(tuple(int(v) for v in x)).fitness for x in vectors])


def test_problem_rejects_what_is_not_a_result():
    with pytest.raises(ConfigurationError, match="EvaluationResult"):
        PygmoProblem(Grid(), each(lambda g: 0.5)).fitness([1, 1, 1, 1])


def test_problem_refuses_a_batch_of_the_wrong_length():
    with pytest.raises(ConfigurationError, match="2 results for 1 genomes"):
        PygmoProblem(Grid(), lambda genomes: [synthetic((1, 1, 1, 1))] * 2).fitness([1, 1, 1, 1])


def test_problem_copies_share_the_evaluation():
    evaluate = Recording()
    problem = PygmoProblem(Grid(), evaluate)
    assert copy.deepcopy(problem).evaluate is evaluate


def test_problem_runs_in_plain_pygmo():
    problem = pg.problem(PygmoProblem(Grid(), each(synthetic)))
    population = pg.population(problem, 10, seed=0)
    population = pg.algorithm(pg.sga(gen=5, cr=0.9, m=0.2, seed=1)).evolve(population)
    assert problem.get_nix() == 4
    assert population.problem.get_fevals() == 10 * (5 + 1)
    assert population.champion_f[0] <= min(pg.population(problem, 10, seed=0).get_f()[:, 0])


# --- PygmoAlgorithm: the paper's sga ---------------------------------------------------------
def test_paper_defaults_are_the_default_sga_setting():
    paper = PygmoAlgorithm.paper_defaults()
    assert paper == {"algorithm": "sga", "population_size": 10, "generations": 10,
                     "cr": 0.9, "m": 0.2, "mutation": "uniform"}
    assert PygmoAlgorithm(Grid(), **paper).parameters() == PygmoAlgorithm(Grid()).parameters()


def test_sga_parameters_record_the_papers_settings():
    parameters = PygmoAlgorithm(Grid(), seed=3).parameters()
    assert parameters["pygmo_algorithm"] == "sga"
    assert parameters["algo_kwargs"] == SGA_DEFAULTS
    assert parameters["batch"] is False


def test_sga_evaluates_one_genome_at_a_time(closing):
    algorithm = PygmoAlgorithm(Grid(), population_size=6, generations=2, seed=0)
    closing(algorithm)
    batches = drive(algorithm)
    assert {len(batch) for batch in batches} == {1}


def test_sga_evaluates_initial_population_plus_one_per_generation(closing):
    population_size, generations = 6, 4
    algorithm = PygmoAlgorithm(Grid(), population_size=population_size,
                               generations=generations, seed=0)
    closing(algorithm)
    candidates = [c for batch in drive(algorithm) for c in batch]
    assert len(candidates) == population_size * (generations + 1) == algorithm.evaluations
    counts = np.bincount([c.generation for c in candidates])
    assert counts.tolist() == [population_size] * (generations + 1)


def test_sga_finishes_with_pygmos_population(closing):
    algorithm = PygmoAlgorithm(Grid(), population_size=6, generations=2, seed=0)
    closing(algorithm)
    drive(algorithm)
    assert algorithm.finished
    assert len(algorithm.final_population) == 6
    assert algorithm.ask() is None


def test_sga_is_reproducible(closing):
    runs = []
    for _ in range(2):
        algorithm = PygmoAlgorithm(Grid(), population_size=6, generations=3, seed=5)
        closing(algorithm)
        runs.append([c.genome for batch in drive(algorithm) for c in batch])
    assert runs[0] == runs[1]


def test_sga_ask_tell_is_the_same_run_as_plain_pygmo(closing):
    algorithm = PygmoAlgorithm(Grid(), population_size=6, generations=3, seed=5)
    closing(algorithm)
    asked = [c.genome for batch in drive(algorithm) for c in batch]

    seen = []

    def record(genome):
        seen.append(genome)
        return synthetic(genome)

    population = pg.population(pg.problem(PygmoProblem(Grid(), each(record))), 6,
                               seed=algorithm._population_seed)
    sga = pg.algorithm(pg.sga(gen=3, **SGA_DEFAULTS))
    sga.set_seed(algorithm._algorithm_seed)
    sga.evolve(population)
    assert asked == seen


def test_sga_with_results_out_of_order_is_the_same_run(closing):
    # sga asks one genome at a time, so there is no order to vary: the batch is the unit
    algorithm = PygmoAlgorithm(Grid(), population_size=4, generations=1, seed=2)
    closing(algorithm)
    first = algorithm.ask()
    assert algorithm.ask() is None
    algorithm.tell(first, synthetic(first.genome))
    assert algorithm.ask() is not None


# --- PygmoAlgorithm: batches ------------------------------------------------------------------
def test_nsga2_hands_out_whole_populations(closing):
    population_size, generations = 8, 3
    algorithm = PygmoAlgorithm(Grid(), "nsga2", population_size=population_size,
                               generations=generations, objectives=2, seed=0)
    closing(algorithm)
    batches = drive(algorithm)
    assert algorithm.batch is True
    assert [len(b) for b in batches] == [population_size] * (generations + 1)
    assert [b[0].generation for b in batches] == list(range(generations + 1))
    assert all(len({c.generation for c in b}) == 1 for b in batches)


def test_nsga2_minimises_error_and_parameter_count(closing):
    algorithm = PygmoAlgorithm(Grid(), "nsga2", population_size=8, generations=2,
                               objectives=2, seed=0)
    closing(algorithm)
    drive(algorithm)
    population = algorithm.final_population
    problem = PygmoProblem(Grid(), each(synthetic))
    for x, f in zip(population.get_x(), population.get_f()):
        result = synthetic(problem.to_genome(x))
        assert f.tolist() == [result.fitness, result.n_params]


def test_nsga2_is_reproducible(closing):
    runs = []
    for _ in range(2):
        algorithm = PygmoAlgorithm(Grid(), "nsga2", population_size=8, generations=3,
                                   objectives=2, seed=11)
        closing(algorithm)
        runs.append([c.genome for b in drive(algorithm) for c in b])
    assert runs[0] == runs[1]


def test_nsga2_batch_results_may_come_back_in_any_order(closing):
    runs = []
    for reverse in (False, True):
        algorithm = PygmoAlgorithm(Grid(), "nsga2", population_size=8, generations=2,
                                   objectives=2, seed=3)
        closing(algorithm)
        genomes = []
        while True:
            batch = ask_batch(algorithm)
            if not batch:
                break
            genomes += [c.genome for c in batch]
            for c in (batch[::-1] if reverse else batch):
                algorithm.tell(c, synthetic(c.genome))
        runs.append(genomes)
    assert runs[0] == runs[1]


def test_batch_can_be_turned_off(closing):
    algorithm = PygmoAlgorithm(Grid(), "nsga2", population_size=8, generations=1,
                               objectives=2, batch=False, seed=0)
    closing(algorithm)
    assert {len(b) for b in drive(algorithm)} == {1}


def test_batch_true_needs_an_algorithm_that_takes_one():
    with pytest.raises(ConfigurationError, match="batch fitness evaluator"):
        PygmoAlgorithm(Grid(), "sga", batch=True)


def test_a_uda_instance_is_used_and_reseeded(closing):
    runs = []
    for uda_seed in (1, 2):
        algorithm = PygmoAlgorithm(Grid(), pg.nsga2(gen=1, seed=uda_seed), population_size=8,
                                   generations=2, objectives=2, seed=4)
        closing(algorithm)
        assert algorithm.batch is True
        runs.append([c.genome for b in drive(algorithm) for c in b])
    assert runs[0] == runs[1]


def test_a_pygmo_algorithm_instance_is_accepted(closing):
    algorithm = PygmoAlgorithm(Grid(), pg.algorithm(pg.sga(gen=1)), population_size=4,
                               generations=2, seed=0)
    closing(algorithm)
    assert sum(len(b) for b in drive(algorithm)) == 4 * 3


def test_real_valued_algorithms_get_rounded_genomes(closing):
    space = Grid()
    algorithm = PygmoAlgorithm(space, "cmaes", population_size=8, generations=2, seed=0)
    closing(algorithm)
    for batch in drive(algorithm):
        assert all(space.normalise(c.genome) == c.genome for c in batch)


def test_registry_makes_pygmo_algorithms_with_their_arguments(closing):
    algorithm = registry.make_algorithm("pygmo", Grid(), seed=0, algorithm="nsga2",
                                        population_size=8, generations=1, objectives=2, cr=0.8)
    closing(algorithm)
    assert isinstance(algorithm, PygmoAlgorithm)
    assert algorithm.parameters()["algo_kwargs"] == {"cr": 0.8}


# --- errors -----------------------------------------------------------------------------------
def test_an_unknown_pygmo_algorithm_lists_the_valid_names():
    with pytest.raises(ConfigurationError, match="nsga2") as error:
        PygmoAlgorithm(Grid(), "hill_climber")
    assert "sga" in str(error.value)
    assert "sga" in pygmo_algorithm_names() and "archipelago" not in pygmo_algorithm_names()


def test_arguments_the_pygmo_algorithm_does_not_take_are_configuration_errors():
    with pytest.raises(ConfigurationError, match="pygmo.sga"):
        PygmoAlgorithm(Grid(), "sga", crossover_rate=0.5)


def test_invalid_argument_values_are_configuration_errors():
    with pytest.raises(ConfigurationError):
        PygmoAlgorithm(Grid(), "sga", cr=1.5)


@pytest.mark.parametrize("kwargs", [{"population_size": 0}, {"generations": -1},
                                    {"objectives": 3}, {"batch": "yes"}])
def test_invalid_settings_are_configuration_errors(kwargs):
    with pytest.raises(ConfigurationError):
        PygmoAlgorithm(Grid(), **kwargs)


def test_what_pygmo_cannot_run_is_refused_before_the_first_evaluation():
    # CMA-ES cannot optimise two objectives: pygmo says so when it evolves
    with pytest.raises(ConfigurationError, match="CMA-ES cannot run this search.*Multiple objectives"):
        PygmoAlgorithm(Grid(), "cmaes", population_size=8, generations=2, objectives=2, seed=0)


@pytest.mark.parametrize("name, population, reason", [
    ("sga", 1, "at least 2 individuals"), ("de", 4, "at least 5 individuals"),
    ("gaco", 5, "archive bigger than the population"), ("pso_gen", 1, "at least 2 particles"),
    ("nsga2", 4, "at least 5 individuals")])
def test_pygmos_population_rules_are_checked_when_the_algorithm_is_made(name, population, reason):
    objectives = 2 if name == "nsga2" else 1
    with pytest.raises(ConfigurationError, match=reason):
        PygmoAlgorithm(Grid(), name, population_size=population, objectives=objectives, seed=0)


class BrokenUDA:
    """A Python pygmo algorithm that fails when it evolves."""

    def evolve(self, population):
        raise RuntimeError("the UDA broke")


def test_an_exception_in_pygmos_thread_is_raised_by_ask(closing):
    algorithm = PygmoAlgorithm(Grid(), BrokenUDA(), population_size=3, generations=1, seed=0)
    closing(algorithm)
    for _ in range(3):
        candidate = algorithm.ask()
        algorithm.tell(candidate, synthetic(candidate.genome))
    with pytest.raises(RuntimeError, match="the UDA broke"):
        algorithm.ask()
    assert algorithm.finished
    with pytest.raises(RuntimeError):
        algorithm.ask()


def test_telling_a_candidate_twice_is_refused(closing):
    algorithm = PygmoAlgorithm(Grid(), "nsga2", population_size=8, generations=1,
                               objectives=2, seed=0)
    closing(algorithm)
    candidate = ask_batch(algorithm)[0]
    algorithm.tell(candidate, synthetic(candidate.genome))
    with pytest.raises(ConfigurationError, match="told already"):
        algorithm.tell(candidate, synthetic(candidate.genome))


def test_missing_pygmo_is_a_missing_dependency_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygmo", None)
    with pytest.raises(MissingDependencyError, match="pip install pygmo"):
        import_pygmo()
    with pytest.raises(MissingDependencyError):
        PygmoAlgorithm(Grid())


@pytest.mark.processes
def test_importing_the_registry_does_not_import_pygmo():
    code = "import sys, nord.search.algorithms.registry; assert 'pygmo' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --- the thread -------------------------------------------------------------------------------
def test_the_caller_runs_while_pygmo_waits_in_a_fitness_call(closing):
    algorithm = PygmoAlgorithm(Grid(), population_size=4, generations=1, seed=0)
    closing(algorithm)
    candidate = algorithm.ask()                   # pygmo's thread now blocks in fitness
    thread = algorithm._thread_holder[0]
    assert thread.is_alive()
    # a deadlock or a held GIL would stop both of these; the timeout turns that into a failure
    counter = {"n": 0}

    def count():
        while counter["n"] < 200_000:
            counter["n"] += 1

    helper = threading.Thread(target=count)
    started = time.perf_counter()
    helper.start()
    helper.join(timeout=20)
    assert not helper.is_alive() and counter["n"] == 200_000
    assert sum(range(1_000_000)) > 0 and time.perf_counter() - started < 20
    assert algorithm.ask() is None                # waiting for the result, without blocking
    assert thread.is_alive()
    algorithm.tell(candidate, synthetic(candidate.genome))
    assert algorithm.ask() is not None


def test_close_stops_the_thread():
    algorithm = PygmoAlgorithm(Grid(), population_size=4, generations=3, seed=0)
    algorithm.ask()
    thread = algorithm._thread_holder[0]
    algorithm.close()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert algorithm.finished and algorithm.ask() is None


def test_close_before_any_ask_is_harmless():
    algorithm = PygmoAlgorithm(Grid(), seed=0)
    algorithm.close()
    assert algorithm.ask() is None


def test_garbage_collection_stops_the_thread():
    algorithm = PygmoAlgorithm(Grid(), population_size=4, generations=3, seed=0)
    algorithm.ask()
    thread = algorithm._thread_holder[0]
    del algorithm
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive()


@pytest.mark.processes
def test_the_interpreter_exits_with_pygmo_waiting():
    code = textwrap.dedent("""
        from nord.search.algorithms.pygmo_adapter import PygmoAlgorithm
        from nord.search.spaces.base import SearchSpace

        class Grid(SearchSpace):
            lower, upper = (1, 1), (9, 9)

        algorithm = PygmoAlgorithm(Grid(), 'nsga2', population_size=8, objectives=2, seed=0)
        assert algorithm.ask() is not None
        print('asked')
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "asked" in done.stdout


def test_all_failed_evaluations_run_to_the_end(closing):
    algorithm = PygmoAlgorithm(Grid(), "nsga2", population_size=8, generations=2,
                               objectives=2, seed=0)
    closing(algorithm)
    batches = drive(algorithm, lambda g: EvaluationResult.failure("out of memory"))
    assert sum(len(b) for b in batches) == 8 * 3
    assert algorithm.best is None
