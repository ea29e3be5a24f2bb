"""pygmo in nord: any pygmo algorithm, asked for genomes and told results like nord's own.

    algorithm = PygmoAlgorithm(space, seed=0)        # the paper: sga, cr 0.9, m 0.2, 10 x 10
    summary = run_search(algorithm, evaluator, budget=algorithm.evaluations)

    PygmoAlgorithm(space, 'nsga2', population_size=12, objectives=2, seed=0)  # accuracy vs size
    PygmoAlgorithm(space, 'nsga2', objectives=2, second_objective='latency_ms')  # vs a metric

pygmo runs in a background daemon thread that stops at ``close()``; no islands are used.
Details (the thread, batch evaluation, early checks): docs/search.md.
"""
from __future__ import annotations

import copy
import logging
import queue
import threading
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nord.checks import check_int
from nord.errors import ConfigurationError, MissingDependencyError, NordError
from nord.evaluators.result import FAILED_FITNESS, EvaluationResult
from nord.search.algorithms.base import Candidate, SearchAlgorithm, generational_budget
from nord.search.spaces.base import Genome, SearchSpace

logger = logging.getLogger(__name__)

FAILED_N_PARAMS = 1e12
"""Second objective of a failed candidate in two-objective problems: worse than any real
parameter count, so a network that did not train never sits on the Pareto front (its
``n_params`` of 0 would otherwise make it look ideal). Finite, as pygmo needs."""

SGA_DEFAULTS = {"cr": 0.9, "m": 0.2, "mutation": "uniform"}
"""The paper's sga settings, applied when ``algorithm='sga'`` unless overridden: crossover
0.9, per-gene uniform mutation with probability 0.2 (pygmo's other sga defaults:
exponential crossover, tournaments of 2)."""


def import_pygmo():
    """Import pygmo, or say how to install it."""
    try:
        import pygmo
    except ImportError as error:
        raise MissingDependencyError(
            "pygmo is needed for nord's pygmo adapters but is not installed; install it with "
            "`pip install pygmo` (or `pip install nord[pygmo]`), or use one of nord's own "
            "algorithms ('genetic', 'regularized_evolution', 'random')") from error
    return pygmo


