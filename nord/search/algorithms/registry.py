"""The search algorithms by name, for ``nord run``, ``nord compare`` and the journal.

    list_algorithms()          # ['genetic', 'local_search', 'nsga2', ..., 'regularized_evolution']
    algorithm = make_algorithm('rea', space, seed=0)               # an alias
    algorithm = make_algorithm('pygmo-de', space, seed=0, budget=500)
    register_algorithm('my_search', MySearch, aliases=('mine',))  # a SearchAlgorithm subclass

Every name is accepted everywhere, with its aliases (``rea`` is ``regularized_evolution``,
``ga`` is ``genetic``, ``pygmo-sga`` is ``pygmo``), in any spelling (case, ``-`` and ``_`` do
not matter). An entry is a class with preset keyword arguments; pygmo's entries, whose runs
last a fixed number of generations, take as many generations as ``budget`` needs when
``generations`` is not given.

The pygmo and Optuna adapters are registered without importing pygmo or Optuna: each is
needed only when one of its algorithms is made. Other packages add algorithms through the
``nord.algorithms`` entry-point group (see :mod:`nord.registry`).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, List, Mapping, Optional, Sequence, Type

from nord.checks import MAX_BUDGET, check_int
from nord.errors import ConfigurationError
from nord.registry import Registry
from nord.search.algorithms.bananas import Bananas
from nord.search.algorithms.base import (SearchAlgorithm, check_space_and_seed,
                                         generations_within)
from nord.search.algorithms.bohb import BOHB
from nord.search.algorithms.evolution import RegularizedEvolution
from nord.search.algorithms.genetic import GeneticAlgorithm
from nord.search.algorithms.local_search import LocalSearch
from nord.search.algorithms.optuna_adapter import CMAES, TPE, GaussianProcessBO
from nord.search.algorithms.pygmo_adapter import PygmoAlgorithm
from nord.search.algorithms.random_search import ASHASearch, HyperbandSearch, RandomSearch
from nord.search.algorithms.reinforce import Reinforce
from nord.search.spaces.base import SearchSpace

__all__ = ["ALGORITHMS", "AlgorithmSpec", "register_algorithm", "list_algorithms",
           "get_algorithm", "make_algorithm", "algorithm_parameters"]


@dataclass(frozen=True)
class AlgorithmSpec:
    """How a registered name makes an algorithm.

    Attributes:
        cls: the SearchAlgorithm subclass.
        preset: keyword arguments given before the caller's (which override them).
        generations_from_budget: fill ``generations`` from the run's budget when the caller
            gives none (algorithms that run a fixed number of generations).
    """

    cls: Type[SearchAlgorithm]
    preset: Mapping[str, Any] = field(default_factory=dict)
    generations_from_budget: bool = False


ALGORITHMS: Registry[AlgorithmSpec] = Registry(
    "search algorithm",
    hint="Register yours with nord.search.algorithms.register_algorithm(name, cls) (for nord "
         "run: in a module given to --plugin, or an entry point of 'nord.algorithms')",
    plugins="nord.algorithms", adopt=lambda name, cls: register_algorithm(name, cls),
    base=SearchAlgorithm)


def register_algorithm(name: str, cls: Optional[Type[SearchAlgorithm]] = None, *,
                       aliases: Sequence[str] = (), description: str = "",
                       preset: Optional[Mapping[str, Any]] = None,
                       generations_from_budget: bool = False, overwrite: bool = False):
    """Make the SearchAlgorithm subclass ``cls`` available to :func:`make_algorithm` as
    ``name``; without ``cls``, a class decorator (``@register_algorithm("mine")``).

    ``preset`` (keyword arguments applied before the caller's) and ``generations_from_budget``
    are those of :class:`AlgorithmSpec`. A class that does not set its own ``name`` (a subclass
    of ``RegularizedEvolution`` registered as ``'my_rea'``) is given ``name``: the journal,
    ``nord list``, ``nord serve`` and the report know its runs by the name they were asked for
    by, not by its parent's. Returns ``cls``; the other arguments and the errors are
    :meth:`nord.registry.Registry.add`'s.
    """
    def wrap(target):   # after the subclass check (a dotted path is named when it loads)
        if not isinstance(target, str) and "name" not in vars(target):
            target.name = name
        return AlgorithmSpec(target, dict(preset or {}), generations_from_budget)
    return ALGORITHMS.add(name, cls, aliases=aliases, description=description,
                          overwrite=overwrite, wrap=wrap)



def list_algorithms() -> List[str]:
    """Names of every registered search algorithm, sorted (aliases not included)."""
    return ALGORITHMS.names()


def get_algorithm(name: str) -> Type[SearchAlgorithm]:
    """The class registered as ``name`` or an alias of it.

    Raises:
        ConfigurationError: no algorithm has that name; the message lists the valid ones.
    """
    return ALGORITHMS.get(name).cls


def algorithm_parameters(name: str) -> List[str]:
    """The keyword arguments the algorithm ``name`` takes (besides space and seed)."""
    signature = inspect.signature(ALGORITHMS.get(name).cls.__init__)
    return [p.name for p in signature.parameters.values()
            if p.name not in ("self", "space", "seed")
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def make_algorithm(name: str, space: SearchSpace, seed: Optional[int] = None,
                   budget: Optional[int] = None, **params) -> SearchAlgorithm:
    """A new algorithm ``name`` over ``space``, seeded, with its keyword parameters.

    Args:
        name: a registered name or alias.
        space: the search space.
        seed: seeds the algorithm.
        budget: the run's evaluations, for algorithms that size their generations by it.
        **params: the algorithm's keyword arguments (they override the entry's preset).

    Raises:
        ConfigurationError: unknown name, a ``space`` that is not a SearchSpace, a ``seed``
            or ``budget`` that is not a whole number in range, a parameter the algorithm does
            not take (the message lists those it takes), or an invalid value.
    """
    entry = ALGORITHMS.entry(name)
    spec = entry.value
    # before the algorithm is made: constructors read the space before the base class checks it
    space, seed = check_space_and_seed(space, seed)
    if budget is not None:
        check_int(budget, "budget (the run's evaluations)", 1, MAX_BUDGET,
                  rule="an integer >= 1 or None")
    signature = inspect.signature(spec.cls.__init__)
    accepted = algorithm_parameters(entry.name)
    open_ended = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    unknown = sorted(set(params) - set(accepted))
    if unknown and not open_ended:
        raise ConfigurationError(
            f"search algorithm '{entry.name}' ({spec.cls.__name__}) does not take "
            f"{', '.join(unknown)}; its parameters are: {', '.join(accepted) or 'none'}")
    kwargs = {**spec.preset, **params}
    if spec.generations_from_budget and "generations" not in kwargs and budget is not None:
        population = kwargs.get("population_size",
                                signature.parameters["population_size"].default)
        kwargs["generations"] = generations_within(budget, population)
    return spec.cls(space, seed=seed, **kwargs)


for _name, _cls, _aliases, _description, _preset, _sized in (
        ("random", RandomSearch, ("random_search",),
         "random search: uniformly random genomes", {}, False),
        ("regularized_evolution", RegularizedEvolution, ("rea",),
         "regularized (aging) evolution: population 10, sample 3, one-gene mutation", {}, False),
        ("local_search", LocalSearch, ("ls", "hill_climbing"),
         "local search: best-improvement hill climbing over the genomes one gene away, "
         "restarting from a random genome at a local optimum", {}, False),
        ("reinforce", Reinforce, ("rl",),
         "REINFORCE: one softmax per gene, Adam at learning rate 0.01, a moving-average "
         "reward baseline of momentum 0.9 (NATS-Bench's settings)", {}, False),
        ("bohb", BOHB, (),
         "BOHB: TPE-like kernel densities propose the candidates of Hyperband's brackets "
         "(it runs only under the hyperband or sha scheduler); 4 samples, no random share, "
         "bandwidth factor 3 (the NAS-Bench-201 paper's settings)", {}, False),
        ("asha", ASHASearch, (),
         "ASHA: random proposals trained as far as the asha scheduler promotes them (it runs "
         "only under it, asynchronously)", {}, False),
        ("hyperband", HyperbandSearch, (),
         "Hyperband: random proposals in the brackets of the hyperband scheduler (it runs "
         "only under the hyperband or sha scheduler)", {}, False),
        ("bananas", Bananas, (),
         "BANANAS: an ensemble of 5 MLPs (10 layers of width 20) on path encodings picks 10 "
         "genomes per fit from 100 mutations of the best by independent Thompson sampling, "
         "after 10 random ones", {}, False),
        ("genetic", GeneticAlgorithm, ("ga",),
         "nord's genetic algorithm: generational, population 10, single-point crossover 0.9, "
         "per-gene mutation 0.2, tournaments of 2, 1 elite", {}, False),
        ("pygmo", PygmoAlgorithm, ("pygmo-sga", "sga"),
         "pygmo's sga: crossover 0.9, per-gene uniform mutation 0.2, population 10 (the NORD "
         "paper's setting)", {}, True),
        ("pygmo-gaco", PygmoAlgorithm, (),
         "pygmo's gaco (extended ant colony), population 10, kernel 10",
         {"algorithm": "gaco", "ker": 10}, True),
        ("pygmo-pso", PygmoAlgorithm, (),
         "pygmo's pso_gen (generational particle swarm), population 10",
         {"algorithm": "pso_gen"}, True),
        ("pygmo-de", PygmoAlgorithm, (),
         "pygmo's de (differential evolution), population 10", {"algorithm": "de"}, True),
        ("nsga2", PygmoAlgorithm, ("pygmo-nsga2",),
         "pygmo's nsga2 on (1 - accuracy, parameters), population 20",
         {"algorithm": "nsga2", "population_size": 20, "objectives": 2}, True),
        ("tpe", TPE, (),
         "Optuna's TPE: multivariate, 10 random proposals first", {}, False),
        ("gp-bo", GaussianProcessBO, ("gp", "bayesopt"),
         "Optuna's Gaussian-process BO (log expected improvement), 10 random proposals "
         "first; costly per proposal", {}, False),
        ("cmaes", CMAES, (),
         "Optuna's CMA-ES (also cma-es), for spaces of ordered genes only; needs cmaes",
         {}, False)):
    register_algorithm(_name, _cls, aliases=_aliases, description=_description, preset=_preset,
                       generations_from_budget=_sized)
