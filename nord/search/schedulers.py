"""Schedulers: early stopping and multi-fidelity search, with epochs as the fidelity.

The algorithm proposes candidates; a scheduler decides how far each one trains. Decisions
are made at *rungs*, epoch counts ``min_epochs * eta**k`` (the last one is ``max_epochs``)::

    scheduler = make_scheduler("asha", min_epochs=1, max_epochs=27, eta=3)   # rungs 1, 3, 9, 27
    summary = run_search(algorithm, evaluator, budget=100, mode="async", scheduler=scheduler)

Rules: ``median``, ``sha``, ``asha`` and ``hyperband``; without one (``scheduler=None``) the
engine runs :class:`TrainToEnd`, no early stopping. Schedulers are plain objects: every
decision follows from the reports they were given, in order. A new scheduler is a
subclass of :class:`Scheduler` registered with :func:`register_scheduler`.
Details (each rule, fairness at a rung, what the algorithm is told, disk): docs/schedulers.md.
"""
from __future__ import annotations

import bisect
import math
from typing import Dict, List, Optional, Sequence, Tuple

from nord.checks import check_int
from nord.errors import ConfigurationError
from nord.registry import Registry

__all__ = ["Scheduler", "TrainToEnd", "MedianStopping", "SuccessiveHalving", "ASHA", "Hyperband",
           "SCHEDULERS", "register_scheduler", "list_schedulers", "make_scheduler",
           "check_settings", "rungs", "CONTINUE", "PAUSE", "STOP", "DONE", "RUNGS_METRIC"]

CONTINUE, PAUSE, STOP, DONE = "continue", "pause", "stop", "done"
"""A candidate at a rung: trains on now, waits (it may be promoted), stops for good, or has
reached ``max_epochs``."""

RUNGS_METRIC = "rungs"
"""The told result's metric that lists ``[epochs, search accuracy]`` at each rung the
candidate passed below the one it is told at (absent where there is none): the engine adds
it, multi-fidelity algorithms such as BOHB learn from it."""


def rungs(min_epochs: int, max_epochs: int, eta: int) -> List[int]:
    """The epoch counts at which decisions are made: ``min_epochs * eta**k`` below
    ``max_epochs``, then ``max_epochs``.

    >>> rungs(1, 27, 3)
    [1, 3, 9, 27]
    >>> rungs(2, 20, 3)
    [2, 6, 18, 20]
    """
    values, epochs = [], min_epochs
    while epochs < max_epochs:
        values.append(epochs)
        epochs *= eta
    return values + [max_epochs]


def check_settings(min_epochs, max_epochs, eta) -> Tuple[int, int, int]:
    """The settings every scheduler takes, checked without building one (a configuration
    checks them when it is made).

    Raises:
        ConfigurationError: a setting that is not an integer, ``eta < 2``, or
            ``min_epochs > max_epochs``.
    """
    min_epochs = check_int(min_epochs, "min_epochs", 1)
    max_epochs = check_int(max_epochs, "max_epochs", 1)
    eta = check_int(eta, "eta", 2,
                    rule="an integer >= 2 (the factor between rungs: each keeps the best 1/eta)")
    if min_epochs > max_epochs:
        raise ConfigurationError(
            f"min_epochs ({min_epochs}) must not exceed max_epochs ({max_epochs}): candidates are "
            "judged first after min_epochs and trained to max_epochs at most")
    return min_epochs, max_epochs, eta


def _score(accuracy: Optional[float]) -> float:
    """What a rung compares: the accuracy, a failure or NaN below everything."""
    return accuracy if accuracy is not None and math.isfinite(accuracy) else -math.inf


