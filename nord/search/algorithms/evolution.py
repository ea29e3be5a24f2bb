"""RegularizedEvolution: aging evolution (Real et al., 2019), a strong NAS baseline.

    algorithm = RegularizedEvolution(space, seed=0, population_size=10, sample_size=3)
    candidate = algorithm.ask()          # never None: it never waits for results
    algorithm.tell(candidate, result)

Details (parents, children, aging, asynchronous loops): docs/search.md.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Deque, Dict, List, NamedTuple, Optional, Sequence, Union

import numpy as np

from nord.checks import check_int
from nord.errors import ConfigurationError
from nord.evaluators.result import EvaluationResult
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.algorithms.draws import CHOICE_LIMIT, IntegerDraws
from nord.search.spaces.base import Genome, SearchSpace


SAMPLE_SIZE = 3
"""Members drawn to choose each parent where the caller gives no ``sample_size``."""


class Member(NamedTuple):
    """A told candidate in a population: its number, genome and fitness (lower is better)."""

    number: int
    genome: Genome
    fitness: float


_new_tuple = tuple.__new__


def mutable_dimensions(space: SearchSpace) -> List[int]:
    """Indices of the dimensions that can take more than one value."""
    return list(space.mutable_dimensions())


def mutate_value(space: SearchSpace, index: int, value: Union[int, float],
                 rng: Union[np.random.Generator, IntegerDraws]) -> Union[int, float]:
    """A different value for dimension ``index``.

    Integer dimensions: uniformly one of the other integers in the bounds. Float
    dimensions: a fresh uniform value in the bounds (different with probability one).
    A dimension with a single value is returned unchanged. ``rng``: a generator, or
    :class:`~nord.search.algorithms.draws.IntegerDraws` (integer dimensions only).
    """
    low, high = space.lower[index], space.upper[index]
    if high <= low:
        return value
    integer = space.integer
    if integer if integer.__class__ is bool else space.integer_mask[index]:
        low, high, value = int(low), int(high), int(value)
        other = int(rng.integers(low, high))   # high excluded: one value fewer than the range
        return other + 1 if other >= value else other
    return float(rng.uniform(low, high))


def mutate_one(space: SearchSpace, genome: Sequence[Union[int, float]],
               rng: Union[np.random.Generator, IntegerDraws]) -> Genome:
    """The genome with exactly one gene, chosen uniformly among the mutable ones, changed."""
    choices = space.mutable_dimensions()
    child = list(genome)
    if choices:
        index = choices[int(rng.integers(len(choices)))]
        child[index] = mutate_value(space, index, child[index], rng)
    return tuple(child)


class RegularizedEvolution(SearchAlgorithm):
    """Aging (regularized) evolution with tournament-of-a-sample parent selection.

    Args:
        space: the search space.
        seed: seeds sampling, parent choice and mutation; the same seed and the same
            results told in the same order give the same candidates.
        population_size: members kept (and random candidates at the start).
        sample_size: members drawn to choose each parent; 1 <= sample_size <= population_size
            (None: 3).
        initial_population: genomes asked first, in order, in place of as many random ones
            (at most ``population_size``): a warm start, e.g. the cells a zero-cost proxy
            ranks best (Abdelfattah et al., "Zero-Cost Proxies for Lightweight NAS", ICLR
            2021). They are evaluated and told like any candidate.

    Candidates are labelled generation ``number // population_size``: the random
    population is generation 0, and each following block of ``population_size`` children
    counts as one generation in reports. Every draw comes from ``self.rng`` (through
    :class:`~nord.search.algorithms.draws.IntegerDraws` where that gives the same numbers); a different
    stream is given through ``seed``, not by replacing ``rng``.
    """

    name = "regularized_evolution"

    def __init__(self, space: SearchSpace, seed: Optional[int] = None,
                 population_size: int = 10, sample_size: Optional[int] = None,
                 initial_population: Sequence[Sequence[Union[int, float]]] = ()):
        population_size = check_int(population_size, "population_size", 1)
        if sample_size is None:
            if population_size < SAMPLE_SIZE:   # speak of what was set, not of the default
                raise ConfigurationError(
                    f"population_size (--population) must be at least {SAMPLE_SIZE} with the "
                    f"default sample_size={SAMPLE_SIZE} (each parent is the best of "
                    f"{SAMPLE_SIZE} members drawn from the population); got {population_size}. "
                    f"Give a population_size of {SAMPLE_SIZE} or more, or a sample_size of at "
                    f"most {population_size} with it")
            sample_size = SAMPLE_SIZE
        sample_size = check_int(sample_size, "sample_size", 1, population_size,
                                rule=f"an integer in [1, population_size={population_size}]")
        if len(initial_population) > population_size:
            raise ConfigurationError(
                f"initial_population holds {len(initial_population)} genomes, more than "
                f"population_size={population_size}; give at most {population_size}, or a "
                "larger population_size")
        initial = tuple(space.normalise(genome) for genome in initial_population)
        super().__init__(space, seed)
        self.initial_population = initial
        self.population_size = population_size
        self.sample_size = sample_size
        self._population: Deque[Member] = deque()
        self._random_asked = 0
        self._draws = self._integer_draws(seed)

    def _integer_draws(self, seed) -> Optional[IntegerDraws]:
        """IntegerDraws over ``self.rng`` (single draws were half of the algorithm's time on a
        table) where it gives the very numbers the generator's methods give: the generator is
        this algorithm's own (not a Generator passed as ``seed`` and shared), nothing else draws
        from it (a subclass that changes how candidates are asked or told might), the space's
        genes fit (:meth:`IntegerDraws.fits`) and the population is one ``choice`` serves.
        Otherwise None: the generator's methods are called."""
        own_generator = seed is None or isinstance(seed, (int, np.integer))
        own_draws = all(getattr(type(self), name) is getattr(RegularizedEvolution, name)
                        for name in ("_ask", "_tell", "_select_parent"))
        if (own_generator and own_draws and self.population_size <= CHOICE_LIMIT
                and IntegerDraws.fits(self.space)):
            return IntegerDraws(self.rng)
        return None

    @property
    def population(self) -> List[Member]:
        """The current population, oldest first."""
        return list(self._population)

    def parameters(self) -> Dict[str, Any]:
        parameters = {**super().parameters(), "population_size": self.population_size,
                      "sample_size": self.sample_size}
        if self.initial_population:
            parameters["initial_population"] = [list(g) for g in self.initial_population]
        return parameters

    def _ask(self) -> Optional[Candidate]:
        generation = self.asked // self.population_size
        if self._random_asked < self.population_size or not self._population:
            self._random_asked += 1
            if self._random_asked <= len(self.initial_population):
                return Candidate(self.initial_population[self._random_asked - 1], generation)
            genome = (self.space.sample(self.rng) if self._draws is None
                else self._draws.genome(self.space))
            return Candidate(genome, generation)
        parent = self._select_parent()
        if self._draws is None:
            return Candidate(mutate_one(self.space, parent.genome, self.rng), generation)
        return Candidate(self._draws.mutant(self.space, parent.genome), generation)

    def _tell(self, candidate: Candidate, result: EvaluationResult) -> None:
        population = self._population
        # Member(...) without the Python frame of a named tuple's __new__
        population.append(_new_tuple(Member, (candidate.number, tuple(candidate.genome),
                                              result.fitness)))
        if len(population) > self.population_size:
            population.popleft()

    def _select_parent(self) -> Member:
        members = self._population
        count = len(members)
        size = self.sample_size if self.sample_size < count else count
        if self._draws is None:
            picks = self.rng.choice(count, size=size, replace=False).tolist()
        else:
            picks = self._draws.choice(count, size)
        # the first of equal fitnesses in draw order wins: ties go to chance, not age
        best = members[picks[0]]
        for index in picks[1:]:
            member = members[index]
            if member.fitness < best.fitness:
                best = member
        return best
