"""SearchSpace: maps a genome (a vector of bounded numbers) to a NeuralDescriptor.

A new space is a few lines: bounds, and a ``decode``::

    class WidthDepth(SearchSpace):
        lower = (1, 1)
        upper = (64, 4)

        def decode(self, genome):
            width, depth = genome
            d = NeuralDescriptor()
            for _ in range(depth):
                d.add_layer_sequential('conv2d', {'out_channels': width, 'kernel_size': 3})
                d.add_layer_sequential('relu')
            return d

Bounds are inclusive. Integer dimensions (all of them unless ``integer`` says otherwise)
are rounded before decoding, so real-valued optimisers such as pygmo's can search them.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

import numpy as np

from nord.descriptors import NeuralDescriptor
from nord.errors import SearchSpaceError

Genome = Tuple[Union[int, float], ...]


class SearchSpace:
    """Base class of search spaces: bounds, sampling, rounding, decoding."""

    lower: Sequence[float] = ()
    upper: Sequence[float] = ()
    integer: Union[bool, Sequence[bool]] = True
    """True (every dimension is an integer), False, or one flag per dimension."""

    @property
    def dimension(self) -> int:
        return len(self.lower)

    @property
    def integer_mask(self) -> Tuple[bool, ...]:
        if isinstance(self.integer, bool):
            return (self.integer,) * self.dimension
        return tuple(bool(flag) for flag in self.integer)

    def bounds(self) -> Tuple[Tuple[float, ...], Tuple[float, ...]]:
        return tuple(self.lower), tuple(self.upper)

    def sample(self, rng: Optional[np.random.Generator] = None) -> Genome:
        """A uniformly random genome."""
        rng = rng if rng is not None else np.random.default_rng()
        genome = []
        for low, high, is_int in zip(self.lower, self.upper, self.integer_mask):
            genome.append(int(rng.integers(low, high + 1)) if is_int else float(rng.uniform(low, high)))
        return tuple(genome)

    def normalise(self, genome: Sequence[float]) -> Genome:
        """Round integer dimensions and check the bounds.

        Raises:
            SearchSpaceError: wrong length, non-finite value, or a value out of bounds.
        """
        if len(genome) != self.dimension:
            raise SearchSpaceError(
                f"{type(self).__name__} genomes have {self.dimension} values; got "
                f"{len(genome)}: {list(genome)}")
        values = []
        for index, (value, low, high, is_int) in enumerate(
                zip(genome, self.lower, self.upper, self.integer_mask)):
            value = float(value)
            if not np.isfinite(value):
                raise SearchSpaceError(f"genome value {index} is not finite: {list(genome)}")
            value = int(round(value)) if is_int else value
            if not low <= value <= high:
                raise SearchSpaceError(
                    f"genome value {index} = {value} is outside its bounds [{low}, {high}] "
                    f"in {type(self).__name__}; clip it with space.clip(genome)")
            values.append(value)
        return tuple(values)

    def clip(self, genome: Sequence[float]) -> Genome:
        """Move each value into its bounds, then normalise."""
        clipped = [min(max(float(v), low), high) for v, low, high in zip(genome, self.lower, self.upper)]
        return self.normalise(clipped)

    def decode(self, genome: Genome) -> NeuralDescriptor:
        """The descriptor of a normalised genome. Subclasses implement this."""
        raise NotImplementedError(f"{type(self).__name__} must implement decode(genome)")

    def to_descriptor(self, genome: Sequence[float]) -> NeuralDescriptor:
        """Normalise, then decode."""
        return self.decode(self.normalise(genome))

    def describe(self) -> dict:
        """Parameters of the space, stored in a run's journal."""
        return {"space": type(self).__name__, "lower": list(self.lower),
                "upper": list(self.upper), "integer": list(self.integer_mask)}
