"""Optuna's samplers in nord: TPE, Gaussian-process BO and CMA-ES behind nord's ask/tell.

    algorithm = TPE(space, seed=0)                     # Bergstra et al., NeurIPS 2011
    algorithm = GaussianProcessBO(space, seed=0)       # a GP with expected improvement
    algorithm = CMAES(space, seed=0, sigma0=2.0)       # Hansen, 2016; numeric genes only
    candidate = algorithm.ask()                        # never None
    algorithm.tell(candidate, result)                  # one Optuna trial finished

Each algorithm holds one in-memory ``optuna.Study``; nord keeps the journal, the seed and the
engine. A genome's genes become Optuna distributions (unordered integer choices:
categorical; ordered integers: int; reals: float); the study minimises ``result.fitness``,
and a failed result is told as a failed trial, which Optuna's samplers leave out of their
models. Optuna is imported only when one is made. Details (genes, failures, determinism,
cost per proposal): docs/search.md.
"""
from __future__ import annotations

import contextlib
import importlib.util
import math
import numbers
import warnings
from typing import Any, Dict, Iterator, List, Optional

from nord.checks import check_int
from nord.errors import ConfigurationError, MissingDependencyError, SearchSpaceError
from nord.evaluators.result import EvaluationResult
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.spaces.base import SearchSpace

__all__ = ["OptunaAlgorithm", "TPE", "GaussianProcessBO", "CMAES", "import_optuna",
           "gene_kinds"]

_INSTALL = 'install it with `pip install "nord[optuna]"` (or `pip install optuna`)'


def import_optuna():
    """Import Optuna, or say how to install it."""
    try:
        import optuna
    except ImportError as error:
        raise MissingDependencyError(
            f"optuna is needed for nord's TPE, GP-BO and CMA-ES but is not installed; "
            f"{_INSTALL}, or use one of nord's own algorithms ('random', "
            "'regularized_evolution', 'reinforce')") from error
    return optuna


def gene_kinds(space: SearchSpace) -> List[str]:
    """How each gene is modelled: 'categorical' (an unordered integer choice), 'int' (an
    ordered integer) or 'float'."""
    return ["categorical" if choice else "int" if is_int else "float"
            for choice, is_int in zip(space.categorical_mask, space.integer_mask)]


@contextlib.contextmanager
def _quiet(optuna) -> Iterator[None]:
    """Optuna at WARNING and without its experimental-feature warnings, for one call: nord
    has its own progress display, and the caller's own use of Optuna is left as it was."""
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            yield
    finally:
        optuna.logging.set_verbosity(verbosity)


def _check_startup(value: Any, default: int) -> int:
    return check_int(value, "n_startup_trials (random proposals before the model is used)", 1,
                     rule=f"an integer >= 1, e.g. {default}")


