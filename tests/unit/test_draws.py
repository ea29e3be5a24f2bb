"""IntegerDraws gives numpy's own numbers, so a seeded algorithm that uses it proposes what it
proposed with the generator itself (and journals written before it resume)."""
import random

import numpy as np
import pytest

from nord.benchmarks.nasbench201 import NASBench201Space
from nord.errors import ConfigurationError
from nord.evaluators.result import EvaluationResult
from nord.search.algorithms.draws import IntegerDraws
from nord.search.algorithms.evolution import RegularizedEvolution, mutate_one
from nord.search.spaces.base import SearchSpace

pytestmark = pytest.mark.timeout(120)


class Uneven(SearchSpace):
    """Integer genes of different ranges, one of them fixed, one of two values."""

    lower = (0, 3, -2, 0, 1)
    upper = (9, 3, 40, 1, 70_000)


class Mixed(SearchSpace):
    lower = (0, 0.0)
    upper = (5, 1.0)
    integer = (True, False)


# ranges that draw once, reject often (close to 2**32 / 2), or take a whole 32-bit output
COUNTS = (1, 2, 3, 5, 6, 10, 17, 1000, 2**31 + 5, 3_000_000_000, 2**32 - 1, 2**32)


@pytest.mark.parametrize("seed", range(40))
def test_every_kind_of_draw_gives_the_generators_numbers_in_any_interleaving(seed):
    numpy_rng, draws = np.random.default_rng(seed), IntegerDraws(np.random.default_rng(seed))
    plan = random.Random(seed)
    for _ in range(400):
        kind = plan.randrange(5)
        if kind == 0:
            count = plan.choice(COUNTS)
            assert draws.integers(count) == int(numpy_rng.integers(count))
        elif kind == 1:
            low = plan.randrange(-50, 50)
            high = low + plan.choice(COUNTS)
            assert draws.integers(low, high) == int(numpy_rng.integers(low, high))
        elif kind == 2:
            population = plan.randrange(1, 60)
            size = plan.randrange(0, population + 1)
            assert (draws.choice(population, size) ==
                numpy_rng.choice(population, size=size, replace=False).tolist())
        elif kind == 3:
            assert draws.genome(Uneven()) == Uneven().sample(numpy_rng)
        else:
            assert draws.genome(NASBench201Space()) == NASBench201Space().sample(numpy_rng)


def test_choice_of_the_largest_population_it_serves_matches_numpy():
    numpy_rng, draws = np.random.default_rng(7), IntegerDraws(np.random.default_rng(7))
    for size in (1, 3, 50, 10_000):
        assert (draws.choice(10_000, size) ==
            numpy_rng.choice(10_000, size=size, replace=False).tolist())


def test_draws_are_uniform():
    draws = IntegerDraws(np.random.default_rng(3))
    counts = np.bincount([draws.integers(6) for _ in range(60_000)], minlength=6)
    assert counts.min() > 9_500 and counts.max() < 10_500
    firsts = np.bincount([draws.choice(10, 3)[0] for _ in range(30_000)], minlength=10)
    assert firsts.min() > 2_700 and firsts.max() < 3_300


def test_out_of_range_requests_are_refused_with_the_rule():
    draws = IntegerDraws(np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="low < high <= low \\+ 2\\*\\*32; got 5, 5"):
        draws.integers(5, 5)
    with pytest.raises(ConfigurationError, match="2\\*\\*32"):
        draws.integers(0, 2**32 + 1)
    with pytest.raises(ConfigurationError, match="population <= 10000; got population=10001"):
        draws.choice(10_001, 2)
    with pytest.raises(ConfigurationError, match="size=4"):
        draws.choice(3, 4)


class EvenSum(Uneven):
    """A space that samples in its own way: genomes whose genes sum to an even number."""

    def sample(self, rng=None):
        while True:
            genome = super().sample(rng)
            if sum(genome) % 2 == 0:
                return genome


def test_fits_only_spaces_that_sample_as_every_space_does_with_integer_genes_within_32_bits():
    class Wide(SearchSpace):
        lower, upper = (0,), (2**32,)

    class Inverted(SearchSpace):
        lower, upper = (3,), (2,)

    assert IntegerDraws.fits(NASBench201Space()) and IntegerDraws.fits(Uneven())
    assert not IntegerDraws.fits(Mixed()) and not IntegerDraws.fits(Wide())
    assert not IntegerDraws.fits(Inverted()) and not IntegerDraws.fits(EvenSum())


class OneGene(SearchSpace):
    """One gene that can change (the other is fixed): a mutation draws only its value."""

    lower = (0, 2)
    upper = (5, 2)


