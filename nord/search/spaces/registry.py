"""Search spaces by name: the catalogue ``nord run --space`` and :func:`make_space` read.

    from nord.search.spaces import list_spaces, make_space, register_space
    list_spaces()                             # ['conv', 'nasbench201']
    space = make_space("conv", layers=3)
    register_space("mine", MySpace)           # a SearchSpace subclass, or its dotted path

Other packages add spaces through the ``nord.spaces`` entry-point group (see
:mod:`nord.registry`); NAS-Bench-201's space is found that way, registering itself.
"""
from __future__ import annotations

import inspect
from typing import Any, List, Optional, Sequence, Union

from nord.errors import ConfigurationError
from nord.registry import Registry
from nord.search.spaces.base import SearchSpace
from nord.search.spaces.conv import ConvSpace

__all__ = ["SPACES", "register_space", "list_spaces", "space_class", "space_parameters",
           "make_space"]

SPACES: Registry[Union[str, type]] = Registry(
    "search space",
    hint="Register yours with nord.search.spaces.register_space(name, cls) (for nord run: "
         "in a module given to --plugin, or an entry point of 'nord.spaces')",
    plugins="nord.spaces", base=SearchSpace)
"""Search space name -> its SearchSpace class (or the class's dotted import path)."""


def register_space(name: str, cls: Union[type, str, None] = None, *, aliases: Sequence[str] = (),
                   description: str = "", overwrite: bool = False):
    """Make the SearchSpace subclass ``cls`` (or its ``'module.Class'`` path, imported on first
    use) available to :func:`make_space` as ``name``; without ``cls``, a class decorator.
    Returns ``cls``; arguments and errors as :meth:`nord.registry.Registry.add`."""
    return SPACES.add(name, cls, aliases=aliases, description=description, overwrite=overwrite)



def list_spaces() -> List[str]:
    """Names of every registered search space, sorted (aliases not included)."""
    return SPACES.names()


def space_class(name: str) -> type:
    """The SearchSpace class registered as ``name`` or an alias (imports it).

    Raises:
        ConfigurationError: unknown name; the message lists the valid ones.
    """
    return SPACES.load(name)


def space_parameters(name: str) -> Optional[List[str]]:
    """The keyword parameters search space ``name`` takes: none for a space without a
    constructor of its own (as the SearchSpace example is written), None when it takes any
    (``**kwargs``)."""
    cls = space_class(name)
    if cls.__init__ is object.__init__:
        return []
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]   # not self
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return [p.name for p in parameters
            if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]


def make_space(name: str, /, **params: Any) -> SearchSpace:
    """A new search space ``name`` with its keyword parameters.

    Raises:
        ConfigurationError: unknown name, or a parameter the space does not take (the message
            lists those it takes).
    """
    cls = space_class(name)
    accepted = space_parameters(name)
    unknown = [] if accepted is None else sorted(set(params) - set(accepted))
    if unknown:
        raise ConfigurationError(
            f"search space '{SPACES.canonical(name)}' does not take {', '.join(unknown)}; its "
            f"parameters are {', '.join(accepted) or 'none'}")
    return cls(**params)


register_space("conv", ConvSpace, description="the NORD paper's chain of convolutions")
