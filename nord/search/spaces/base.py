"""SearchSpace: maps a genome (a vector of bounded numbers) to a NeuralDescriptor.

A new space is a few lines: bounds (inclusive), and a ``decode``::

    class WidthDepth(SearchSpace):
        lower, upper = (1, 1), (64, 4)
        def decode(self, genome):
            width, depth = genome
            d = NeuralDescriptor()
            for _ in range(depth):
                d.add_layer_sequential('conv2d', {'out_channels': width, 'kernel_size': 3})
                d.add_layer_sequential('relu')
            return d

Details (integer genes, ``identify``, ``neighbours``): docs/search.md.
"""
from __future__ import annotations

from typing import Dict, Hashable, List, Optional, Sequence, Tuple, Union

import numpy as np

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import SearchSpaceError

Genome = Tuple[Union[int, float], ...]

KNOWN_NORMAL_CAP = 1 << 16
"""Normal genomes remembered per pair of bounds, so that checking them again is one look-up."""

KNOWN_NORMAL_SPACES = 64
"""Pairs of bounds whose normal genomes are remembered (spaces built with fresh bounds
each time stop being remembered past it)."""

_KNOWN_NORMAL: Dict[Tuple[int, int], Tuple[tuple, tuple, Dict[tuple, tuple]]] = {}