class Scheduler:
    """Base class. The engine calls ``prepare`` once, ``first_epochs`` for each new candidate,
    ``report`` at the end of each leg of training, then ``promotions`` for paused candidates to
    resume, and asks ``releasable`` which paused candidates can never be promoted.

    ``report`` does the bookkeeping; a new scheduler implements ``_decide``: what a candidate
    that reached a rung below ``max_epochs`` does now (CONTINUE, PAUSE or STOP; one that
    pauses waits for ``promotions``). Registered, it is known by name to
    :func:`make_scheduler` and ``nord run --scheduler``::

        from nord.search.schedulers import (CONTINUE, STOP, Scheduler, make_scheduler,
                                            register_scheduler)

        @register_scheduler("threshold", description="stops a candidate below an accuracy")
        class Threshold(Scheduler):
            name = "threshold"

            def __init__(self, min_epochs=1, max_epochs=27, eta=3, accuracy=0.5):
                super().__init__(min_epochs, max_epochs, eta)
                self.accuracy = accuracy

            def _decide(self, number, epochs):
                return CONTINUE if self.best[number] >= self.accuracy else STOP

        scheduler = make_scheduler("threshold", max_epochs=9, accuracy=0.6)

    Args:
        min_epochs: epochs before the first decision.
        max_epochs: epochs a candidate trains at most.
        eta: each rung keeps the best ``1/eta`` (and rungs are ``eta`` times apart).
    """

    name = "scheduler"
    modes: Tuple[str, ...] = ("sync", "async")
    trains_in_legs = True
    """Candidates train in legs (paused, resumed from checkpoints): the engine journals the
    legs, asks for promotions and keeps a checkpoint folder; only :class:`TrainToEnd` says
    False."""

    def __init__(self, min_epochs: int = 1, max_epochs: int = 27, eta: int = 3):
        self.min_epochs, self.max_epochs, self.eta = check_settings(min_epochs, max_epochs, eta)
        self.budget: Optional[int] = None
        self.mode = "sync"
        self.epochs: Dict[int, int] = {}          # candidate -> epochs reached
        self.best: Dict[int, float] = {}          # candidate -> score at its highest rung

    # --- set-up ---------------------------------------------------------------------------
    def prepare(self, budget: int, mode: str) -> None:
        """Start of a run of ``budget`` candidates in ``mode``.

        Raises:
            ConfigurationError: a mode this scheduler cannot serve, or a scheduler that has
                already decided for a run (its rungs would mix two runs' candidates).
        """
        if self.epochs:
            settings = ", ".join(f"{key}={value!r}" for key, value in self.parameters().items()
                                 if key != "scheduler")
            raise ConfigurationError(
                f"a scheduler serves one run: this {self.name} scheduler has already decided "
                f"for another run ({len(self.epochs)} candidates), and its rungs would mix "
                f"both runs' candidates. Make a fresh one with "
                f"make_scheduler({self.name!r}, {settings}) for each run (a resume too: the "
                "engine rebuilds it from the journal)")
        self.check_mode(mode)
        self.budget, self.mode = budget, mode

    @classmethod
    def check_mode(cls, mode: str) -> None:
        """Refuse a mode this scheduler cannot serve, without building one (a configuration
        checks it when it is made).

        Raises:
            ConfigurationError: a mode not in :attr:`modes`.
        """
        if mode not in cls.modes:
            other = {"sync": "async", "async": "sync"}[mode]
            raise ConfigurationError(
                f"the {cls.name} scheduler works in {' and '.join(cls.modes)} mode, not in "
                f"{mode} mode; use --mode {other}, or a scheduler for {mode} mode "
                f"({', '.join(n for n in SCHEDULERS.names() if mode in SCHEDULERS.get(n).modes)})")

    def check_algorithm(self, algorithm) -> None:
        """Refuse, before anything runs, an algorithm that runs only under other schedulers
        (``SearchAlgorithm.schedulers``, which names schedulers as registered)."""
        algorithm.check_scheduler(self.name)

    def check_serves(self, algorithm, evaluator) -> None:
        """Refuse a search this scheduler would get wrong.

        Raises:
            ConfigurationError: an algorithm with several objectives (a rung ranks by accuracy
                alone, so it would stop candidates the algorithm would keep), or an evaluator
                that cannot train in legs (a table look-up has no epochs to stop at).
        """
        objectives = getattr(algorithm, "objectives", 1) or 1
        if objectives > 1:
            raise ConfigurationError(
                f"the {self.name} scheduler ranks candidates at each rung by accuracy alone; the "
                f"{getattr(algorithm, 'name', type(algorithm).__name__)} algorithm here optimises "
                f"{objectives} objectives, so early stopping would drop candidates on its Pareto "
                "front. Run it without a scheduler, or use a single-objective algorithm")
        if evaluator is not None and not getattr(evaluator, "trains_in_legs", False):
            raise ConfigurationError(
                f"the {self.name} scheduler pauses and resumes training at epoch boundaries; "
                f"{type(evaluator).__name__} does not train in epochs (it cannot stop after "
                "min_epochs or resume from a checkpoint). Use an evaluator that trains (local or "
                "distributed), or run without a scheduler")

    def parameters(self) -> Dict[str, object]:
        """The scheduler's settings, stored in the run's journal."""
        return {"scheduler": self.name, "min_epochs": self.min_epochs,
                "max_epochs": self.max_epochs, "eta": self.eta}

    # --- decisions --------------------------------------------------------------------------
    def ladder(self, number: int) -> List[int]:
        """The rungs of candidate ``number``."""
        return rungs(self.min_epochs, self.max_epochs, self.eta)

    def first_epochs(self, number: int) -> int:
        """Epochs of a new candidate's first leg."""
        self.epochs[number] = 0
        return self.ladder(number)[0]

    def next_epochs(self, number: int) -> int:
        """The rung after the one candidate ``number`` reached."""
        ladder = self.ladder(number)
        return ladder[ladder.index(self.epochs[number]) + 1]

    def report(self, number: int, epochs: int, accuracy: Optional[float], ok: bool = True) -> str:
        """Candidate ``number`` reached ``epochs`` with this search accuracy: what now."""
        self.epochs[number] = epochs
        self.best[number] = _score(accuracy) if ok else -math.inf
        if epochs >= self.max_epochs:
            return DONE
        if not ok:
            return STOP
        return self._decide(number, epochs)

    def _decide(self, number: int, epochs: int) -> str:
        raise NotImplementedError

    def promotions(self, free: int) -> List[Tuple[int, int]]:
        """Up to ``free`` paused candidates to resume now, with their next rung."""
        return []

    def sent_on(self, number: int, epochs: int) -> None:
        """Replaying a journal: candidate ``number`` went on from rung ``epochs``."""

    def start_batch(self, numbers: Sequence[int]) -> None:
        """Sync mode: the candidates of the engine's next batch."""

    def batch_size(self, index: int, given: Optional[int], workers: int) -> int:
        """Sync mode: the size of the engine's ``index``-th batch: the one ``given``
        (``batch_size``), else one candidate per worker."""
        return given or workers

    def releasable(self) -> List[int]:
        """Paused candidates that will never be promoted (their checkpoints can go)."""
        return []

    def waiting(self) -> List[int]:
        """Paused candidates that may still be promoted."""
        return []