class OptunaAlgorithm(SearchAlgorithm):
    """Base class: one Optuna study asked and told in the order nord's engine does.

    A subclass names itself, checks its settings and builds its sampler in
    ``_sampler(optuna, seed)``; its settings are stored in the journal (:meth:`parameters`).
    The sampler's seed is drawn from ``seed``, so the same seed and the same results told in
    the same order give the same candidates, and a resumed run (the journal's results
    replayed in order) rebuilds the very same study.

    Args:
        space: the search space.
        seed: seeds the sampler (None: a fresh random seed).
        settings: the subclass's checked settings, by name.

    Raises:
        MissingDependencyError: Optuna (or the sampler's own dependency) is not installed.
    """

    name = "optuna"

    def __init__(self, space: SearchSpace, seed: Optional[int] = None,
                 settings: Optional[Dict[str, Any]] = None):
        super().__init__(space, seed)
        self.settings: Dict[str, Any] = dict(settings or {})
        optuna = self._optuna = import_optuna()
        kinds = gene_kinds(space)
        width = len(str(max(len(kinds) - 1, 0)))
        self._names = [f"gene{index:0{width}d}" for index in range(len(kinds))]
        self._distributions = {
            name: _distribution(optuna, kind, low, high)
            for name, kind, low, high in zip(self._names, kinds, space.lower, space.upper)}
        self._kinds = kinds
        sampler_seed = None if seed is None else int(self.rng.integers(2 ** 32))
        with _quiet(optuna):
            self.study = optuna.create_study(
                sampler=self._sampler(optuna, sampler_seed), storage=None, direction="minimize")
        self._trials: Dict[int, Any] = {}   # candidate number -> its running trial

    def parameters(self) -> Dict[str, Any]:
        return {**super().parameters(), **self.settings, "genes": list(self._kinds)}

    def _sampler(self, optuna, seed: Optional[int]):
        raise NotImplementedError

    def _ask(self) -> Optional[Candidate]:
        optuna = self._optuna
        with _quiet(optuna):
            trial = self.study.ask(self._distributions)
        self._trials[self.asked] = trial    # the number ask() gives this candidate
        params = trial.params
        return Candidate(tuple(params[name] for name in self._names))

    def _tell(self, candidate: Candidate, result: EvaluationResult) -> None:
        trial = self._trials.pop(candidate.number, None)
        if trial is None:
            raise ConfigurationError(
                f"candidate {candidate.number} was told already, or was not asked of this "
                f"{self.name} algorithm; tell each candidate that ask() returned once")
        optuna = self._optuna
        with _quiet(optuna):
            if result.ok and math.isfinite(result.accuracy):   # else fitness is FAILED_FITNESS
                self.study.tell(trial, result.fitness)
            else:
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)


def _distribution(optuna, kind: str, low, high):
    distributions = optuna.distributions
    if kind == "categorical":
        return distributions.CategoricalDistribution(tuple(range(int(low), int(high) + 1)))
    if kind == "int":
        return distributions.IntDistribution(int(low), int(high))
    return distributions.FloatDistribution(float(low), float(high))


class TPE(OptunaAlgorithm):
    """The tree-structured Parzen estimator (Bergstra et al., NeurIPS 2011), Optuna's
    ``TPESampler``.

    After ``n_startup_trials`` random proposals, the told results are split into the best
    fraction and the rest; each proposal maximises the ratio of the two groups' densities
    over ``n_ei_candidates`` draws. ``multivariate`` models the genes jointly (Falkner et al.,
    ICML 2018, as in BOHB) instead of one density per gene: on NAS-Bench-201 the edges
    interact, and the joint model found better cells at a budget of 100 (docs/search.md).

    Args:
        space: the search space.
        seed: seeds the sampler.
        n_startup_trials: random proposals (successful ones) before the model is used.
        n_ei_candidates: draws from the good density scored per proposal.
        multivariate: one joint density over the genes (True) or one per gene.
        constant_liar: while results are out, count their candidates among the worse ones,
            so that a batch of proposals spreads out (Optuna's default).

    Raises:
        ConfigurationError: a setting out of its range.
    """

    name = "tpe"

    def __init__(self, space: SearchSpace, seed: Optional[int] = None,
                 n_startup_trials: int = 10, n_ei_candidates: int = 24,
                 multivariate: bool = True, constant_liar: bool = True):
        settings = {
            "n_startup_trials": _check_startup(n_startup_trials, 10),
            "n_ei_candidates": check_int(n_ei_candidates, "n_ei_candidates (draws scored per "
                                         "proposal)", 1, rule="an integer >= 1, e.g. 24"),
            "multivariate": _check_flag(multivariate, "multivariate"),
            "constant_liar": _check_flag(constant_liar, "constant_liar")}
        super().__init__(space, seed, settings)

    def _sampler(self, optuna, seed):
        return optuna.samplers.TPESampler(seed=seed, **self.settings)


