"""GeneticAlgorithm: nord's own seeded genetic algorithm, generational or steady state.

Generational (the default, as in the paper's distributed experiment)::

    algorithm = GeneticAlgorithm(space, seed=0, population_size=10)
    candidate = algorithm.ask()      # None while the generation's results are outstanding
    algorithm.tell(candidate, result)

``steady_state=True`` is for asynchronous loops: ``ask`` breeds one child at once (never None).
Details (breeding, the steady state, failures, defaults): docs/search.md.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from nord.checks import check_int
from nord.errors import ConfigurationError
from nord.evaluators.result import EvaluationResult
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.algorithms.evolution import Member, mutate_value
from nord.search.spaces.base import Genome, SearchSpace

CROSSOVERS = ("single_point", "uniform")
SELECTIONS = ("tournament", "roulette")
ELITISM = 1
"""Best members carried into each generation where the caller gives no ``elitism``."""


def roulette_probabilities(fitnesses: Sequence[float]) -> np.ndarray:
    """Selection probabilities proportional to accuracy (``1 - fitness``), never NaN.

    Failed members (fitness 2.0) and anything not finite get weight 0. When no member has
    positive weight, every member is equally likely.
    """
    fitness = np.asarray(fitnesses, dtype=float)
    weights = np.where(np.isfinite(fitness), np.clip(1.0 - fitness, 0.0, 1.0), 0.0)
    total = weights.sum()
    if not np.isfinite(total) or total <= 0:
        return np.full(len(fitness), 1.0 / len(fitness))
    return weights / total


class GeneticAlgorithm(SearchAlgorithm):
    """A genetic algorithm over the genomes of a search space.

    Args:
        space: the search space.
        seed: seeds every random choice; the same seed and the same results give the
            same candidates.
        population_size: individuals per generation (steady state: kept in the population).
        crossover_probability: chance that a child is made from two parents rather than
            copied from one (default 0.9, the paper's setting).
        mutation_probability: chance of each gene of a child to be changed (default 0.2,
            the paper's setting).
        crossover: 'single_point' (a cut point uniformly in 1..dimension-1; the original
            nord GA's operator; a one-gene genome is copied) or 'uniform' (each gene from
            either parent with probability 1/2).
        selection: 'tournament' (the best of ``tournament_size`` members drawn uniformly
            with replacement) or 'roulette' (probability proportional to accuracy).
        tournament_size: members per tournament (2, as pygmo's sga).
        elitism: generational mode: best members carried into the next generation
            unchanged, 0 <= elitism < population_size (None: 1). Steady state ignores it (replacing
            the worst member is elitist already).
        steady_state: breed one child per ``ask`` without a generation barrier.
    """

    name = "genetic"

    def __init__(self, space: SearchSpace, seed: Optional[int] = None,
                 population_size: int = 10, crossover_probability: float = 0.9,
                 mutation_probability: float = 0.2, crossover: str = "single_point",
                 selection: str = "tournament", tournament_size: int = 2,
                 elitism: Optional[int] = None, steady_state: bool = False):
        population_size = check_int(population_size, "population_size", 1)
        if elitism is None:
            if population_size <= ELITISM:   # speak of what was set, not of the default
                raise ConfigurationError(
                    f"population_size (--population) must be at least {ELITISM + 1} with the "
                    f"default elitism={ELITISM} ({ELITISM} best member carried into each "
                    f"generation, beside at least one child); got {population_size}. Give a "
                    f"population_size of {ELITISM + 1} or more, or elitism=0 with it")
            elitism = ELITISM
        for label, value in (("crossover_probability", crossover_probability),
                             ("mutation_probability", mutation_probability)):
            if not 0.0 <= float(value) <= 1.0:
                raise ConfigurationError(f"{label} must be in [0, 1]; got {value!r}")
        if crossover not in CROSSOVERS:
            raise ConfigurationError(f"crossover must be one of {CROSSOVERS}; got {crossover!r}")
        if selection not in SELECTIONS:
            raise ConfigurationError(f"selection must be one of {SELECTIONS}; got {selection!r}")
        tournament_size = check_int(tournament_size, "tournament_size", 1)
        elitism = check_int(elitism, "elitism", 0, population_size - 1,
                            rule=f"an integer in [0, population_size - 1 = {population_size - 1}]"
                                 " (at least one child per generation)")
        super().__init__(space, seed)
        self.population_size = population_size
        self.crossover_probability = float(crossover_probability)
        self.mutation_probability = float(mutation_probability)
        self.crossover = crossover
        self.selection = selection
        self.tournament_size = tournament_size
        self.elitism = elitism
        self.steady_state = bool(steady_state)
        self.generation = 0
        self._members: Dict[int, Member] = {}       # number -> member, current population
        self._to_ask: List[Genome] = []
        self._outstanding: Dict[int, Genome] = {}   # number -> genome, asked and not told
        self._random_asked = 0

    @property
    def population(self) -> List[Member]:
        """Current members: generational mode, the generation being evaluated (elites and
        children told so far), by number; steady state, the population in order of arrival."""
        return list(self._members.values()) if self.steady_state else self._ordered_members()

    @property
    def outstanding(self) -> int:
        """Candidates handed out and not yet told."""
        return len(self._outstanding)

    def parameters(self) -> Dict[str, Any]:
        return {**super().parameters(), "population_size": self.population_size,
                "crossover_probability": self.crossover_probability,
                "mutation_probability": self.mutation_probability, "crossover": self.crossover,
                "selection": self.selection, "tournament_size": self.tournament_size,
                "elitism": self.elitism, "steady_state": self.steady_state}

    # --- ask/tell ---------------------------------------------------------------------
    def _ask(self) -> Optional[Candidate]:
        if self.steady_state:
            genome = self._steady_state_genome()
            self.generation = self.asked // self.population_size
        else:
            if self._random_asked == 0:
                self._random_asked = self.population_size
                self._to_ask = [self.space.sample(self.rng) for _ in range(self.population_size)]
            if not self._to_ask:
                if self._outstanding:
                    return None                     # the generation barrier
                self._next_generation()
            genome = self._to_ask.pop(0)
        self._outstanding[self.asked] = genome
        return Candidate(genome, generation=self.generation)

    def _tell(self, candidate: Candidate, result: EvaluationResult) -> None:
        if self._outstanding.pop(candidate.number, None) is None:
            raise ConfigurationError(
                f"candidate number {candidate.number} was not handed out by this "
                f"{type(self).__name__}, or was told already; tell each asked candidate once")
        self._members[candidate.number] = Member(candidate.number, tuple(candidate.genome),
                                                 result.fitness)
        if self.steady_state and len(self._members) > self.population_size:
            worst = None
            for member in self._members.values():   # arrival order: ties drop the oldest
                if worst is None or member.fitness > worst.fitness:
                    worst = member
            del self._members[worst.number]

    # --- breeding ---------------------------------------------------------------------
    def _steady_state_genome(self) -> Genome:
        if self._random_asked < self.population_size or not self._members:
            self._random_asked += 1
            return self.space.sample(self.rng)
        return self._breed(list(self._members.values()))

    def _next_generation(self) -> None:
        parents = self._ordered_members()
        elites = sorted(parents, key=lambda m: (m.fitness, m.number))[:self.elitism]
        self._to_ask = [self._breed(parents) for _ in range(self.population_size - self.elitism)]
        self._members = {member.number: member for member in elites}
        self.generation += 1

    def _ordered_members(self) -> List[Member]:
        return [self._members[number] for number in sorted(self._members)]

    def _breed(self, parents: List[Member]) -> Genome:
        first = self._select(parents)
        if self.rng.random() < self.crossover_probability:
            child = self._cross(first.genome, self._select(parents).genome)
        else:
            child = list(first.genome)
        for index, draw in enumerate(self.rng.random(len(child))):
            if draw < self.mutation_probability:
                child[index] = mutate_value(self.space, index, child[index], self.rng)
        return tuple(child)

    def _select(self, members: List[Member]) -> Member:
        if self.selection == "roulette":
            probabilities = roulette_probabilities([m.fitness for m in members])
            return members[int(self.rng.choice(len(members), p=probabilities))]
        drawn = self.rng.integers(0, len(members), size=self.tournament_size)
        return min((members[int(i)] for i in drawn), key=lambda m: m.fitness)

    def _cross(self, first: Sequence, second: Sequence) -> list:
        if self.crossover == "uniform":
            take_second = self.rng.random(len(first)) < 0.5
            return [b if swap else a for a, b, swap in zip(first, second, take_second)]
        if len(first) < 2:
            return list(first)
        cut = int(self.rng.integers(1, len(first)))
        return list(first[:cut]) + list(second[cut:])
