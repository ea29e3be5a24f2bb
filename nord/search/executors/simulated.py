"""SimulatedExecutor: N virtual workers on a simulated clock, in one process.

Each evaluation occupies one virtual worker for its cost (plus a fixed ``overhead``) and a
``time_budget`` ends the run, so the engine that runs real searches shows how a search
would have fared on a cluster of ``workers`` GPUs::

    from nord.benchmarks import BenchmarkEvaluator
    from nord.search import RegularizedEvolution, run_search
    from nord.search.executors import SimulatedExecutor

    executor = SimulatedExecutor(BenchmarkEvaluator("cifar10"), workers=8, time_budget=20_000)
    summary = run_search(algorithm, executor=executor, budget=10**9, mode="async")
    executor.now()            # simulated seconds used; executor.utilisation(): busy share

Details (the two modes, cost, the time budget): docs/executors.md.
"""
from __future__ import annotations

import math
import time
from heapq import heappop, heappush
from typing import Any, Callable, Dict, List, Optional, Tuple

from nord.checks import check_int
from nord.errors import ConfigurationError
from nord.evaluators.result import EvaluationResult
from nord.search.executors.base import Completion, Executor, Task, TimeBudgetSpent

__all__ = ["SimulatedExecutor", "REPEATS"]

REPEATS = ("charge", "free")
"""How a simulated clock charges a repeat of an architecture evaluated earlier in the run."""

Cost = Callable[[EvaluationResult], float]


def _check_seconds(value: Any, name: str, allow_none: bool = False) -> Optional[float]:
    if value is None and allow_none:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value < 0):
        rule = "a number of seconds >= 0" + (" or None" if allow_none else "")
        raise ConfigurationError(f"{name} must be {rule}; got {value!r}")
    return float(value)