class GaussianProcessBO(OptunaAlgorithm):
    """Bayesian optimisation with a Gaussian process (Snoek et al., NeurIPS 2012), Optuna's
    ``GPSampler``: a Matern-5/2 kernel (a Hamming distance between categorical genes),
    refitted to every told result before each proposal, which maximises log expected
    improvement. The refit makes each proposal cost milliseconds to tenths of a second,
    growing with the results told (docs/search.md has the measured figures).

    Args:
        space: the search space.
        seed: seeds the sampler.
        n_startup_trials: random proposals (successful ones) before the GP is used.
        deterministic_objective: the same genome always gets the same fitness (a table
            look-up), so the GP assumes no noise.

    Raises:
        ConfigurationError: a setting out of its range.
    """

    name = "gp-bo"

    def __init__(self, space: SearchSpace, seed: Optional[int] = None,
                 n_startup_trials: int = 10, deterministic_objective: bool = False):
        settings = {
            "n_startup_trials": _check_startup(n_startup_trials, 10),
            "deterministic_objective": _check_flag(deterministic_objective,
                                                   "deterministic_objective")}
        super().__init__(space, seed, settings)

    def _sampler(self, optuna, seed):
        return optuna.samplers.GPSampler(seed=seed, warn_independent_sampling=False,
                                         **self.settings)


class CMAES(OptunaAlgorithm):
    """The covariance matrix adaptation evolution strategy (Hansen, 2016, "The CMA Evolution
    Strategy: A Tutorial"), Optuna's ``CmaEsSampler`` over the ``cmaes`` package.

    CMA-ES moves a Gaussian over the genes seen as numbers, so it needs ordered genes
    (integers, rounded, and reals); a space of unordered choices is refused.

    Args:
        space: a space without categorical genes.
        seed: seeds the sampler.
        sigma0: the initial step size in gene units (None: a sixth of the narrowest gene's
            range, Optuna's default).
        population_size: proposals per generation (None: ``4 + 3 ln(genes)``).
        n_startup_trials: random proposals before the strategy starts.

    Raises:
        ConfigurationError: a setting out of its range.
        SearchSpaceError: the space has categorical genes.
        MissingDependencyError: ``cmaes`` is not installed.
    """

    name = "cmaes"

    def __init__(self, space: SearchSpace, seed: Optional[int] = None,
                 sigma0: Optional[float] = None, population_size: Optional[int] = None,
                 n_startup_trials: int = 1):
        if sigma0 is not None and (isinstance(sigma0, bool)
                                   or not isinstance(sigma0, numbers.Real)
                                   or not math.isfinite(sigma0) or sigma0 <= 0):
            raise ConfigurationError(
                f"sigma0 (CMA-ES's initial step size) must be a finite number > 0, or None "
                f"for Optuna's default; got {sigma0!r}")
        if population_size is not None:
            population_size = check_int(population_size, "population_size (proposals per "
                                        "CMA-ES generation)", 2, rule="an integer >= 2 or None")
        settings = {"sigma0": None if sigma0 is None else float(sigma0),
                         "population_size": population_size,
                         "n_startup_trials": _check_startup(n_startup_trials, 1)}
        categorical = [index for index, flag in enumerate(space.categorical_mask) if flag]
        if categorical:
            raise SearchSpaceError(
                f"CMA-ES needs genes that are numbers, but {type(space).__name__}'s genes at "
                f"positions {categorical} are unordered choices (categorical); use 'tpe' or "
                "'gp-bo' on this space, or CMA-ES on a space of ordered genes")
        import_optuna()
        if importlib.util.find_spec("cmaes") is None:
            raise MissingDependencyError(
                f"CMA-ES through Optuna needs the cmaes package, which is not installed; "
                f'install it with `pip install cmaes` (or `pip install "nord[optuna]"`)')
        super().__init__(space, seed, settings)

    def _sampler(self, optuna, seed):
        settings = self.settings
        return optuna.samplers.CmaEsSampler(
            seed=seed, sigma0=settings["sigma0"], popsize=settings["population_size"],
            n_startup_trials=settings["n_startup_trials"], warn_independent_sampling=False)


def _check_flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(f"{name} must be True or False; got {value!r}")
    return value