# --- the problem ---------------------------------------------------------------------------
class PygmoProblem:
    """A pygmo user-defined problem over a nord search space.

    pygmo wants integer dimensions last, so the problem's decision vector lists the space's
    float dimensions first, then its integer ones (``order``); ``to_genome`` maps back,
    moves values into bounds and rounds integers, so algorithms that treat integers as
    reals (cmaes, pso) work too.

    Args:
        space: the search space.
        evaluate: ``[genome, ...] -> [EvaluationResult, ...]``, called by ``fitness`` (with one
            genome) and ``batch_fitness``.
        objectives: 1 minimises ``result.fitness`` (``1 - accuracy``, 2.0 when failed);
            2 minimises ``[result.fitness, second]`` (``FAILED_N_PARAMS`` when failed).
        second_objective: what ``second`` is: ``'n_params'`` (the default: the parameter
            count) or the name of a value in ``result.metrics`` (e.g. ``'latency_ms'``).

    pygmo deep-copies problems; a copy shares ``evaluate`` instead of duplicating it.
    """

    def __init__(self, space: SearchSpace,
                 evaluate: Callable[[List[Genome]], List[EvaluationResult]],
                 objectives: int = 1, second_objective: str = "n_params"):
        if objectives not in (1, 2):
            raise ConfigurationError(
                f"objectives must be 1 (1 - accuracy) or 2 (1 - accuracy, parameters); "
                f"got {objectives!r}")
        self.space = space
        self.evaluate = evaluate
        self.objectives = objectives
        self.second_objective = _check_second_objective(second_objective)
        mask = space.integer_mask
        self.order: Tuple[int, ...] = tuple([i for i, flag in enumerate(mask) if not flag]
                                            + [i for i, flag in enumerate(mask) if flag])

    # pygmo's problem interface
    def get_bounds(self) -> Tuple[List[float], List[float]]:
        lower, upper = self.space.bounds()
        return ([float(lower[i]) for i in self.order], [float(upper[i]) for i in self.order])

    def get_nix(self) -> int:
        return int(sum(self.space.integer_mask))

    def get_nobj(self) -> int:
        return self.objectives

    def get_name(self) -> str:
        return f"nord {type(self.space).__name__}"

    def fitness(self, x) -> List[float]:
        return self.objective_values(self._evaluate([self.to_genome(x)])[0])

    def batch_fitness(self, dvs) -> np.ndarray:
        vectors = np.asarray(dvs, dtype=float).reshape(-1, self.space.dimension)
        results = self._evaluate([self.to_genome(x) for x in vectors])
        return np.asarray([self.objective_values(r) for r in results], dtype=float).ravel()

    def __deepcopy__(self, memo):
        return copy.copy(self)

    # conversions
    def to_genome(self, x: Sequence[float]) -> Genome:
        """The space's genome of a pygmo decision vector (into bounds, integers rounded)."""
        values: List[float] = [0.0] * self.space.dimension
        for position, index in enumerate(self.order):
            values[index] = float(x[position])
        return self.space.clip(values)

    def to_vector(self, genome: Sequence[float]) -> List[float]:
        """The pygmo decision vector of a genome."""
        return [float(genome[index]) for index in self.order]

    def objective_values(self, result: EvaluationResult) -> List[float]:
        """What pygmo minimises for a result."""
        if not isinstance(result, EvaluationResult):
            raise ConfigurationError(
                f"an evaluation must return an EvaluationResult; got {type(result).__name__}")
        if self.objectives == 1:
            return [result.fitness]
        if not result.ok or result.fitness >= FAILED_FITNESS:
            return [result.fitness, FAILED_N_PARAMS]
        if self.second_objective == "n_params":
            return [result.fitness, float(result.n_params)]
        value = result.metrics.get(self.second_objective)
        if value is None:
            raise ConfigurationError(
                f"the second objective {self.second_objective!r} is not among the metrics of a "
                f"result ({', '.join(sorted(result.metrics)) or 'none'}); use an evaluator that "
                "reports it (for NAS-Bench-201 latencies, nord.comparisons.hardware."
                "LatencyEvaluator), or second_objective='n_params'")
        return [result.fitness, float(value)]

    def _evaluate(self, genomes: List[Genome]) -> List[EvaluationResult]:
        results = list(self.evaluate(genomes))
        if len(results) != len(genomes):
            raise ConfigurationError(
                f"a batch evaluation returned {len(results)} results for {len(genomes)} genomes")
        return results


# --- the ask/tell algorithm ----------------------------------------------------------------
class _Stopped(Exception):
    """Raised inside pygmo's thread to unwind ``evolve`` when the algorithm is closed."""


_STOP = object()


class _Exchange:
    """The two queues between pygmo's thread and the thread calling ask/tell."""

    def __init__(self):
        self.requests: "queue.Queue" = queue.Queue()  # ('batch', gen, genomes) | ('done', pop) | ('error', exc) | ('stopped', None)
        self.replies: "queue.Queue" = queue.Queue()   # [EvaluationResult, ...] | _STOP
        self.stopping = threading.Event()
        self.generation = 0

    def evaluate(self, genomes: List[Genome]) -> List[EvaluationResult]:
        """Called in pygmo's thread: hand the genomes out, block until all are told."""
        if self.stopping.is_set():
            raise _Stopped()
        self.requests.put(("batch", self.generation, list(genomes)))
        reply = self.replies.get()
        if reply is _STOP:
            raise _Stopped()
        return reply

    def stop(self) -> None:
        self.stopping.set()
        self.replies.put(_STOP)


