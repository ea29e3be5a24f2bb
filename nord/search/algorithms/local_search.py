"""LocalSearch: best-improvement hill climbing with random restarts.

    algorithm = LocalSearch(NASBench201Space(), seed=0)
    candidate = algorithm.ask()          # None while a neighbourhood's results are out
    algorithm.tell(candidate, result)
    algorithm.local_optima               # (genome, fitness) where each climb ended
    algorithm.path                       # every genome a climb stood on, in order

The local search of White, Nolen and Savani, "Exploring the loss landscape in neural
architecture search", UAI 2021. Details (climbs, steps, repeats): docs/search.md.
"""
from __future__ import annotations

import math
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Set, Tuple

from nord.checks import check_int
from nord.evaluators.result import EvaluationResult
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.spaces.base import Genome, SearchSpace

__all__ = ["LocalSearch"]


class LocalSearch(SearchAlgorithm):
    """Best-improvement hill climbing over ``space.neighbours``, restarting at local optima.

    Args:
        space: the search space; it must define neighbours (any space of integer genes
            does: genomes one gene apart).
        seed: seeds the starting genomes and the order neighbours are asked in; the same
            seed and the same results give the same candidates.
        starts: random genomes evaluated to start each climb, which starts from the best of
            them (default 1: from a random genome).

    Raises:
        SearchSpaceError: the space has no notion of neighbours (a real-valued gene).

    Candidates are labelled with the climb's step as their generation: each start and each
    neighbourhood is one generation.
    """

    name = "local_search"

    def __init__(self, space: SearchSpace, seed: Optional[int] = None, starts: int = 1):
        space.check_neighbourhood()
        super().__init__(space, seed)
        self.starts = check_int(starts, "starts (random genomes that start each climb)", 1)
        self.local_optima: List[Tuple[Genome, float]] = []
        """Where each finished climb stopped: (genome, fitness), in order."""
        self.path: List[Genome] = []
        """Every genome the climbs stood on, in order: each start, then each move."""
        self._fitness: Dict[Genome, float] = {}       # every genome told, with its fitness
        self._queue: Deque[Genome] = deque()          # this step's genomes not yet asked
        self._outstanding: Set[Genome] = set()        # asked, not yet told
        self._current: Optional[Genome] = None        # the climb's position (fitness known)
        self._starts: List[Genome] = []               # a climb's random starts, until told
        self._step = -1
        self._exhausted = False
        self._size = _space_size(space)

    @property
    def current(self) -> Optional[Genome]:
        """The genome the current climb stands on (None before its start is told)."""
        return self._current

    @property
    def climbs(self) -> int:
        """Climbs started so far."""
        return len(self.local_optima) + (self._current is not None or bool(self._starts))

    @property
    def finished(self) -> bool:
        """True once every genome of the space has been evaluated."""
        return self._exhausted

    def _ask(self) -> Optional[Candidate]:
        if self._step < 0:
            self._advance()
        if not self._queue:
            return None   # this step's results are still out
        genome = self._queue.popleft()
        self._outstanding.add(genome)
        return Candidate(genome, generation=self._step)

    def _tell(self, candidate: Candidate, result: EvaluationResult) -> None:
        genome = tuple(candidate.genome)
        self._outstanding.discard(genome)
        self._fitness.setdefault(genome, result.fitness)
        if not self._outstanding and not self._queue:
            self._advance()

    # --- the climb ----------------------------------------------------------------------
    def _advance(self) -> None:
        """Take steps until one has genomes to ask (or the space is exhausted): a step
        whose neighbours are all known is decided at once, without asking anything."""
        while not self._queue and not self._exhausted:
            if self._starts:
                # the best start; of equal ones, the first drawn
                self._current = min(self._starts, key=self._fitness.__getitem__)
                self._starts = []
                self.path.append(self._current)
            elif self._current is not None:
                better = self._best_neighbour(self._current)
                if better is None:
                    self.local_optima.append((self._current, self._fitness[self._current]))
                    self._current = None
                else:
                    self._current = better
                    self.path.append(better)
            if self._current is None:
                self._restart()
            else:
                untried = [g for g in self.space.neighbours(self._current)
                           if g not in self._fitness]
                if untried:
                    self._begin_step([untried[i] for i in self.rng.permutation(len(untried))])

    def _best_neighbour(self, genome: Genome) -> Optional[Genome]:
        """The best neighbour if it is strictly better than ``genome``, else None."""
        best, best_fitness = None, self._fitness[genome]
        for neighbour in self.space.neighbours(genome):
            fitness = self._fitness[neighbour]
            if fitness < best_fitness:
                best, best_fitness = neighbour, fitness
        return best

    def _restart(self) -> None:
        """A new climb from random genomes not evaluated yet (none left: finished)."""
        room = self._size - len(self._fitness)
        if room <= 0:
            self._exhausted = True
            return
        while len(self._starts) < min(self.starts, room):
            genome = self.space.normalise(self.space.sample(self.rng))
            if genome not in self._fitness and genome not in self._starts:
                self._starts.append(genome)
        self._begin_step(list(self._starts))

    def _begin_step(self, genomes: List[Genome]) -> None:
        self._step += 1
        self._queue.extend(genomes)

    def parameters(self) -> Dict[str, Any]:
        return {**super().parameters(), "starts": self.starts}


def _space_size(space: SearchSpace) -> float:
    """Genomes in an integer space (inf for a space with its own, unsized neighbourhood)."""
    if not all(space.integer_mask):
        return math.inf
    return math.prod(int(high) - int(low) + 1 for low, high in zip(space.lower, space.upper))
