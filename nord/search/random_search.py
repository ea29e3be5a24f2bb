"""RandomSearch: uniform samples of the space, the baseline every search must beat.

    algorithm = RandomSearch(space, seed=0)
    candidate = algorithm.ask()          # never None: random search never waits
    algorithm.tell(candidate, result)    # results change nothing but the best so far
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from nord.errors import ConfigurationError
from nord.evaluators.result import EvaluationResult
from nord.search.algorithm import Candidate, SearchAlgorithm
from nord.search.space import SearchSpace


class RandomSearch(SearchAlgorithm):
    """Independent, uniformly random genomes.

    Args:
        space: the search space.
        seed: seeds the samples; the same seed gives the same sequence.
        generation_size: random search has no generations; when set, candidate ``n`` is
            labelled generation ``n // generation_size``, so that reports can compare it
            per generation with a generational algorithm of that population size.
            None (default) labels every candidate generation 0.
    """

    name = "random"

    def __init__(self, space: SearchSpace, seed: Optional[int] = None,
                 generation_size: Optional[int] = None):
        if generation_size is not None and (not isinstance(generation_size, int)
                                            or generation_size < 1):
            raise ConfigurationError(
                f"generation_size must be a positive integer or None; got {generation_size!r}")
        super().__init__(space, seed)
        self.generation_size = generation_size

    def parameters(self) -> Dict[str, Any]:
        return {**super().parameters(), "generation_size": self.generation_size}

    def _ask(self) -> Optional[Candidate]:
        generation = self.asked // self.generation_size if self.generation_size else 0
        return Candidate(self.space.sample(self.rng), generation=generation)

    def _tell(self, candidate: Candidate, result: EvaluationResult) -> None:
        """Nothing to learn: the base class keeps the best so far."""