@pytest.mark.parametrize("space", [Uneven(), OneGene(), NASBench201Space()])
def test_mutation_through_draws_is_mutation_through_the_generator(space):
    numpy_rng = np.random.default_rng(11)
    draws, inline = IntegerDraws(np.random.default_rng(11)), IntegerDraws(np.random.default_rng(11))
    genome = space.sample(np.random.default_rng(0))
    for _ in range(2_000):
        expected = mutate_one(space, genome, numpy_rng)
        assert mutate_one(space, genome, draws) == expected
        assert inline.mutant(space, genome) == expected
        genome = expected


def _reference_choice(draws, population, size):
    """numpy's choice without replacement, one ``below`` at a time."""
    picks = []
    for top in range(population - size, population):
        value = draws.below(top + 1)
        picks.append(top if value in picks else value)
    for index in range(size - 1, 0, -1):
        other = draws.below(index + 1)
        picks[index], picks[other] = picks[other], picks[index]
    return picks


def test_inline_draws_reject_what_below_rejects():
    """An output of 0 falls in the rejected sliver of every range that is not a power of two;
    the inline draws of ``choice`` and ``mutant`` must reject it as ``below`` does."""
    plan = random.Random(5)
    for _ in range(300):
        outputs = [0 if plan.random() < 0.4 else plan.randrange(2**32) for _ in range(40)]
        first, second = (IntegerDraws(np.random.default_rng(0)) for _ in range(2))
        first._outputs, second._outputs = list(outputs), list(outputs)
        assert first.choice(10, 3) == _reference_choice(second, 10, 3)
        assert first.mutant(Uneven(), (4, 3, 0, 1, 9)) == mutate_one(Uneven(), (4, 3, 0, 1, 9),
                                                                     second)
        assert first._outputs == second._outputs


def _proposals(space, seed, population, sample, use_draws, steps=600,
               algorithm_class=RegularizedEvolution):
    """Genomes REA proposes, told a result that depends on the genome only (so both runs are
    told the same), asking ahead of results like an asynchronous run with 4 workers."""
    algorithm = algorithm_class(space, seed=seed, population_size=population,
                                sample_size=sample)
    assert (algorithm._draws is not None) is use_draws
    outcome = random.Random(seed)
    proposed, outstanding = [], []
    for _ in range(steps):
        while len(outstanding) < 4:
            candidate = algorithm.ask()
            proposed.append(candidate.genome)
            outstanding.append(candidate)
        candidate = outstanding.pop(outcome.randrange(len(outstanding)))
        score = (hash(candidate.genome) % 1000) / 1000
        result = (EvaluationResult.failure("too slow") if score < 0.05 else
            EvaluationResult(accuracy=score))
        algorithm.tell(candidate, result)
    return proposed


@pytest.mark.parametrize("space, population, sample", [
    (NASBench201Space(), 10, 3), (NASBench201Space(), 25, 25), (Uneven(), 7, 2),
    (Uneven(), 1, 1)])
def test_regularized_evolution_proposes_what_it_proposed_with_the_generator(space, population,
                                                                             sample):
    for seed in range(5):
        with_draws = _proposals(space, seed, population, sample, use_draws=True)
        assert with_draws == _proposals(space, seed, population, sample, use_draws=False,
                                        algorithm_class=GeneratorOnly)
        assert len(set(with_draws)) > population   # children, not only the random start


class GeneratorOnly(RegularizedEvolution):
    """REA as it was before IntegerDraws: every draw a call to the generator."""

    def _integer_draws(self, seed):
        return None


class TellsItsOwnWay(RegularizedEvolution):
    """A subclass that draws from the generator itself when told."""

    def _tell(self, candidate, result):
        if self.rng.random() < 0.5:
            super()._tell(candidate, result)


def test_where_the_numbers_could_differ_the_generator_is_called():
    def draws(algorithm_class=RegularizedEvolution, space=NASBench201Space(), seed=0,
              population=10):
        return algorithm_class(space, seed=seed, population_size=population)._draws

    assert draws() is not None and draws(seed=None) is not None
    assert draws(seed=np.random.default_rng(0)) is None      # a generator others may share
    assert draws(TellsItsOwnWay) is None and draws(space=Mixed()) is None
    assert draws(space=EvenSum()) is None
    assert draws(population=10_001) is None and draws(population=10_000) is not None


def test_a_space_that_samples_its_own_way_is_sampled_its_own_way():
    proposed = _proposals(EvenSum(), 0, 6, 2, use_draws=False, steps=40)
    assert all(sum(genome) % 2 == 0 for genome in proposed[:6])

