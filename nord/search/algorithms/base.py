"""SearchAlgorithm: the ask/tell interface every search algorithm implements.

Algorithms propose genomes and are told results; they never import MPI, and never know
who evaluates or where (that is the search loop's and the evaluator's business)::

    algorithm = RandomSearch(space, seed=0)
    while evaluations < budget:
        candidate = algorithm.ask()
        if candidate is None:       # waiting for outstanding results (a generation barrier)
            ...
        result = evaluator.descriptor_evaluate(space.to_descriptor(candidate.genome))
        algorithm.tell(candidate, result)

``ask`` and ``tell`` do the bookkeeping (numbering, best so far); subclasses implement
``_ask`` and ``_tell``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import numpy as np

from nord.checks import check_instance, check_seed
from nord.errors import ConfigurationError
from nord.evaluators.result import EvaluationResult
from nord.search.spaces.base import Genome, SearchSpace


@dataclass(slots=True)
class Candidate:
    """A genome proposed by an algorithm.

    Attributes:
        genome: the normalised genome.
        generation: the generation it belongs to (0 for algorithms without generations).
        number: its position in the order of ``ask`` calls, from 0.
    """

    genome: Genome
    generation: int = 0
    number: int = -1


def generational_budget(population_size: int, generations: int) -> int:
    """Evaluations of a generational run: the initial population, then ``generations``
    generations of ``population_size`` children (how pygmo's algorithms count)."""
    return population_size * (generations + 1)


def generations_within(budget: int, population_size: int) -> int:
    """Generations after the initial population so that at least ``budget`` candidates are
    proposed (at least one): the inverse of :func:`generational_budget`, rounded up."""
    return max(1, -(-budget // population_size) - 1)


NUMPY_SEEDS = (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)
"""numpy's seeding objects, which ``np.random.default_rng`` takes as a seed."""


def check_space_and_seed(space: Any, seed: Any) -> Tuple[SearchSpace, Any]:
    """``(space, seed)`` when the space is a SearchSpace and the seed an int in [0, 2**32 - 1],
    None, or numpy's own seeding (a Generator, which others may share, a BitGenerator or a
    SeedSequence): what every algorithm is made with.

    Raises:
        ConfigurationError: naming the parameter, what it takes and what was given.
    """
    check_instance(space, "space", SearchSpace, "a SearchSpace such as ConvSpace(input_shape="
                   "(1, 8, 8)) or make_space('nasbench201')")
    if isinstance(seed, NUMPY_SEEDS):
        return space, seed
    return space, check_seed(seed)


class SearchAlgorithm:
    """Base class: ask for candidates, tell results.

    ``ask`` and ``tell`` do the bookkeeping (numbering, the best so far); a new algorithm
    implements ``_ask`` (a Candidate, or None while it waits for results) and ``_tell``.
    Registered, it is known by name to :func:`~nord.search.algorithms.make_algorithm` and
    ``nord run --algorithm``::

        from nord.search.algorithms import (Candidate, SearchAlgorithm, make_algorithm,
                                            register_algorithm)

        @register_algorithm("uniform", description="uniformly random genomes")
        class Uniform(SearchAlgorithm):
            name = "uniform"

            def _ask(self):
                return Candidate(self.space.sample(self.rng))

            def _tell(self, candidate, result):
                pass                # nothing to learn: tell() keeps the best so far

        algorithm = make_algorithm("uniform", space, seed=0)
    """

    name = "algorithm"
    schedulers: Optional[Tuple[str, ...]] = None
    """The schedulers this algorithm can only run under (their registered names), or None: it
    runs with any scheduler or none. BOHB proposes the first candidates of Hyperband's
    brackets, so it needs a scheduler with brackets."""

    def __init__(self, space: SearchSpace, seed: Optional[int] = None):
        self.space, self.seed = check_space_and_seed(space, seed)
        self.rng = np.random.default_rng(seed)
        self.asked = 0
        self.told = 0
        self.best: Optional[Candidate] = None
        self.best_result: Optional[EvaluationResult] = None
        self._best_fitness = math.inf   # best_result's

    def ask(self) -> Optional[Candidate]:
        """The next candidate, or None while the algorithm waits for results."""
        candidate = self._ask()
        if candidate is None:
            return None
        candidate.genome = self.space.normalise(candidate.genome)
        candidate.number = self.asked
        self.asked += 1
        return candidate

    def tell(self, candidate: Candidate, result: EvaluationResult) -> None:
        """Report the result of a candidate that ``ask`` returned."""
        if not isinstance(result, EvaluationResult):
            raise ConfigurationError(
                f"tell() takes the candidate and its EvaluationResult; got "
                f"{type(result).__name__}: {result!r}")
        self.told += 1
        if result.status == "ok":
            fitness = result.fitness
            if fitness < self._best_fitness:
                self.best, self.best_result, self._best_fitness = candidate, result, fitness
        self._tell(candidate, result)

    @property
    def finished(self) -> bool:
        """True when the algorithm has nothing more to propose (most never finish)."""
        return False

    def parameters(self) -> Dict[str, Any]:
        """The algorithm's settings, stored in a run's journal."""
        return {"algorithm": self.name, "seed": self.seed}

    def _ask(self) -> Optional[Candidate]:
        raise NotImplementedError

    def _tell(self, candidate: Candidate, result: EvaluationResult) -> None:
        raise NotImplementedError

    @classmethod
    def check_scheduler(cls, scheduler: Optional[str]) -> None:
        """Refuse a run under ``scheduler`` (a registered name; None: no scheduler) that this
        algorithm cannot serve, before anything runs.

        Raises:
            ConfigurationError: a scheduler not in :attr:`schedulers`, naming the flag and
                what to give instead.
        """
        if cls.schedulers is None or scheduler in cls.schedulers:
            return
        given = "no --scheduler" if scheduler is None else f"--scheduler {scheduler}"
        raise ConfigurationError(
            f"the {cls.name} algorithm proposes the candidates that a scheduler's brackets "
            f"start with, so it runs only under --scheduler {' or '.join(cls.schedulers)}; got "
            f"{given}. Add e.g. --scheduler {cls.schedulers[0]} --min-epochs 1 --max-epochs 9 "
            "(for nord.search.run_search: scheduler=make_scheduler("
            f"'{cls.schedulers[0]}', min_epochs=1, max_epochs=9))")

    def close(self) -> None:
        """Release resources (threads of wrapped optimisers)."""


