"""The settings of a run, in three named groups: what bounds it (:class:`Limits`), how its
candidates train (:class:`Training`) and what it tells as it goes (:class:`Reporting`).

The objects hold what was given; ``run_search`` checks it (docs/engine.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from nord.search.engine.outcomes import RunInfo, SearchProgress
from nord.search.schedulers import Scheduler, TrainToEnd

__all__ = ["Limits", "Training", "Reporting", "MAX_ATTEMPTS"]

MAX_ATTEMPTS = 2
"""How often a candidate's evaluation may kill the run's process (the out-of-memory killer's
SIGKILL) without finishing an epoch in between, before a resume records it as failed instead
of handing it out again."""


@dataclass(frozen=True)
class Limits:
    """What bounds a run: the first limit reached ends it, and the run says which.

    Attributes:
        budget: results to tell the algorithm, cached and failed ones included.
        time_budget: seconds of the run's own running time, its earlier sessions included
            (journaled), after which no candidate is started or promoted; those in training
            finish (None: no limit). A resume may give a larger one.
        target: a search-signal accuracy that ends the run in the same way once a told
            result reaches it (None: none).
    """

    budget: int = 100
    time_budget: Optional[float] = None
    target: Optional[float] = None


@dataclass(frozen=True)
class Training:
    """How candidates train, and what is kept of them while they do.

    Attributes:
        scheduler: a :class:`~nord.search.schedulers.Scheduler` that decides how far each
            candidate trains (early stopping), fresh from ``make_scheduler``: one that has
            decided for another run is refused, and a resume too takes a fresh one, which the
            engine rebuilds from the journal. None: no early stopping, every candidate trains
            once, as far as its evaluator says (the engine runs
            :class:`~nord.search.schedulers.TrainToEnd` for it).
        checkpoint_every: epochs between the checkpoints of a candidate in training (0:
            none), in ``<journal>.checkpoints``: a resumed run goes on from them, so that no
            epoch is trained twice (evaluators that train in legs; without a journal, only a
            scheduler's pauses are kept). A candidate's checkpoint is deleted when it ends.
        max_attempts: how often a candidate's evaluation may kill the run's process (``kill
            -9``, the out-of-memory killer) before a resume records it as failed instead of
            evaluating it again (counted in the journal; with a scheduler, per leg: the leg
            becomes a failed result at its rung).
    """

    scheduler: Union[Scheduler, TrainToEnd, None] = None
    checkpoint_every: int = 1
    max_attempts: int = MAX_ATTEMPTS


@dataclass(frozen=True)
class Reporting:
    """What a run tells as it goes, besides its journal.

    Attributes:
        on_result: called with a :class:`~nord.search.engine.outcomes.SearchProgress` after
            each result told (on the rank that runs the engine).
        on_epoch: called with ``(candidate number, EpochRecord)`` as each epoch of training
            ends (on the engine's rank).
        info: what the journal records besides the engine's own knowledge
            (:class:`~nord.search.engine.outcomes.RunInfo`; None: nothing more).
    """

    on_result: Optional[Callable[[SearchProgress], None]] = None
    on_epoch: Optional[Callable[[int, Any], None]] = None
    info: Optional[RunInfo] = None