def _shutdown(exchange: _Exchange, holder: List[Optional[threading.Thread]]) -> None:
    """Stop pygmo's thread (for close(), garbage collection and interpreter exit)."""
    exchange.stop()
    thread = holder[0]
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout=10)
        if thread.is_alive():
            logger.warning("pygmo's thread did not stop within 10 s; it is a daemon and is left")


def _check_second_objective(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise ConfigurationError(
            "second_objective must be 'n_params' or the name of a value in the results' "
            f"metrics, e.g. 'latency_ms'; got {name!r}")
    return name


def _run_pygmo(exchange: _Exchange, space: SearchSpace, make_algorithm: Callable,
               population_size: int, generations: int, objectives: int,
               population_seed: Optional[int], second_objective: str = "n_params") -> None:
    """Body of pygmo's thread: build the population, evolve one generation at a time."""
    try:
        pygmo = import_pygmo()
        algorithm, uses_bfe = make_algorithm()
        problem = pygmo.problem(PygmoProblem(space, exchange.evaluate, objectives,
                                             second_objective))
        bfe = pygmo.bfe(pygmo.member_bfe()) if uses_bfe else None
        exchange.generation = 0
        population = pygmo.population(problem, population_size, b=bfe, seed=population_seed)
        for generation in range(1, generations + 1):
            exchange.generation = generation
            population = algorithm.evolve(population)
        exchange.requests.put(("done", population))
    except BaseException as error:  # noqa: BLE001 - every outcome must reach ask()
        if exchange.stopping.is_set():
            exchange.requests.put(("stopped", None))
        else:
            exchange.requests.put(("error", error))


class PygmoAlgorithm(SearchAlgorithm):
    """Any pygmo algorithm, asked for genomes and told results like nord's own.

    Args:
        space: the search space.
        algorithm: a pygmo algorithm's name ('sga', 'nsga2', 'cmaes', 'pso_gen', ...),
            built with ``gen=1`` and ``algo_kwargs`` (and ``memory=True`` where it takes
            one, so that its adaptive state carries over between the one-generation
            calls); or a pygmo UDA instance (``pygmo.nsga2(gen=1)``) or
            ``pygmo.algorithm``, which must then evolve one generation per call.
        population_size: individuals in pygmo's population.
        generations: calls of ``evolve`` after the initial population; the search is
            ``finished`` after the last.
        seed: seeds the initial population and (through ``set_seed``) the algorithm,
            also one passed as an instance; None lets pygmo choose.
        objectives: 1 (``1 - accuracy``) or 2 (``1 - accuracy`` and ``second_objective``,
            for multi-objective algorithms such as 'nsga2').
        second_objective: with 2 objectives, 'n_params' (the parameter count, default) or
            the name of a value the evaluator puts in ``result.metrics`` ('latency_ms').
        batch: None uses a batch fitness evaluator when the algorithm accepts one; True
            requires one; False never uses one (one genome at a time).
        **algo_kwargs: the pygmo algorithm's own arguments; with 'sga', ``SGA_DEFAULTS``
            (the paper's cr=0.9, m=0.2, uniform mutation) unless given.

    Raises:
        MissingDependencyError: pygmo is not installed.
        ConfigurationError: an unknown algorithm name or arguments it does not accept.
    """

    name = "pygmo"

    def __init__(self, space: SearchSpace, algorithm: Any = "sga", population_size: int = 10,
                 generations: int = 10, seed: Optional[int] = None, objectives: int = 1,
                 batch: Optional[bool] = None, second_objective: str = "n_params",
                 **algo_kwargs):
        pygmo = import_pygmo()
        population_size = check_int(population_size, "population_size", 1,
                                    rule="a positive integer")
        generations = check_int(generations, "generations", 0, rule="a non-negative integer")
        if objectives not in (1, 2):
            raise ConfigurationError(f"objectives must be 1 or 2; got {objectives!r}")
        if batch not in (None, True, False):
            raise ConfigurationError(f"batch must be None, True or False; got {batch!r}")
        super().__init__(space, seed)
        self.algorithm = algorithm
        self.population_size = population_size
        self.generations = generations
        self.objectives = objectives
        self.second_objective = _check_second_objective(second_objective)
        self.algo_kwargs = dict(algo_kwargs)
        if seed is None:
            self._population_seed, self._algorithm_seed = None, None
        else:
            self._population_seed, self._algorithm_seed = (
                int(v) for v in np.random.SeedSequence(seed).generate_state(2))
        # Build once here so that a wrong name or argument fails now, not in the thread.
        probe, accepts_bfe = _build_algorithm(pygmo, algorithm, self.algo_kwargs, None)
        if isinstance(algorithm, str):   # pygmo's own rules; a UDA of yours runs as it is
            _check_evolves(pygmo, probe, space, population_size, objectives)
        if batch and not accepts_bfe:
            raise ConfigurationError(
                f"pygmo algorithm {probe.get_name()!r} cannot take a batch fitness evaluator; "
                "use batch=None or False, or one with set_bfe (nsga2, cmaes, gaco, pso_gen, ...)")
        self.batch = accepts_bfe if batch is None else bool(batch)
        self.algorithm_name = algorithm if isinstance(algorithm, str) else probe.get_name()
        self.final_population = None
        """pygmo's population after the last generation (None until ``finished``)."""
        self._exchange = _Exchange()
        self._thread_holder: List[Optional[threading.Thread]] = [None]
        self._finalizer = weakref.finalize(self, _shutdown, self._exchange, self._thread_holder)
        self._finished = False
        self._error: Optional[BaseException] = None
        self._handout: List[Tuple[int, Genome]] = []   # (index in batch, genome), not yet asked
        self._slots: Dict[int, int] = {}              # candidate number -> index in batch
        self._results: List[Optional[EvaluationResult]] = []
        self._batch_generation = 0

    @staticmethod
    def paper_defaults() -> Dict[str, Any]:
        """The paper's setting, as keyword arguments: ``PygmoAlgorithm(space,
        **PygmoAlgorithm.paper_defaults(), seed=0)``. These are also the defaults."""
        return {"algorithm": "sga", "population_size": 10, "generations": 10, **SGA_DEFAULTS}

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def evaluations(self) -> int:
        """Evaluations pygmo asks for in all: known for sga-like algorithms and nsga2,
        ``population_size * (generations + 1)``; other algorithms may differ."""
        return generational_budget(self.population_size, self.generations)

    def parameters(self) -> Dict[str, Any]:
        kwargs = {key: value if isinstance(value, (bool, int, float, str, type(None)))
                  else repr(value) for key, value in self.algo_kwargs.items()}
        if self.algorithm == "sga":
            kwargs = {**SGA_DEFAULTS, **kwargs}
        return {**super().parameters(), "pygmo_algorithm": self.algorithm_name,
                "population_size": self.population_size, "generations": self.generations,
                "objectives": self.objectives, "batch": self.batch, "algo_kwargs": kwargs,
                **({"second_objective": self.second_objective}
                   if self.second_objective != "n_params" else {})}

    def close(self) -> None:
        """Stop pygmo's thread (also done on garbage collection and at exit); afterwards
        the algorithm is ``finished`` and ``ask`` returns None."""
        self._finalizer()
        self._finished = True
        self._handout.clear()
        self._slots.clear()

    # --- ask/tell ---------------------------------------------------------------------
    def _ask(self) -> Optional[Candidate]:
        if self._error is not None:
            raise self._error
        if not self._handout:
            if self._slots or self._finished:
                return None                        # results outstanding, or pygmo is done
            self._receive()
            if not self._handout:
                return None
        index, genome = self._handout.pop(0)
        self._slots[self.asked] = index
        return Candidate(genome, generation=self._batch_generation)

    def _tell(self, candidate: Candidate, result: EvaluationResult) -> None:
        index = self._slots.pop(candidate.number, None)
        if index is None:
            raise ConfigurationError(
                f"candidate number {candidate.number} is not awaiting a result from this "
                "PygmoAlgorithm (never asked, or told already); tell each asked candidate once")
        self._results[index] = result
        if not self._slots and not self._handout:
            results, self._results = self._results, []
            self._exchange.replies.put(results)

    def _receive(self) -> None:
        """Wait for pygmo's next request: a batch to evaluate, the end, or an error."""
        if self._thread_holder[0] is None:
            self._start()
        thread = self._thread_holder[0]
        while True:
            try:
                kind, *payload = self._exchange.requests.get(timeout=0.05)
                break
            except queue.Empty:
                if not thread.is_alive() and self._exchange.requests.empty():
                    kind, payload = "error", [NordError(
                        "pygmo's thread ended without reporting a result")]
                    break
        if kind == "batch":
            self._batch_generation, genomes = payload
            self._handout = [(i, tuple(g)) for i, g in enumerate(genomes)]
            self._results = [None] * len(genomes)
            return
        self._finished = True
        thread.join(timeout=10)
        if kind == "done":
            self.final_population = payload[0]
        elif kind == "error":
            self._error = payload[0]
            raise self._error

    def _start(self) -> None:
        pygmo = import_pygmo()
        algorithm, kwargs, seed, batch = (self.algorithm, self.algo_kwargs, self._algorithm_seed,
            self.batch)

        def make_algorithm():
            built, _ = _build_algorithm(pygmo, algorithm, kwargs, seed)
            if batch:
                _bfe_target(pygmo, built, algorithm).set_bfe(pygmo.bfe(pygmo.member_bfe()))
            return built, batch

        thread = threading.Thread(
            target=_run_pygmo, name="nord-pygmo", daemon=True,
            args=(self._exchange, self.space, make_algorithm, self.population_size,
                  self.generations, self.objectives, self._population_seed,
                  self.second_objective))
        self._thread_holder[0] = thread
        thread.start()


class _ShapeOnly:
    """A problem with a space's bounds and objectives whose every fitness is 0: enough for
    pygmo to check that an algorithm can evolve a population of a given size."""

    def __init__(self, space: SearchSpace, objectives: int):
        self.bounds = PygmoProblem(space, list, objectives).get_bounds()
        self.nix, self.objectives = int(sum(space.integer_mask)), objectives

    def fitness(self, x) -> List[float]:
        return [0.0] * self.objectives

    def get_bounds(self):
        return self.bounds

    def get_nix(self) -> int:
        return self.nix

    def get_nobj(self) -> int:
        return self.objectives


_SMALLEST_SAFE_POPULATION = {"pso": 2, "pso_gen": 2}
"""pygmo algorithms that crash the process (a segmentation fault, pygmo 2.20) instead of
raising on a population below this size: refused before pygmo is asked."""


def _check_evolves(pygmo, algorithm, space: SearchSpace, population_size: int,
                   objectives: int) -> None:
    """Raise ConfigurationError when pygmo refuses to evolve a population of this size (each
    algorithm has its own rules: sga needs 2 individuals, de 5, gaco at least its kernel ...)."""
    name = algorithm.get_name().split(":")[0].strip()
    for uda, smallest in _SMALLEST_SAFE_POPULATION.items():
        if algorithm.is_(getattr(pygmo, uda)) and population_size < smallest:
            raise ConfigurationError(
                f"pygmo's {name} cannot run with population_size={population_size}: it needs at "
                f"least {smallest} particles; choose a larger population size (--population)")
    try:
        population = pygmo.population(pygmo.problem(_ShapeOnly(space, objectives)),
                                      population_size, seed=0)
        copy.deepcopy(algorithm).evolve(population)
    except ValueError as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        reason = next((line[len("what:"):].strip() for line in lines
                       if line.startswith("what:")), lines[-1] if lines else str(error))
        reason = reason.replace(repr(_ShapeOnly), "the problem")
        raise ConfigurationError(
            f"pygmo's {name} cannot run this search (population_size={population_size}, "
            f"{objectives} objective(s)): {reason}. Choose a population size (--population) or "
            "an algorithm that fits") from None


def _build_algorithm(pygmo, spec, kwargs: Dict[str, Any], seed: Optional[int]):
    """A fresh ``pygmo.algorithm`` for ``spec`` and whether it accepts a batch evaluator."""
    if isinstance(spec, str):
        uda = _construct(pygmo, spec, kwargs)
        algorithm = pygmo.algorithm(uda)
    elif isinstance(spec, pygmo.algorithm):
        if kwargs:
            raise ConfigurationError(
                f"algorithm arguments {sorted(kwargs)} cannot be applied to a ready "
                "pygmo.algorithm; give them to its UDA's constructor instead")
        algorithm = copy.deepcopy(spec)
    elif hasattr(spec, "_pygmo_cpp_algorithm") or hasattr(spec, "evolve"):
        if kwargs:
            raise ConfigurationError(
                f"algorithm arguments {sorted(kwargs)} cannot be applied to a ready "
                f"{type(spec).__name__} instance; give them to its constructor instead")
        algorithm = pygmo.algorithm(spec)
    else:
        raise ConfigurationError(
            "algorithm must be a pygmo algorithm's name such as 'sga' or 'nsga2', a pygmo "
            f"UDA instance, or a pygmo.algorithm; got {spec!r}")
    if seed is not None and algorithm.has_set_seed():
        algorithm.set_seed(seed)
    return algorithm, _bfe_target(pygmo, algorithm, spec) is not None


def _construct(pygmo, name: str, kwargs: Dict[str, Any]):
    """``pygmo.<name>(gen=1, memory=True, **kwargs)``, leaving out what it does not take."""
    cls = getattr(pygmo, name, None)
    if not isinstance(cls, type) or not hasattr(cls, "_pygmo_cpp_algorithm"):
        raise ConfigurationError(
            f"unknown pygmo algorithm {name!r}; valid names are: "
            f"{', '.join(pygmo_algorithm_names(pygmo))}")
    if name == "sga":
        kwargs = {**SGA_DEFAULTS, **kwargs}
    attempts = [{"gen": 1, "memory": True}, {"gen": 1}, {}]
    last_error: Optional[Exception] = None
    for extra in attempts:
        extra = {key: value for key, value in extra.items() if key not in kwargs}
        try:
            return cls(**{**extra, **kwargs})
        except (TypeError, ValueError) as error:
            last_error = error
    raise ConfigurationError(
        f"pygmo.{name} cannot be built with {kwargs}: {str(last_error).strip()}; see "
        f"help(pygmo.{name}) for its arguments")


def _bfe_target(pygmo, algorithm, spec):
    """The UDA inside ``algorithm`` that has ``set_bfe``, or None."""
    candidates = []
    if isinstance(spec, str):
        candidates.append(getattr(pygmo, spec))
    elif not isinstance(spec, pygmo.algorithm):
        candidates.append(type(spec))
    candidates += [getattr(pygmo, name) for name in pygmo_algorithm_names(pygmo)]
    for cls in candidates:
        if hasattr(cls, "set_bfe") and algorithm.is_(cls):
            return algorithm.extract(cls)
    return None


def pygmo_algorithm_names(pygmo=None) -> List[str]:
    """Names of pygmo's built-in algorithms (those ``PygmoAlgorithm`` accepts by name)."""
    pygmo = pygmo if pygmo is not None else import_pygmo()
    return sorted(name for name in dir(pygmo) if not name.startswith("_")
                  and isinstance(getattr(pygmo, name), type)
                  and hasattr(getattr(pygmo, name), "_pygmo_cpp_algorithm"))
