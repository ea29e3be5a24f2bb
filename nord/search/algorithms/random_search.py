"""RandomSearch: uniform samples of the space, the baseline every search must beat.

    algorithm = RandomSearch(space, seed=0)
    candidate = algorithm.ask()          # never None: random search never waits
    algorithm.tell(candidate, result)    # results change nothing but the best so far
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from nord.checks import check_int
from nord.evaluators.result import EvaluationResult
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.spaces.base import Genome, SearchSpace

_BLOCK = 64   # genomes drawn at a time


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
        if generation_size is not None:
            generation_size = check_int(generation_size, "generation_size (or None)", 1)
        super().__init__(space, seed)
        self.generation_size = generation_size
        self._drawn: List[Genome] = []

    def parameters(self) -> Dict[str, Any]:
        return {**super().parameters(), "generation_size": self.generation_size}

    def _ask(self) -> Optional[Candidate]:
        generation = self.asked // self.generation_size if self.generation_size else 0
        if not self._drawn:
            # genomes drawn ahead in blocks are the ones drawn one at a time (sample_many),
            # so a seed gives the same run; one call to the generator per block is faster
            self._drawn = self.space.sample_many(self.rng, _BLOCK)[::-1]
        return Candidate(self._drawn.pop(), generation)

    def _tell(self, candidate: Candidate, result: EvaluationResult) -> None:
        """Nothing to learn: the base class keeps the best so far."""


class ASHASearch(RandomSearch):
    """ASHA as a search method (Li et al., 2020): random proposals, each trained as far as
    the ``asha`` scheduler promotes it. Only the scheduler differs from random search."""

    name = "asha"
    schedulers = ("asha",)


class HyperbandSearch(RandomSearch):
    """Hyperband as a search method (Li et al., 2018): random proposals in the brackets of the
    ``hyperband`` scheduler (synchronous brackets, or promoted asynchronously as in ASHA), or
    of one bracket of successive halving."""

    name = "hyperband"
    schedulers = ("hyperband", "sha")
