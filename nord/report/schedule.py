"""What a scheduler did with a run's candidates, read from the journal's ``legs``.

Under a scheduler each candidate trains in legs, and at the end of each leg the scheduler
decides: continue, pause (wait at a rung for a promotion), stop, or done::

    from nord.report.schedule import candidate_fates, schedule_numbers

    fates = candidate_fates(run.legs)           # candidate -> Fate
    fates[12].state, fates[12].promotions       # 'finished', [1, 3]: promoted after 1 and 3 epochs
    schedule_numbers(run)["epochs_trained"]     # against "epochs_full": what a search without
                                                # a scheduler would have trained

A candidate's state is one of ``finished``, ``promoted``, ``paused``, ``stopped``,
``failed`` and ``training``. Details (what each state means): docs/report.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

__all__ = ["STATES", "Fate", "candidate_fates", "schedule_numbers"]

STATES = ("finished", "promoted", "paused", "stopped", "failed", "training")


@dataclass
class Fate:
    """How far a candidate trained and why it stopped there.

    Attributes:
        state: one of :data:`STATES`.
        epochs: the epochs its furthest ended leg reached.
        promotions: the epochs at which it was paused and later trained on.
    """

    state: str
    epochs: int
    promotions: List[int] = field(default_factory=list)


def candidate_fates(legs: Sequence[Mapping[str, Any]]) -> Dict[int, Fate]:
    """Each candidate's :class:`Fate`, from its legs (in the order handed out)."""
    by_candidate: Dict[int, List[Mapping[str, Any]]] = {}
    for leg in legs:
        by_candidate.setdefault(int(leg["candidate"]), []).append(leg)
    fates: Dict[int, Fate] = {}
    for candidate, its_legs in by_candidate.items():
        its_legs = sorted(its_legs, key=lambda leg: (leg["start_epochs"], leg["leg"]))
        # a pause followed by another leg is a promotion
        promotions = [int(leg["target_epochs"]) for leg in its_legs[:-1]
                      if leg.get("decision") == "pause"]
        ended = [leg for leg in its_legs if leg.get("ended_event") is not None]
        epochs = max((int(leg["target_epochs"]) for leg in ended
                      if leg.get("status") == "ok"), default=0)
        last = its_legs[-1]
        if last.get("ended_event") is None:
            state = "training"
        elif last.get("status") not in (None, "ok"):
            state = "failed"
        elif last.get("decision") == "done":
            state = "finished"
        elif promotions:
            state = "promoted"
        elif last.get("decision") == "pause":
            state = "paused"
        elif last.get("decision") == "stop":
            state = "stopped"
        else:   # 'continue' with no later leg: the run ended between two legs
            state = "training"
        fates[candidate] = Fate(state, epochs, promotions)
    return fates


def _max_epochs(metadata: Mapping[str, Any], fates: Mapping[int, Fate]) -> Optional[int]:
    scheduler = metadata.get("scheduler") or {}
    value = scheduler.get("max_epochs") if isinstance(scheduler, Mapping) else None
    if value is None:
        value = max((fate.epochs for fate in fates.values()), default=None)
    return None if value is None else int(value)


def schedule_numbers(run) -> Optional[Dict[str, Any]]:
    """What the scheduler saved, for the report (None for a run without one).

    Keys: ``scheduler`` (its name), ``max_epochs``, ``candidates`` (candidates trained),
    ``epochs_trained`` (epochs of every ok leg), ``epochs_full`` (candidates x
    ``max_epochs``: what the same candidates would have cost without a scheduler),
    ``fraction`` (trained / full), ``states`` (candidates per :data:`STATES` entry),
    ``legs`` and ``unusable_checkpoints`` (legs that could not resume their checkpoint and
    trained again from scratch).
    """
    if not run.legs:
        return None
    fates = candidate_fates(run.legs)
    max_epochs = _max_epochs(run.metadata, fates)
    trained = sum(max(0, int(leg["target_epochs"]) - int(leg["start_epochs"]))
                  for leg in run.legs
                  if leg.get("ended_event") is not None and leg.get("status") == "ok")
    full = len(fates) * max_epochs if max_epochs else None
    scheduler = run.metadata.get("scheduler") or {}
    return {
        "scheduler": scheduler.get("scheduler") if isinstance(scheduler, Mapping) else None,
        "max_epochs": max_epochs,
        "candidates": len(fates),
        "legs": len(run.legs),
        "unusable_checkpoints": sum(bool(leg.get("detail")) for leg in run.legs),
        "epochs_trained": trained,
        "epochs_full": full,
        "fraction": trained / full if full else None,
        "states": {state: sum(f.state == state for f in fates.values()) for state in STATES},
    }
