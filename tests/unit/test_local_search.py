"""Local search: neighbourhoods, hill climbing, restarts, batches, determinism and resume.

A hand-made landscape on a 5 x 5 grid of integer genomes has two peaks, so climbs end at
either; NAS-Bench-201 checks the same rules on the real table.
"""
import numpy as np
import pytest

from nord.benchmarks import BenchmarkEvaluator, NASBench201Space, benchmark_arrays, load_table
from nord.errors import SearchSpaceError
from nord.evaluators.result import EvaluationResult
from nord.search.engine import run_search
from nord.search.algorithms.local_search import LocalSearch
from nord.search.algorithms.registry import make_algorithm
from nord.search.spaces.base import SearchSpace
from tests.helpers.toy import Interrupting, ToyEvaluator, ToySpace, journal_rows

pytestmark = pytest.mark.timeout(60)


class Square(SearchSpace):
    """Two integer genes in 0..4: 25 genomes, 8 neighbours each."""

    lower = (0, 0)
    upper = (4, 4)


PEAKS = {(0, 0): 0.9, (4, 4): 0.6}
"""Two peaks: the global optimum (0, 0) and a local one (4, 4)."""


def two_peaks(genome) -> EvaluationResult:
    """Accuracy falls with the L1 distance from the nearer peak, scaled by its height."""
    accuracy = max(height - 0.05 * sum(abs(g - p) for g, p in zip(genome, peak))
                   for peak, height in PEAKS.items())
    return EvaluationResult(accuracy=accuracy)


def climb(algorithm, evaluate, budget):
    """Ask and tell one candidate at a time; the genomes in the order asked."""
    asked = []
    while len(asked) < budget and not algorithm.finished:
        candidate = algorithm.ask()
        assert candidate is not None, "a sequential local search never waits"
        asked.append(candidate.genome)
        algorithm.tell(candidate, evaluate(candidate.genome))
    return asked


def test_an_integer_space_has_the_genomes_one_gene_away_as_neighbours():
    neighbours = Square().neighbours((1, 3))
    assert len(neighbours) == 8 and len(set(neighbours)) == 8
    assert all(sum(a != b for a, b in zip(n, (1, 3))) == 1 for n in neighbours)


def test_a_nasbench201_cell_has_24_neighbours_one_edge_changed():
    genome = (3, 3, 4, 1, 3, 1)
    neighbours = NASBench201Space().neighbours(genome)
    assert len(set(neighbours)) == 24
    assert all(sum(a != b for a, b in zip(n, genome)) == 1 for n in neighbours)


def test_a_space_with_a_real_valued_gene_is_refused_clearly():
    class Mixed(SearchSpace):
        lower, upper, integer = (0, 0.0), (5, 1.0), (True, False)

    with pytest.raises(SearchSpaceError, match="real-valued genes .*override"):
        LocalSearch(Mixed(), seed=0)


def test_it_asks_a_start_then_its_whole_neighbourhood_at_once():
    algorithm = LocalSearch(Square(), seed=0)
    start = algorithm.ask()
    assert algorithm.ask() is None            # waits for the start's result
    algorithm.tell(start, two_peaks(start.genome))
    batch = []
    while (candidate := algorithm.ask()) is not None:
        batch.append(candidate)
    assert sorted(c.genome for c in batch) == sorted(Square().neighbours(start.genome))
    assert {c.generation for c in batch} == {start.generation + 1}


def test_with_several_starts_a_climb_starts_from_the_best_of_them():
    algorithm = LocalSearch(Square(), seed=0, starts=3)
    starts = [algorithm.ask() for _ in range(3)]
    assert algorithm.ask() is None and len({c.genome for c in starts}) == 3
    for candidate in starts:
        algorithm.tell(candidate, two_peaks(candidate.genome))
    assert algorithm.current == min((c.genome for c in starts), key=lambda g: two_peaks(g).fitness)
    assert algorithm.parameters()["starts"] == 3


def test_it_never_moves_to_a_worse_genome_and_stops_only_where_no_neighbour_is_better():
    algorithm = LocalSearch(Square(), seed=3)
    climb(algorithm, two_peaks, 60)
    assert len(algorithm.local_optima) >= 2
    optima = [genome for genome, _ in algorithm.local_optima]
    for genome, fitness in algorithm.local_optima:
        assert genome in PEAKS
        assert all(two_peaks(n).fitness >= fitness for n in Square().neighbours(genome))
    # within a climb every move goes to a strictly better neighbour; only a local optimum
    # is followed by a restart
    path, ended = algorithm.path, 0
    for before, after in zip(path, path[1:]):
        if ended < len(optima) and before == optima[ended]:
            ended += 1
            continue
        assert after in Square().neighbours(before)
        assert two_peaks(after).fitness < two_peaks(before).fitness
    assert ended >= len(optima) - 1   # the last optimum may not have been left yet


