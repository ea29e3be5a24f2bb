"""When a run stops asking for candidates: one rule for every limit a run can have.

The evaluation budget, a time budget (the run's own running time, summed over its sessions),
a target accuracy and the algorithm's own end are checked in one place, before every new
candidate and every promotion; the first that is reached ends the run, and the run says
which::

    stopping = Stopping(budget=100000, time_budget=20.0)
    stopping.start(spent_before=0.0)
    ...
    if stopping.limit() is not None:
        ...   # ask for nothing more; what is in flight finishes

Candidates already in training when a limit is reached finish (their results are told and
journaled): a time budget can therefore be overrun by the longest candidate in flight. The
simulated clock's budget (``SimulatedExecutor(time_budget=...)``) ends the run from the
executor instead, abandoning what is in flight, and is reported the same way.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Optional

from nord.errors import ConfigurationError

__all__ = ["Stopping", "format_duration"]


def format_duration(seconds: float) -> str:
    """``'20 s'``, ``'30 min'``, ``'8 h'``: a budget as a person gave it."""
    for unit, size in (("h", 3600.0), ("min", 60.0)):
        if seconds >= size and (seconds / size) == round(seconds / size, 2):
            return f"{seconds / size:g} {unit}"
    return f"{seconds:g} s"


class Stopping:
    """The limits of a run, and which of them ended it.

    Args:
        budget: results to tell the algorithm (checked by ``run_search``, which makes this).
        time_budget: seconds of the run's own running time, its earlier sessions included
            (None: no limit).
        target: a search-signal accuracy that ends the run once a candidate reaches it
            (None: none).
        clock: seconds, monotonic (default ``time.monotonic``, looked up at each call).
    """

    def __init__(self, budget: int, time_budget: Optional[float] = None,
                 target: Optional[float] = None, clock: Optional[Callable[[], float]] = None):
        if time_budget is not None and not (isinstance(time_budget, (int, float))
                                             and not isinstance(time_budget, bool)
                                             and math.isfinite(time_budget) and time_budget > 0):
            raise ConfigurationError(
                f"time_budget must be a positive number of seconds or None; got {time_budget!r}")
        if target is not None and not (isinstance(target, (int, float))
                                       and not isinstance(target, bool) and math.isfinite(target)):
            raise ConfigurationError(f"target must be a finite accuracy or None; got {target!r}")
        self.budget = budget
        self.time_budget = None if time_budget is None else float(time_budget)
        self.target = None if target is None else float(target)
        self.clock = clock if clock is not None else (lambda: time.monotonic())
        self.limited = self.time_budget is not None or self.target is not None
        """Whether a limit besides the evaluation budget may end the run."""
        self.spent_before = 0.0
        self.started = self.clock()
        self.reason: Optional[str] = None
        self.target_reached_by: Optional[int] = None

    def start(self, spent_before: float = 0.0) -> None:
        """This session begins, after ``spent_before`` seconds of earlier sessions."""
        self.spent_before = float(spent_before or 0.0)
        self.started = self.clock()

    def running_time(self) -> float:
        """Seconds the run has run, its earlier sessions included."""
        return self.spent_before + (self.clock() - self.started)

    def told(self, number: int, accuracy: float, ok: bool) -> None:
        """A result was told: does it reach the target?"""
        if (ok and self.target is not None and self.target_reached_by is None
                and accuracy is not None and accuracy >= self.target):
            self.target_reached_by = number

    def limit(self) -> Optional[str]:
        """Why the run asks for nothing more, a time budget or a target reached (said once
        and kept), or None while it may go on; the evaluation budget is the loops' own
        count (a synchronous batch is sized by it)."""
        if self.reason is None:
            if self.target_reached_by is not None:
                self.reason = (f"the target accuracy {self.target:g} was reached by "
                               f"candidate {self.target_reached_by}")
            elif self.time_budget is not None and self.running_time() >= self.time_budget:
                self.reason = (f"the time budget of {format_duration(self.time_budget)} was "
                               f"spent ({self.running_time():.1f} s of running time)")
        return self.reason

    def ended_by(self, told: int, algorithm_finished: bool, clock_spent: bool) -> str:
        """What ended the run, in words, for its closing line and summary. A target reached
        is said even where the same result spent the budget (no ask came between to note
        it): it is the more telling of the two."""
        if clock_spent:
            return "the simulated clock's time budget was spent"
        if self.reason is None and self.target_reached_by is not None:
            self.limit()
            if told >= self.budget:
                self.reason += f" (and the evaluation budget of {self.budget} was spent)"
        if self.reason is not None:
            return self.reason
        if told >= self.budget:
            return f"the evaluation budget of {self.budget} was spent"
        if algorithm_finished:
            return "the algorithm finished"
        return "the algorithm proposed no more candidates"
