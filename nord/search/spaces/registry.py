"""Search spaces by name: the catalogue ``nord run --space`` and :func:`make_space` read.

    from nord.search.spaces import SPACES, make_space
    SPACES.register("mine", MySpace)          # or a dotted path, imported on first use
    space = make_space("conv", layers=3)
"""
from __future__ import annotations

import importlib
import inspect
from typing import Any, Union

from nord.errors import ConfigurationError
from nord.registry import Registry
from nord.search.spaces.base import SearchSpace
from nord.search.spaces.conv import ConvSpace

__all__ = ["SPACES", "space_class", "make_space"]

SPACES: Registry[Union[str, type]] = Registry(
    "search space", hint="Register yours with nord.search.SPACES.register(name, cls)")
"""Search spaces by name: 'conv' (the paper's, :class:`ConvSpace`) and 'nasbench201'."""
SPACES.register("conv", ConvSpace, description="the NORD paper's chain of convolutions")
SPACES.register("nasbench201", "nord.benchmarks.nasbench201.space.NASBench201Space",
                aliases=("nas-bench-201", "nats-tss"),
                description="the NAS-Bench-201 cell (table look-ups, no training)")


def space_class(name: str) -> type:
    """The SearchSpace class registered as ``name`` (imports it)."""
    target = SPACES.get(name)
    if isinstance(target, str):
        module, _, attribute = target.rpartition(".")
        target = getattr(importlib.import_module(module), attribute)
    return target


def make_space(name: str, **params: Any) -> SearchSpace:
    """A new search space ``name`` with its keyword parameters.

    Raises:
        ConfigurationError: unknown name, or a parameter the space does not take (the message
            lists those it takes).
    """
    cls = space_class(name)
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ConfigurationError(
            f"search space '{SPACES.canonical(name)}' does not take {', '.join(unknown)}; its "
            f"parameters are {', '.join(accepted) or 'none'}")
    return cls(**params)
