"""Search spaces: genomes and the architectures they decode to (:class:`SearchSpace`), the
paper's :class:`ConvSpace`, and the catalogue by name (:func:`make_space`,
:func:`register_space`).

    from nord.search.spaces import ConvSpace
    space = ConvSpace(input_shape=(1, 8, 8))
    descriptor = space.to_descriptor(space.sample(rng))
"""
from nord.search.spaces.base import Genome, SearchSpace
from nord.search.spaces.conv import ConvSpace
from nord.search.spaces.registry import (SPACES, list_spaces, make_space, register_space,
                                         space_class)

__all__ = ["Genome", "SearchSpace", "ConvSpace", "SPACES", "make_space", "space_class",
           "list_spaces", "register_space"]