class TrainToEnd:
    """No early stopping: every candidate trains once, as far as its evaluator says.

    What ``run_search(scheduler=None)`` runs, so that the engine always has a scheduler to ask.
    Its answers to the engine: nothing to record, nothing to refuse, the batch size given or
    one candidate per worker, and no first leg (``first_epochs`` is None): each candidate is
    one evaluation to the end, so nothing is paused or promoted and the journal holds no legs.
    Not registered: ``--scheduler`` names early stopping rules only.
    """

    name = "train-to-end"
    trains_in_legs = False

    def check_algorithm(self, algorithm) -> None:
        """Refuse an algorithm that runs only under a scheduler."""
        algorithm.check_scheduler(None)   # the algorithms' rules know this run as no scheduler

    def prepare(self, budget: int, mode: str) -> None:
        """Nothing to prepare: both modes, any budget."""

    def check_serves(self, algorithm, evaluator) -> None:
        """Nothing to refuse: every algorithm and evaluator trains to the end."""

    def parameters(self) -> Dict[str, object]:
        """Nothing for the journal's run record: a run without early stopping records ``{}``."""
        return {}

    def batch_size(self, index: int, given: Optional[int], workers: int) -> int:
        """Sync mode: the batch size ``given``, else one candidate per worker."""
        return given or workers

    def start_batch(self, numbers: Sequence[int]) -> None:
        """Sync mode: nothing to prepare for a batch."""

    def first_epochs(self, number: int) -> None:
        """No first leg: the candidate trains to the end in one evaluation."""
        return None

    def __repr__(self) -> str:
        return "TrainToEnd()"


class MedianStopping(Scheduler):
    """The median stopping rule at each rung (see the module docstring).

    Args:
        min_candidates: candidates that must have reached a rung before anyone is stopped
            there (at least 1).
    """

    name = "median"

    def __init__(self, min_epochs: int = 1, max_epochs: int = 27, eta: int = 3,
                 min_candidates: int = 3):
        super().__init__(min_epochs, max_epochs, eta)
        self.min_candidates = check_int(min_candidates, "min_candidates", 1)
        self.at_rung: Dict[int, List[float]] = {}

    def parameters(self):
        return {**super().parameters(), "min_candidates": self.min_candidates}

    def _decide(self, number: int, epochs: int) -> str:
        earlier = self.at_rung.setdefault(epochs, [])
        score = self.best[number]
        decision = CONTINUE
        if len(earlier) >= self.min_candidates:
            ordered = sorted(earlier)
            middle = len(ordered) // 2
            median = (ordered[middle] if len(ordered) % 2 else
                (ordered[middle - 1] + ordered[middle]) / 2)
            decision = CONTINUE if score >= median else STOP
        earlier.append(score)
        return decision