class SimulatedExecutor(Executor):
    """Evaluates in this process, on ``workers`` virtual workers with a simulated clock.

    Args:
        evaluator: answers each task at once (a tabular benchmark's evaluator).
        workers: virtual workers evaluating side by side (>= 1).
        cost: ``cost(result)`` -> simulated seconds an evaluation occupies its worker;
            None: the evaluator's ``evaluation_cost``, else ``train_time + eval_time``.
        overhead: fixed seconds added to every evaluation (start-up, data loading).
        time_budget: simulated seconds after which the run ends (None: no limit).
        charge_compute: advance the clock by this process's real seconds between results.
        repeats: 'free' (a repeat of an architecture the run evaluated is answered from the
            engine's cache, at no simulated time) or 'charge' (it occupies a worker for its
            cost, as a benchmark charges every query).
        on_complete: called with each :class:`Completion` as ``wait`` returns it (every leg
            of training, where a scheduler trains in legs), or None.

    Raises:
        ConfigurationError: workers, overhead or time_budget out of range.
    """

    def __init__(self, evaluator, workers: int = 1, cost: Optional[Cost] = None,
                 overhead: float = 0.0, time_budget: Optional[float] = None,
                 charge_compute: bool = False, repeats: str = "free",
                 on_complete: Optional[Callable[[Completion], None]] = None):
        self.evaluator = evaluator
        self.workers = check_int(workers, "workers (virtual workers of the simulated clock)", 1)
        self.cost = cost
        self.overhead = _check_seconds(overhead, "overhead (seconds added to each evaluation)")
        self.time_budget = _check_seconds(time_budget, "time_budget (simulated seconds)",
                                          allow_none=True)
        self.charge_compute = bool(charge_compute)
        if repeats not in REPEATS:
            raise ConfigurationError(
                f"repeats must be one of {', '.join(REPEATS)} (free: the cache answers a "
                f"repeat at no simulated time; charge: it costs its evaluation); got {repeats!r}")
        self.repeats = repeats
        self.charges_repeats = repeats == "charge"
        self.on_complete = on_complete
        self._reset()

    def _reset(self) -> None:
        self._clock = 0.0
        self._busy = 0.0                       # worker-seconds of finished evaluations
        self._heap: List[Tuple[float, int, int, float, int, EvaluationResult]] = []
        self._free: List[int] = list(range(self.workers))   # a heap of idle worker numbers
        self._submitted = 0
        self._completed = 0
        self._abandoned = 0
        self._mark = time.perf_counter()
        self._cost = self._cost_function()

    def _cost_function(self) -> Cost:
        if self.cost is not None:
            return self.cost
        cost = getattr(self.evaluator, "evaluation_cost", None)
        if cost is not None:
            return cost
        return lambda result: result.train_time + result.eval_time

    # --- the clock ------------------------------------------------------------------------
    def now(self) -> float:
        """Simulated seconds since the search started."""
        if self.charge_compute:
            self._charge()
        return self._clock

    def _charge(self) -> None:
        mark = time.perf_counter()
        self._clock += mark - self._mark
        self._mark = mark

    def busy_time(self) -> float:
        """Worker-seconds spent evaluating, evaluations in flight up to now included."""
        clock = self._clock
        return self._busy + sum(clock - started for _, _, _, started, _, _ in self._heap
                                if started < clock)

    def utilisation(self) -> float:
        """Busy share of the workers' time so far (NaN before any time has passed)."""
        if self._clock <= 0:
            return math.nan
        return self.busy_time() / (self.workers * self._clock)

    @property
    def paid(self) -> float:
        """Worker-seconds of the evaluations that finished (charged repeats included)."""
        return self._busy

    @property
    def completed(self) -> int:
        """Evaluations that finished within the time budget."""
        return self._completed

    @property
    def abandoned(self) -> int:
        """Evaluations in flight when the time budget ended the run."""
        return self._abandoned

    def end_now(self) -> None:
        """End the run at the current simulated time: the next ``wait`` raises
        ``TimeBudgetSpent`` unless a result is due at this very moment (e.g. a search that
        reached its goal)."""
        self.time_budget = self._clock

    # --- the executor interface -----------------------------------------------------------
    @property
    def n_workers(self) -> int:
        return self.workers

    @property
    def in_flight(self) -> int:
        return len(self._heap)

    @property
    def free_slots(self) -> int:
        return self.workers - len(self._heap)

    def start(self) -> None:
        self._reset()

    def submit(self, task: Task) -> None:
        if self.charge_compute:
            self._charge()
        result = task.answer
        if result is None:
            if self.on_epoch is not None:
                self._local_report(task, 0)
            result = self.evaluator.evaluate_task(task)
        started = self._clock
        ended = started + self._cost(result) + self.overhead
        worker = heappop(self._free)
        # the submission count breaks ties of equal finish times: first handed out, first back
        heappush(self._heap, (ended, self._submitted, task.number, started, worker, result))
        self._submitted += 1

    def wait(self) -> Completion:
        if self.charge_compute:
            self._charge()
        ended, _, number, started, worker, result = self._heap[0]
        if self.time_budget is not None and ended > self.time_budget:
            self._clock = max(self._clock, self.time_budget)
            self._abandoned = len(self._heap)
            raise TimeBudgetSpent(self.time_budget, self._clock)
        heappop(self._heap)
        heappush(self._free, worker)
        if ended > self._clock:
            self._clock = ended
        self._busy += ended - started
        self._completed += 1
        if self.charge_compute:
            self._mark = time.perf_counter()
        done = Completion(number, result, worker, started, ended)
        if self.on_complete is not None:
            self.on_complete(done)
        return done

    def describe(self) -> Dict[str, Any]:
        return {"ranks": 1, "groups": 1, "workers": self.workers,
                "worker_ranks": list(range(self.workers)), "simulated": True,
                "overhead": self.overhead, "time_budget": self.time_budget,
                "charge_compute": self.charge_compute, "repeats": self.repeats}