def test_a_local_optimum_restarts_from_a_genome_not_evaluated_before():
    algorithm = LocalSearch(Square(), seed=1)
    asked = climb(algorithm, two_peaks, 25)
    assert len(set(asked)) == len(asked)            # nothing asked twice
    first_optimum = algorithm.local_optima[0][0]
    # the restart is the first genome asked after the first climb's last neighbourhood
    restart = next(g for g in asked[asked.index(first_optimum) + 1:]
                   if g not in Square().neighbours(first_optimum))
    assert restart not in asked[:asked.index(restart)]
    assert algorithm.climbs >= 2


def test_it_reaches_the_global_optimum_and_finishes_when_the_space_is_exhausted():
    algorithm = LocalSearch(Square(), seed=5)
    asked = climb(algorithm, two_peaks, 100)
    assert (0, 0) in asked
    assert algorithm.best.genome == (0, 0)
    assert algorithm.finished and sorted(asked) == sorted(
        (a, b) for a in range(5) for b in range(5))
    assert algorithm.ask() is None


def test_failed_results_are_never_climbed_to():
    def fails_off_diagonal(genome):
        return two_peaks(genome) if genome[0] == genome[1] else EvaluationResult.failure("no")

    algorithm = LocalSearch(Square(), seed=2)
    climb(algorithm, fails_off_diagonal, 25)
    assert all(genome[0] == genome[1] for genome, _ in algorithm.local_optima)


def test_the_same_seed_gives_the_same_run_whatever_order_results_come_back_in():
    def shuffled(seed):
        algorithm, order, pending, asked = (LocalSearch(Square(), seed=4),
            np.random.default_rng(seed), [], [])
        while len(asked) < 25:
            while (candidate := algorithm.ask()) is not None:
                pending.append(candidate)
            candidate = pending.pop(int(order.integers(len(pending))))
            asked.append(candidate.genome)
            algorithm.tell(candidate, two_peaks(candidate.genome))
        return sorted(asked), algorithm.local_optima

    assert shuffled(0) == shuffled(1)
    assert (climb(LocalSearch(Square(), seed=4), two_peaks, 25) !=
        climb(LocalSearch(Square(), seed=6), two_peaks, 25))


def test_it_is_registered_with_aliases():
    assert isinstance(make_algorithm("local-search", Square(), seed=0), LocalSearch)
    assert isinstance(make_algorithm("ls", Square(), seed=0), LocalSearch)


# --- through the engine ------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("stop_at", [2, 9])
def test_an_interrupted_run_resumes_to_the_uninterrupted_journal(tmp_path, mode, stop_at):
    """ToySpace has an undecodable genome and a failing one: both are recorded failures."""
    settings = dict(budget=20, mode=mode)
    run_search(LocalSearch(ToySpace(), seed=0), ToyEvaluator(), journal=tmp_path / "whole.db",
               **settings)
    with pytest.raises(KeyboardInterrupt):
        run_search(LocalSearch(ToySpace(), seed=0), Interrupting(stop_at),
                   journal=tmp_path / "cut.db", **settings)
    summary = run_search(LocalSearch(ToySpace(), seed=0), ToyEvaluator(),
                         journal=tmp_path / "cut.db", resume=True, **settings)
    assert journal_rows(tmp_path / "cut.db") == journal_rows(tmp_path / "whole.db")
    assert summary.evaluations == 20 and summary.replayed >= 1


def test_on_the_table_every_climb_ends_where_no_neighbour_is_better():
    space, accuracy = NASBench201Space(), benchmark_arrays("cifar10").accuracy
    table = load_table()
    algorithm = LocalSearch(space, seed=0)
    summary = run_search(algorithm, BenchmarkEvaluator("cifar10"), budget=300)
    assert summary.evaluations == 300 and summary.cached == 0   # nothing asked twice
    assert len(algorithm.local_optima) >= 2
    for genome, fitness in algorithm.local_optima:
        here = accuracy[table.index(genome)]
        assert all(accuracy[table.index(n)] <= here for n in space.neighbours(genome))


def test_on_the_table_it_reaches_the_global_optimum_of_the_search_signal():
    accuracy = benchmark_arrays("cifar10").accuracy
    algorithm = LocalSearch(NASBench201Space(), seed=0)
    run_search(algorithm, BenchmarkEvaluator("cifar10"), budget=3000)
    assert algorithm.best_result.accuracy == accuracy.max()