class _Rung:
    """The candidates that reached one rung of one bracket: their scores, in arrival order,
    and which of them went on."""

    __slots__ = ("scores", "promoted", "failed", "_order", "_arrival")

    def __init__(self):
        self.scores: Dict[int, float] = {}
        self.promoted: set = set()
        self.failed: Dict[int, None] = {}   # those whose score is -inf (an ordered set)
        self._order: List[Tuple[float, int, int]] = []   # (-score, arrival, candidate), sorted
        self._arrival: Dict[int, int] = {}

    def add(self, number: int, score: float) -> None:
        """Candidate ``number`` reached this rung with ``score`` (again: its new score, its
        first arrival)."""
        arrival = self._arrival.setdefault(number, len(self._arrival))
        if number in self.scores:
            self._order.remove((-self.scores[number], arrival, number))
        self.scores[number] = score
        if score == -math.inf:
            self.failed[number] = None
        else:
            self.failed.pop(number, None)
        bisect.insort(self._order, (-score, arrival, number))

    def ranked(self, first: Optional[int] = None) -> List[int]:
        """Best first; of equal scores the earlier arrival first. ``first``: only the best
        that many. Kept sorted as candidates arrive, so a look costs no sort."""
        order = self._order if first is None else self._order[:first]
        return [number for _, _, number in order]


