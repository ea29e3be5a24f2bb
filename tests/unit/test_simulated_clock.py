"""The simulated clock: N virtual workers, costs, sync and async order, the time budget.

The hand-computed case: two workers, four architectures in this order, each costing its
width in seconds: A = (2, 1) 2 s, B = (6, 1) 6 s, C = (3, 1) 3 s, D = (2, 2) 2 s.

* sync (generations of two): A and B start at 0 and end at 2 and 6; the barrier waits for B;
  C and D start at 6 and end at 9 and 8. Told A, B, C, D; the run ends at 9.
* async: A (worker 0) 0-2, B (worker 1) 0-6; at 2 worker 0 takes C, 2-5; at 5 it takes D,
  5-7. Told A, C, B, D; the run ends at 7.
"""
import math

import pytest

from nord.errors import ConfigurationError
from nord.journal import Journal
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.engine import run_search
from nord.search.executors import SimulatedExecutor
from tests.helpers.toy import ToyEvaluator, ToySpace

A, B, C, D = (2, 1), (6, 1), (3, 1), (2, 2)


class Scripted(SearchAlgorithm):
    """Proposes the given genomes in order, then is finished."""

    name = "scripted"

    def __init__(self, genomes):
        super().__init__(ToySpace(), seed=0)
        self.genomes = list(genomes)

    @property
    def finished(self):
        return self.asked >= len(self.genomes)

    def _ask(self):
        return Candidate(self.genomes[self.asked])

    def _tell(self, candidate, result):
        pass


def width_seconds(result):
    return float(result.metrics["width"])


def simulate(mode, genomes=(A, B, C, D), journal=None, **settings):
    settings.setdefault("workers", 2)
    executor = SimulatedExecutor(ToyEvaluator(), cost=width_seconds, **settings)
    told = []
    summary = run_search(Scripted(genomes), executor=executor, budget=100, mode=mode,
                         journal=journal,
                         on_result=lambda progress: told.append(
                             (progress.outcome.candidate.genome, progress.outcome.started,
                              progress.outcome.ended, progress.outcome.worker_rank)))
    return executor, summary, told


def test_sync_waits_for_the_slowest_of_a_generation():
    executor, summary, told = simulate("sync")
    assert told == [(A, 0, 2, 0), (B, 0, 6, 1), (C, 6, 9, 0), (D, 6, 8, 1)]
    assert executor.now() == 9
    assert executor.utilisation() == pytest.approx(13 / 18)


def test_async_hands_the_freed_worker_the_next_candidate():
    executor, summary, told = simulate("async")
    assert told == [(A, 0, 2, 0), (C, 2, 5, 0), (B, 0, 6, 1), (D, 5, 7, 0)]
    assert executor.now() == 7
    assert executor.utilisation() == pytest.approx(13 / 14)
    assert summary.evaluations == 4 and not summary.time_budget_spent


def test_overhead_is_added_to_every_evaluation():
    executor, _, told = simulate("sync", overhead=0.5)
    assert [ended for _, _, ended, _ in told] == [2.5, 6.5, 10, 9]
    assert executor.now() == 10


def test_one_worker_runs_everything_in_turn():
    executor, _, told = simulate("async", workers=1)
    assert [(started, ended) for _, started, ended, _ in told] == [(0, 2), (2, 8), (8, 11),
                                                                    (11, 13)]


def test_a_repeat_costs_no_time():
    executor, summary, told = simulate("async", genomes=(A, A, B))
    assert summary.cached == 1 and executor.now() == 6


def test_the_time_budget_ends_the_run_as_finished(tmp_path):
    path = tmp_path / "run.db"
    executor, summary, told = simulate("async", journal=path, time_budget=6)
    assert [genome for genome, *_ in told] == [A, C, B]     # D would end at 7
    assert summary.time_budget_spent and summary.evaluations == 3
    assert executor.now() == 6 and executor.abandoned == 1
    assert executor.utilisation() == pytest.approx((2 + 3 + 6 + 1) / 12)
    with Journal(path) as journal:
        assert journal.metadata()["status"] == "finished"
        times = sorted((row["started"], row["ended"]) for row in journal.evaluations())
    assert times == [(0, 2), (0, 6), (2, 5)]     # simulated seconds, not wall-clock


def test_sync_budget_abandons_the_unfinished_generation():
    executor, summary, told = simulate("sync", time_budget=8.5)
    assert [genome for genome, *_ in told] == [A, B]   # D came back at 8, C not before 9
    assert summary.time_budget_spent and executor.now() == 8.5


def test_compute_time_is_charged_when_asked():
    charged, _, _ = simulate("async", charge_compute=True)
    assert 7 < charged.now() < 8


@pytest.mark.parametrize("settings, flag", [
    ({"workers": 0}, "workers"), ({"overhead": -1}, "overhead"),
    ({"time_budget": math.inf}, "time_budget"), ({"time_budget": "1h"}, "time_budget")])
def test_bad_settings_name_the_setting(settings, flag):
    with pytest.raises(ConfigurationError, match=flag):
        SimulatedExecutor(ToyEvaluator(), **settings)
