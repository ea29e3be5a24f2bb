"""The settings of a run, in three named groups that ``run_search`` takes as keywords::

    from nord.search.engine import Limits, Reporting, Training, run_search
    run_search(algorithm, evaluator, journal="runs/asha.db", mode="async",
               limits=Limits(budget=200, time_budget=3600),
               training=Training(scheduler=make_scheduler("asha", max_epochs=27)),
               reporting=Reporting(on_result=print))

Each field is also accepted as a keyword of its own (``budget=200`` is
``limits=Limits(budget=200)``), so keyword calls written before the groups existed work
unchanged (everything after the evaluator is keyword-only).
The objects hold what was given; ``run_search`` checks it (docs/engine.md).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

from nord.errors import ConfigurationError
from nord.search.engine.outcomes import RunInfo, SearchProgress
from nord.search.schedulers import Scheduler, TrainToEnd

__all__ = ["Limits", "Training", "Reporting", "MAX_ATTEMPTS", "gather_settings"]

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


GROUPS: Dict[str, type] = {"limits": Limits, "training": Training, "reporting": Reporting}
"""run_search's keyword for each settings group."""

SHORTHANDS: Dict[str, str] = {field.name: keyword for keyword, group in GROUPS.items()
                              for field in fields(group)}
"""Each setting accepted as a keyword of its own -> the keyword of its group."""


def gather_settings(limits: Optional[Limits], training: Optional[Training],
                    reporting: Optional[Reporting],
                    shorthands: Mapping[str, Any]) -> Tuple[Limits, Training, Reporting]:
    """The three groups of a run's settings, each setting given as a keyword of its own
    (``budget=100``) put in its group; a group not given has its defaults.

    Raises:
        TypeError: a keyword that is no setting (as Python says of any unknown keyword).
        ConfigurationError: a group that is not its settings class, or a setting given as a
            keyword beside its group's object (it would be given twice).
    """
    unknown = [name for name in shorthands if name not in SHORTHANDS]
    if unknown:
        raise TypeError(
            f"run_search() got an unexpected keyword argument {unknown[0]!r}; its settings "
            f"are {', '.join(SHORTHANDS)} (each also in limits=, training= or reporting=)")
    given = {"limits": limits, "training": training, "reporting": reporting}
    for keyword, group in GROUPS.items():
        if given[keyword] is not None and not isinstance(given[keyword], group):
            raise ConfigurationError(
                f"{keyword} must be a {group.__name__} (from nord.search.engine) or None; got "
                f"{type(given[keyword]).__name__}: {given[keyword]!r:.80}")
        mine = {name: value for name, value in shorthands.items() if SHORTHANDS[name] == keyword}
        if mine and given[keyword] is not None:
            name = next(iter(mine))
            raise ConfigurationError(
                f"{name}={mine[name]!r} was given beside {keyword}={given[keyword]!r}, which "
                f"holds {name} too; give each setting once: in {keyword}="
                f"{group.__name__}({name}=...), or as {name}= without {keyword}=")
        given[keyword] = replace(given[keyword] or group(), **mine)
    return given["limits"], given["training"], given["reporting"]