class SuccessiveHalving(Scheduler):
    """Synchronous successive halving over the candidates of a batch (sync mode).

    A candidate pauses at each rung; once no candidate of the batch is training, the lowest
    rung not yet decided is decided: its best ``1/eta`` (at least the best one) go on, the
    others are released.
    """

    name = "sha"
    modes = ("sync",)

    def __init__(self, min_epochs: int = 1, max_epochs: int = 27, eta: int = 3):
        super().__init__(min_epochs, max_epochs, eta)
        self.batch: List[int] = []
        self.training: set = set()
        self.rung_scores: Dict[int, Dict[int, float]] = {}   # epochs -> candidate -> score
        self.decided: set = set()
        self.released: List[int] = []

    def batch_size(self, index: int, given: Optional[int], workers: int) -> int:
        """The one ``given``, else ``eta ** (rungs - 1)``: halving it at every rung leaves
        one candidate for ``max_epochs``."""
        return given or self.eta ** (len(rungs(self.min_epochs, self.max_epochs, self.eta)) - 1)

    def start_batch(self, numbers: Sequence[int]) -> None:
        """The engine's next batch (sync mode): the candidates halved together."""
        self.batch = list(numbers)
        self.rung_scores, self.decided = {}, set()

    def first_epochs(self, number: int) -> int:
        self.training.add(number)
        return super().first_epochs(number)

    def report(self, number, epochs, accuracy, ok=True):
        self.training.discard(number)
        return super().report(number, epochs, accuracy, ok)

    def _decide(self, number: int, epochs: int) -> str:
        self.rung_scores.setdefault(epochs, {})[number] = self.best[number]
        return PAUSE

    def promotions(self, free: int) -> List[Tuple[int, int]]:
        if any(n in self.training for n in self.batch):
            return []
        for epochs in sorted(self.rung_scores):
            if epochs in self.decided:
                continue
            self.decided.add(epochs)
            scores = self.rung_scores[epochs]
            # equal scores: the earlier candidate first, not the earlier arrival, so that
            # the decision does not depend on which worker finished first
            ranked = sorted(scores, key=lambda n: (-scores[n], n))
            keep = [n for n in ranked[:max(1, len(ranked) // self.eta)] if scores[n] > -math.inf]
            self.released.extend(n for n in ranked if n not in keep)
            for number in keep:
                self.training.add(number)
            return [(number, self.next_epochs(number)) for number in keep]
        return []

    def releasable(self) -> List[int]:
        released, self.released = self.released, []
        return released

    def sent_on(self, number: int, epochs: int) -> None:
        self.decided.add(epochs)
        self.training.add(number)

    def waiting(self) -> List[int]:
        return [n for epochs, scores in self.rung_scores.items() if epochs not in self.decided
                for n in scores]


class ASHA(Scheduler):
    """Asynchronous successive halving with promotions of paused candidates (async mode).

    Args:
        brackets: how many Hyperband brackets (1: plain ASHA, starting at ``min_epochs``).
    """

    name = "asha"
    modes = ("async",)

    def __init__(self, min_epochs: int = 1, max_epochs: int = 27, eta: int = 3,
                 brackets: int = 1):
        super().__init__(min_epochs, max_epochs, eta)
        depth = len(rungs(self.min_epochs, self.max_epochs, self.eta))
        self.brackets = check_int(brackets, "brackets (at most one per rung)", 1, depth)
        self.bracket_of: Dict[int, int] = {}
        self.rungs: Dict[Tuple[int, int], _Rung] = {}     # (bracket, epochs) -> rung
        self.started = 0

    def parameters(self):
        return {**super().parameters(), "brackets": self.brackets}

    def ladder(self, number: int) -> List[int]:
        return rungs(self.min_epochs, self.max_epochs, self.eta)[self.bracket_of.get(number, 0):]

    def _bracket_for(self, index: int) -> int:
        return index % self.brackets

    def first_epochs(self, number: int) -> int:
        self.bracket_of[number] = self._bracket_for(self.started)
        self.started += 1
        return super().first_epochs(number)

    def _decide(self, number: int, epochs: int) -> str:
        self.rungs.setdefault((self.bracket_of[number], epochs), _Rung()).add(
            number, self.best[number])
        return PAUSE

    def _promotable(self, key: Tuple[int, int]) -> List[int]:
        rung = self.rungs[key]
        keep = len(rung.scores) // self.eta
        return [n for n in rung.ranked(keep)
                if n not in rung.promoted and self.best[n] > -math.inf]

    def promotions(self, free: int) -> List[Tuple[int, int]]:
        chosen: List[Tuple[int, int]] = []
        # the highest rungs first: finishing good candidates beats starting new ones
        for key in sorted(self.rungs, key=lambda k: -k[1]):
            if key[1] >= self.max_epochs:
                continue
            for number in self._promotable(key):
                if len(chosen) >= free:
                    return chosen
                self.rungs[key].promoted.add(number)
                chosen.append((number, self.next_epochs(number)))
        return chosen

    def sent_on(self, number: int, epochs: int) -> None:
        self.rungs.setdefault((self.bracket_of[number], epochs), _Rung()).promoted.add(number)

    def _capacity(self, bracket: int, epochs: int) -> float:
        """The most candidates the budget lets reach this rung of this bracket."""
        if self.budget is None:
            return math.inf
        share = math.ceil((self.budget - bracket) / self.brackets) if self.budget > bracket else 0
        depth = self.ladder_of_bracket(bracket).index(epochs)
        return share / self.eta ** depth

    def ladder_of_bracket(self, bracket: int) -> List[int]:
        return rungs(self.min_epochs, self.max_epochs, self.eta)[bracket:]

    def releasable(self) -> List[int]:
        released = []
        for (bracket, epochs), rung in self.rungs.items():
            if epochs >= self.max_epochs:
                continue
            slots = math.floor(self._capacity(bracket, epochs) / self.eta)
            if slots >= len(rung.scores):   # every one fits: only failures are released
                released.extend(number for number in rung.failed if number not in rung.promoted
                                and self.best[number] == -math.inf)
                continue
            for position, number in enumerate(rung.ranked()):
                if number not in rung.promoted and (position >= slots or self.best[number] == -math.inf):
                    released.append(number)
        return released

    def waiting(self) -> List[int]:
        out = set(self.releasable())
        return [n for (_, epochs), rung in self.rungs.items() if epochs < self.max_epochs
                for n in rung.scores if n not in rung.promoted and n not in out]


class Hyperband(Scheduler):
    """Hyperband: brackets of successive halving starting at each rung (module docstring).

    In sync mode the engine's batches are the brackets (``bracket_sizes``), largest first;
    in async mode each new candidate joins the brackets in turn and each bracket promotes as
    ASHA does.
    """

    name = "hyperband"

    def __init__(self, min_epochs: int = 1, max_epochs: int = 27, eta: int = 3):
        super().__init__(min_epochs, max_epochs, eta)
        self.depth = len(rungs(min_epochs, max_epochs, eta))
        self._inner: Optional[Scheduler] = None

    def bracket_sizes(self) -> List[int]:
        """Candidates per bracket, for bracket s = 0 (starts at min_epochs) .. depth - 1:
        ``ceil(depth / (depth - s) * eta**(depth - 1 - s))``, as Li et al. set them."""
        return [math.ceil(self.depth / (self.depth - s) * self.eta ** (self.depth - 1 - s))
                for s in range(self.depth)]

    def prepare(self, budget: int, mode: str) -> None:
        super().prepare(budget, mode)
        if mode == "async":
            self._inner = ASHA(self.min_epochs, self.max_epochs, self.eta, brackets=self.depth)
        else:
            self._inner = _SyncBrackets(self.min_epochs, self.max_epochs, self.eta,
                                        self.bracket_sizes())
        self._inner.prepare(budget, mode)
        self.epochs, self.best = self._inner.epochs, self._inner.best

    def batch_size(self, index: int, given: Optional[int], workers: int) -> int:
        """The engine's ``index``-th batch is the next bracket (sync mode), whatever the
        ``batch_size`` given."""
        sizes = self.bracket_sizes()
        return sizes[index % len(sizes)]

    def start_batch(self, numbers):
        self._inner.start_batch(numbers)

    def ladder(self, number):
        return self._inner.ladder(number)

    def first_epochs(self, number):
        return self._inner.first_epochs(number)

    def next_epochs(self, number):
        return self._inner.next_epochs(number)

    def report(self, number, epochs, accuracy, ok=True):
        return self._inner.report(number, epochs, accuracy, ok)

    def promotions(self, free):
        return self._inner.promotions(free)

    def sent_on(self, number, epochs):
        self._inner.sent_on(number, epochs)

    def releasable(self):
        return self._inner.releasable()

    def waiting(self):
        return self._inner.waiting()


class _SyncBrackets(SuccessiveHalving):
    """Successive halving whose batches are Hyperband's brackets, bracket ``s`` starting at
    rung ``s``."""

    def __init__(self, min_epochs, max_epochs, eta, sizes):
        super().__init__(min_epochs, max_epochs, eta)
        self.sizes = sizes
        self.batches = 0
        self.start_of: Dict[int, int] = {}

    def start_batch(self, numbers):
        bracket = self.batches % len(self.sizes)
        self.batches += 1
        for number in numbers:
            self.start_of[number] = bracket
        super().start_batch(numbers)

    def ladder(self, number):
        return rungs(self.min_epochs, self.max_epochs, self.eta)[self.start_of.get(number, 0):]


SCHEDULERS: Registry[type] = Registry(
    "scheduler",
    hint="Register yours with nord.search.schedulers.register_scheduler(name, cls) (for nord "
         "run: in a module given to --plugin, or an entry point of 'nord.schedulers')",
    plugins="nord.schedulers", base=Scheduler)
"""Scheduler name -> its Scheduler subclass."""


def register_scheduler(name: str, cls: Optional[type] = None, *, aliases: Sequence[str] = (),
                       description: str = "", overwrite: bool = False):
    """Make the Scheduler subclass ``cls`` available to :func:`make_scheduler` as ``name``;
    without ``cls``, a class decorator. Returns ``cls``; arguments and errors as
    :meth:`nord.registry.Registry.add`."""
    return SCHEDULERS.add(name, cls, aliases=aliases, description=description,
                          overwrite=overwrite)



def list_schedulers() -> List[str]:
    """Names of every registered scheduler, sorted (aliases not included)."""
    return SCHEDULERS.names()


def make_scheduler(name: str, **params) -> Scheduler:
    """A scheduler by name (``median``, ``sha``, ``asha``, ``hyperband``) with its settings.

    Raises:
        ConfigurationError: unknown name or setting, ``eta < 2``, ``min_epochs > max_epochs``.
    """
    cls = SCHEDULERS.get(name)
    try:
        return cls(**params)
    except TypeError as error:
        raise ConfigurationError(f"scheduler {SCHEDULERS.canonical(name)!r}: {error}") from None


register_scheduler("median", MedianStopping, aliases=("median-stopping",),
                   description="the median stopping rule at each rung")
register_scheduler("sha", SuccessiveHalving, aliases=("successive-halving",),
                   description="synchronous successive halving of each batch (sync mode)")
register_scheduler("asha", ASHA, description="asynchronous successive halving with promotions "
                   "of paused candidates (async mode)")
register_scheduler("hyperband", Hyperband,
                   description="brackets of successive halving starting at each rung")
