"""The algorithm registry: search algorithms by name, for the command line and the journal.

    list_algorithms()          # ['genetic', 'pygmo', 'random', 'regularized_evolution']
    algorithm = make_algorithm('regularized_evolution', space, seed=0, population_size=20)
    register_algorithm('my_search', MySearch)      # a SearchAlgorithm subclass

Names are matched case-insensitively, with '-' read as '_'. The pygmo adapter is
registered without importing pygmo: pygmo is needed only when 'pygmo' is made.
"""
from __future__ import annotations

import inspect
from typing import Dict, List, Optional, Type

from nord.errors import ConfigurationError
from nord.search.algorithm import SearchAlgorithm
from nord.search.evolution import RegularizedEvolution
from nord.search.genetic import GeneticAlgorithm
from nord.search.pygmo_adapter import PygmoAlgorithm
from nord.search.random_search import RandomSearch
from nord.search.space import SearchSpace

_ALGORITHMS: Dict[str, Type[SearchAlgorithm]] = {}


def _key(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def register_algorithm(name: str, cls: Type[SearchAlgorithm],
                       overwrite: bool = False) -> Type[SearchAlgorithm]:
    """Make ``cls`` available to ``make_algorithm`` as ``name``; returns ``cls``.

    Raises:
        ConfigurationError: ``cls`` is not a SearchAlgorithm subclass, or the name is
            taken (pass ``overwrite=True`` to replace it).
    """
    if not (isinstance(cls, type) and issubclass(cls, SearchAlgorithm)):
        raise ConfigurationError(
            f"only SearchAlgorithm subclasses can be registered; got {cls!r} for {name!r}")
    if not isinstance(name, str) or not _key(name).isidentifier():
        raise ConfigurationError(
            f"an algorithm name must be an identifier such as 'my_search'; got {name!r}")
    key = _key(name)
    if key in _ALGORITHMS and _ALGORITHMS[key] is not cls and not overwrite:
        raise ConfigurationError(
            f"algorithm name '{key}' is already registered for {_ALGORITHMS[key].__name__}; "
            "choose another name or pass overwrite=True")
    _ALGORITHMS[key] = cls
    return cls


def list_algorithms() -> List[str]:
    """Names of every registered search algorithm, sorted."""
    return sorted(_ALGORITHMS)


def get_algorithm(name: str) -> Type[SearchAlgorithm]:
    """The class registered as ``name``.

    Raises:
        ConfigurationError: no algorithm has that name; the message lists the valid ones.
    """
    cls = _ALGORITHMS.get(_key(name)) if isinstance(name, str) else None
    if cls is None:
        raise ConfigurationError(
            f"unknown search algorithm {name!r}; valid algorithms are: "
            f"{', '.join(list_algorithms())}. Register yours with "
            "nord.search.registry.register_algorithm(name, cls)")
    return cls


def make_algorithm(name: str, space: SearchSpace, seed: Optional[int] = None,
                   **params) -> SearchAlgorithm:
    """A new algorithm ``name`` over ``space``, seeded, with its keyword parameters.

    Raises:
        ConfigurationError: unknown name, or a parameter the algorithm does not take (the
            message lists those it takes), or an invalid value.
    """
    cls = get_algorithm(name)
    signature = inspect.signature(cls.__init__)
    accepted = [p.name for p in signature.parameters.values()
                if p.name not in ("self", "space", "seed")
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    open_ended = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    unknown = sorted(set(params) - set(accepted))
    if unknown and not open_ended:
        raise ConfigurationError(
            f"search algorithm '{_key(name)}' ({cls.__name__}) does not take "
            f"{', '.join(unknown)}; its parameters are: {', '.join(accepted) or 'none'}")
    return cls(space, seed=seed, **params)


for _name, _cls in (("random", RandomSearch), ("regularized_evolution", RegularizedEvolution),
                    ("genetic", GeneticAlgorithm), ("pygmo", PygmoAlgorithm)):
    register_algorithm(_name, _cls)