class SearchSpace:
    """Base class of search spaces: bounds, sampling, rounding, decoding.

    A new space gives inclusive bounds and a ``decode``. Registered, it is known by name to
    :func:`~nord.search.spaces.make_space` and ``nord run --space``::

        from nord.architecture import NeuralDescriptor
        from nord.search.spaces import SearchSpace, make_space, register_space

        @register_space("width-depth", description="convolutions of one width, repeated")
        class WidthDepth(SearchSpace):
            lower, upper = (1, 1), (64, 4)

            def decode(self, genome):
                width, depth = genome
                descriptor = NeuralDescriptor()
                for _ in range(depth):
                    descriptor.add_layer_sequential("conv2d", {"out_channels": width,
                                                               "kernel_size": 3})
                    descriptor.add_layer_sequential("relu")
                return descriptor

        space = make_space("width-depth")
    """

    lower: Sequence[float] = ()
    upper: Sequence[float] = ()
    integer: Union[bool, Sequence[bool]] = True
    """True (every dimension is an integer), False, or one flag per dimension."""
    categorical: Union[bool, Sequence[bool]] = False
    """Whether an integer gene's values are unordered choices (an edge's operation: 2 is no
    nearer to 3 than to 0) rather than ordered numbers (a channel count): True for every
    integer gene, False (the default: numbers), or one flag per dimension. Models that
    treat a gene as a number (Gaussian processes, CMA-ES) read it."""

    @property
    def dimension(self) -> int:
        return len(self.lower)

    @property
    def integer_mask(self) -> Tuple[bool, ...]:
        if isinstance(self.integer, bool):
            return (self.integer,) * self.dimension
        return tuple(bool(flag) for flag in self.integer)

    @property
    def categorical_mask(self) -> Tuple[bool, ...]:
        """One flag per dimension: True where the gene is an unordered choice.

        Raises:
            SearchSpaceError: ``categorical`` flags a real-valued gene, or has the wrong length.
        """
        integer = self.integer_mask
        if isinstance(self.categorical, bool):
            return tuple(self.categorical and flag for flag in integer)
        flags = tuple(bool(flag) for flag in self.categorical)
        if len(flags) != len(integer):
            raise SearchSpaceError(
                f"{type(self).__name__}.categorical has {len(flags)} flags for "
                f"{len(integer)} genes; give one per gene, or True/False for all")
        real = [index for index, (flag, is_int) in enumerate(zip(flags, integer))
                if flag and not is_int]
        if real:
            raise SearchSpaceError(
                f"{type(self).__name__}.categorical flags real-valued genes (positions "
                f"{real}); only integer genes can be unordered choices")
        return flags

    def bounds(self) -> Tuple[Tuple[float, ...], Tuple[float, ...]]:
        return tuple(self.lower), tuple(self.upper)

    def sample(self, rng: Optional[np.random.Generator] = None) -> Genome:
        """A uniformly random genome (one draw per dimension, in order)."""
        rng = rng if rng is not None else np.random.default_rng()
        bounds = self._integer_bounds()
        if bounds is not None:  # one call draws the same numbers as one call per dimension
            same = self.__dict__["_bounds_cache"][3]
            if same is not None:   # equal bounds: scalars draw the same numbers, sooner
                return tuple(rng.integers(same[0], same[1], size=same[2]).tolist())
            return tuple(rng.integers(*bounds).tolist())
        genome = []
        for low, high, is_int in zip(self.lower, self.upper, self.integer_mask):
            genome.append(int(rng.integers(low, high + 1)) if is_int else float(rng.uniform(low, high)))
        return tuple(genome)

    def sample_many(self, rng: np.random.Generator, count: int) -> List[Genome]:
        """``count`` genomes, the same ones ``count`` calls of :meth:`sample` would draw in
        turn (one call to the generator when every dimension is an integer)."""
        bounds = self._integer_bounds()
        if bounds is None:
            return [self.sample(rng) for _ in range(count)]
        same = self.__dict__["_bounds_cache"][3]
        if same is not None:
            drawn = rng.integers(same[0], same[1], size=(count, same[2]))
        else:
            drawn = rng.integers(bounds[0], bounds[1], size=(count, self.dimension))
        return [tuple(row) for row in drawn.tolist()]

    def _integer_bounds(self) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        """``(lower, upper + 1)`` as arrays when every dimension is an integer, else None."""
        cached = self.__dict__.get("_bounds_cache")
        if cached is None or cached[0] is not self.lower or cached[1] is not self.upper:
            arrays = same = None
            if all(self.integer_mask) and self.dimension:
                arrays = (np.asarray(self.lower, dtype=np.int64),
                          np.asarray(self.upper, dtype=np.int64) + 1)
                if len(set(arrays[0].tolist())) == 1 and len(set(arrays[1].tolist())) == 1:
                    same = (int(arrays[0][0]), int(arrays[1][0]), self.dimension)
            cached = self.__dict__["_bounds_cache"] = (self.lower, self.upper, arrays, same)
        return cached[2]

    def _known_normal(self) -> Optional[Dict[Genome, Genome]]:
        """Genomes already found normal, each its own normal form, for a space of integer
        genes with tuple bounds (None otherwise), shared by the spaces with the same bounds
        (instances of one space class).

        A value equal to an integer (``2.0``, ``np.int64(2)``, ``True``) normalises to that
        integer, and equal values hash alike, so a look-up returns exactly what the full
        check would; a list or an array is unhashable and takes the full check."""
        lower, upper = self.lower, self.upper
        if (self.integer is not True or lower.__class__ is not tuple
                or upper.__class__ is not tuple):
            return None
        cached = _KNOWN_NORMAL.get((id(lower), id(upper)))
        if cached is None:
            if len(_KNOWN_NORMAL) >= KNOWN_NORMAL_SPACES:
                return None
            # the entry holds the bounds, so that their ids are not reused while it lives
            cached = _KNOWN_NORMAL[(id(lower), id(upper))] = (lower, upper, {})
        return cached[2]

    def mutable_dimensions(self) -> Tuple[int, ...]:
        """Indices of the dimensions that can take more than one value."""
        lower, upper = self.lower, self.upper
        cached = self.__dict__.get("_mutable_cache")
        if (cached is None or cached[0] is not lower or cached[1] is not upper
                or lower.__class__ is not tuple or upper.__class__ is not tuple):
            dimensions = tuple(index for index, (low, high) in enumerate(zip(lower, upper))
                               if high > low)
            cached = self.__dict__["_mutable_cache"] = (lower, upper, dimensions)
        return cached[2]

    def normalise(self, genome: Sequence[float]) -> Genome:
        """Round integer dimensions and check the bounds.

        Raises:
            SearchSpaceError: wrong length, non-finite value, or a value out of bounds.
        """
        if len(genome) != self.dimension:
            raise SearchSpaceError(
                f"{type(self).__name__} genomes have {self.dimension} values; got "
                f"{len(genome)}: {list(genome)}")
        known = self._known_normal()
        if known is not None:
            try:
                return known[genome]
            except (KeyError, TypeError):   # not seen yet, or a list or array
                pass
        if self._integer_bounds() is not None and all(
                value.__class__ is int and low <= value <= high
                for value, low, high in zip(genome, self.lower, self.upper)):
            normal = tuple(genome)   # already normal: the common case, made cheap
            if known is not None and len(known) < KNOWN_NORMAL_CAP:
                known[normal] = normal
            return normal
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

    def identify(self, genome: Sequence[float]) -> Tuple[Hashable, Optional[NeuralDescriptor]]:
        """The architecture's exact identity and, when finding it decoded the genome, the
        descriptor (so that it is not decoded twice).

        Raises:
            NordError: the genome does not decode (the engine records a failed candidate).
        """
        descriptor = self.to_descriptor(genome)
        return descriptor.hash, descriptor

    def neighbours(self, genome: Sequence[float]) -> Tuple[Genome, ...]:
        """The genomes one step from ``genome``: each integer gene, in order, changed to each
        other value of its bounds, in increasing order.

        Raises:
            SearchSpaceError: the space has a real-valued gene, where one step means nothing.
        """
        self.check_neighbourhood()
        genome = self.normalise(genome)
        steps = []
        for index, (low, high) in enumerate(zip(self.lower, self.upper)):
            for value in range(int(low), int(high) + 1):
                if value != genome[index]:
                    steps.append(genome[:index] + (value,) + genome[index + 1:])
        return tuple(steps)

    def check_neighbourhood(self) -> None:
        """Refuse, with the reason, a space whose genomes have no neighbours (see
        ``neighbours``)."""
        if type(self).neighbours is SearchSpace.neighbours and not all(self.integer_mask):
            real = [index for index, flag in enumerate(self.integer_mask) if not flag]
            raise SearchSpaceError(
                f"{type(self).__name__} has real-valued genes (positions {real}), so its genomes "
                "have no neighbours one gene away, which local search needs; use local search "
                "on a space of integer genes, or override SearchSpace.neighbours(genome)")

    def describe(self) -> dict:
        """Parameters of the space, stored in a run's journal."""
        return {"space": type(self).__name__, "lower": list(self.lower),
                "upper": list(self.upper), "integer": list(self.integer_mask)}
