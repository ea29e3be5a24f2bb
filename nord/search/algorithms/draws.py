"""IntegerDraws: numpy's integer draws, the same numbers, a few times cheaper one at a time.

IntegerDraws fetches the generator's 32-bit outputs in blocks and turns them into integers
the way numpy does, so a seeded algorithm proposes exactly the genomes it proposed with the
generator itself, and journals written either way resume alike::

    draws = IntegerDraws(np.random.default_rng(0))
    draws.integers(6)            # == int(np.random.default_rng(0).integers(6))
    draws.choice(10, 3)          # == Generator.choice(10, size=3, replace=False).tolist()
    draws.genome(space)          # == space.sample(rng), for a space that ``fits``
    draws.mutant(space, genome)  # == evolution.mutate_one(space, genome, draws), likewise

Every draw of the generator must then go through the same IntegerDraws.
Details (why, numpy's methods, the limits): docs/search.md.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from nord.errors import ConfigurationError
from nord.search.spaces.base import SearchSpace

__all__ = ["CHOICE_LIMIT", "IntegerDraws"]

CHOICE_LIMIT = 10_000
"""The largest population ``choice`` draws from (numpy samples larger ones another way)."""

_MASK = 0xFFFFFFFF
_RANGE = 1 << 32        # the most values one bounded draw covers
_BLOCK = 1024           # 32-bit outputs fetched at a time (each fetch costs a few us)


class IntegerDraws:
    """Integer draws from ``rng`` (a ``numpy.random.Generator``) that give the numbers its
    own methods give (see the module docstring).

    Args:
        rng: the generator; nothing else may draw from it afterwards.
    """

    __slots__ = ("rng", "_outputs")

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self._outputs: List[int] = []

    @staticmethod
    def fits(space) -> bool:
        """Whether ``genome`` draws what ``space.sample`` does: the space samples as every
        space does (it does not override ``sample``), and each gene is an integer with 1 to
        2**32 values."""
        if type(space).sample is not SearchSpace.sample or not all(space.integer_mask):
            return False
        return all(0 <= int(high) - int(low) < _RANGE
                   for low, high in zip(space.lower, space.upper))

    def _refill(self) -> List[int]:
        outputs = self._outputs = self.rng.integers(0, _RANGE, size=_BLOCK,
                                                    dtype=np.uint32).tolist()
        outputs.reverse()
        return outputs

    def below(self, count: int) -> int:
        """Uniform in ``0 .. count - 1`` (1 <= count <= 2**32); one value draws nothing."""
        if count <= 1:
            return 0
        scaled = (self._outputs or self._refill()).pop() * count
        if (scaled & _MASK) < count or count == _RANGE:
            return self._rest(scaled, count)
        return scaled >> 32

    def _rest(self, scaled: int, count: int) -> int:
        """``below(count)`` once its first output times ``count`` is ``scaled`` and that falls
        in the biased sliver (rejected as numpy does), or covers the whole range."""
        if count == _RANGE:
            return scaled >> 32
        threshold = (_MASK - count + 1) % count
        while (scaled & _MASK) < threshold:
            scaled = (self._outputs or self._refill()).pop() * count
        return scaled >> 32

    def integers(self, low: int, high: Optional[int] = None) -> int:
        """``int(rng.integers(low, high))``: uniform in ``low .. high - 1`` (``0 .. low - 1``
        with one argument)."""
        if high is None:
            low, high = 0, low
        count = high - low
        if not 0 < count <= _RANGE:
            raise ConfigurationError(
                f"IntegerDraws.integers needs low < high <= low + 2**32; got {low}, {high}")
        if count == 1:
            return low
        # below(count), its common case inline: one call fewer per draw
        scaled = (self._outputs or self._refill()).pop() * count
        if (scaled & _MASK) < count or count == _RANGE:
            return low + self._rest(scaled, count)
        return low + (scaled >> 32)

    def choice(self, population: int, size: int) -> List[int]:
        """``rng.choice(population, size, replace=False).tolist()``: ``size`` distinct
        integers below ``population`` (at most :data:`CHOICE_LIMIT`), in random order."""
        if not 0 <= size <= population <= CHOICE_LIMIT:
            raise ConfigurationError(
                f"IntegerDraws.choice needs 0 <= size <= population <= {CHOICE_LIMIT}; got "
                f"population={population}, size={size}")
        # below(count) inline (count <= CHOICE_LIMIT, so never the whole range): the draws
        # of a parent's tournament are most of an evolution's own time
        picks: List[int] = []
        outputs = self._outputs
        for top in range(population - size, population):
            if top:
                if not outputs:
                    outputs = self._refill()
                scaled = outputs.pop() * (top + 1)
                if (scaled & _MASK) > top:
                    value = scaled >> 32
                else:
                    value = self._rest(scaled, top + 1)
                    outputs = self._outputs
            else:
                value = 0
            picks.append(top if value in picks else value)
        for index in range(size - 1, 0, -1):
            count = index + 1
            if not outputs:
                outputs = self._refill()
            scaled = outputs.pop() * count
            if (scaled & _MASK) < count:
                other = self._rest(scaled, count)
                outputs = self._outputs
            else:
                other = scaled >> 32
            picks[index], picks[other] = picks[other], picks[index]
        return picks

    def mutant(self, space, genome) -> Tuple[int, ...]:
        """``mutate_one(space, genome, self)`` for a space that ``fits``: a mutable gene drawn
        uniformly, then one of its other values (the two draws inline)."""
        choices = space.mutable_dimensions()
        child = list(genome)
        if not choices:
            return tuple(child)
        count = len(choices)
        if count > 1:
            scaled = (self._outputs or self._refill()).pop() * count
            index = choices[scaled >> 32 if (scaled & _MASK) >= count
                            else self._rest(scaled, count)]
        else:
            index = choices[0]
        low = int(space.lower[index])
        count = int(space.upper[index]) - low   # high excluded: one value fewer than the range
        other = low
        if count > 1:
            scaled = (self._outputs or self._refill()).pop() * count
            other += (scaled >> 32 if (scaled & _MASK) >= count
                      else self._rest(scaled, count))
        value = int(child[index])
        child[index] = other + 1 if other >= value else other
        return tuple(child)

    def genome(self, space) -> Tuple[int, ...]:
        """``space.sample(rng)`` for a space that ``fits``: one uniform draw per gene, in
        order."""
        return tuple(int(low) + self.below(int(high) - int(low) + 1)
                     for low, high in zip(space.lower, space.upper))
