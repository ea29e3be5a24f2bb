"""Schedulers: rungs, decisions, fairness at a rung, promotions, releases, bad settings."""
import math

import pytest

from nord.errors import ConfigurationError
from nord.search.schedulers import (ASHA, CONTINUE, DONE, PAUSE, STOP, Hyperband, MedianStopping,
                                    SuccessiveHalving, make_scheduler, rungs)


def test_rungs_are_eta_apart_up_to_max_epochs():
    assert rungs(1, 27, 3) == [1, 3, 9, 27]
    assert rungs(2, 20, 3) == [2, 6, 18, 20]
    assert rungs(5, 5, 2) == [5]


@pytest.mark.parametrize("settings, message", [
    ({"eta": 1}, "eta must be an integer >= 2"),
    ({"min_epochs": 9, "max_epochs": 3}, r"min_epochs \(9\) must not exceed max_epochs \(3\)"),
    ({"min_epochs": 0}, "min_epochs must be an integer >= 1"),
    ({"max_epochs": 2.5}, "max_epochs must be an integer"),
])
def test_bad_settings_name_the_setting(settings, message):
    with pytest.raises(ConfigurationError, match=message):
        make_scheduler("asha", **settings)


@pytest.mark.parametrize("name, mode", [("asha", "sync"), ("sha", "async")])
def test_a_mode_the_scheduler_cannot_serve_is_refused_with_the_alternatives(name, mode):
    with pytest.raises(ConfigurationError, match=f"not in {mode} mode") as refused:
        make_scheduler(name).prepare(100, mode)
    assert "--mode" in str(refused.value)


def test_make_scheduler_comes_from_nord_search_beside_run_search():
    """Where make_algorithm and run_search come from, and where the refusals send people."""
    import nord.search
    from nord.search import list_schedulers, make_scheduler as made_here, register_scheduler
    from nord.search import schedulers
    assert made_here is make_scheduler
    assert list_schedulers is schedulers.list_schedulers
    assert register_scheduler is schedulers.register_scheduler
    assert {"make_scheduler", "list_schedulers", "register_scheduler"} <= set(nord.search.__all__)


def test_an_unknown_scheduler_lists_the_valid_ones():
    with pytest.raises(ConfigurationError, match="asha.*hyperband.*median.*sha"):
        make_scheduler("bohb")


# --- ASHA ------------------------------------------------------------------------------------
def asha(budget=100, **settings):
    scheduler = ASHA(**{"min_epochs": 1, "max_epochs": 9, "eta": 3, **settings})
    scheduler.prepare(budget, "async")
    return scheduler


def reach(scheduler, number, epochs, accuracy):
    if number not in scheduler.epochs:
        scheduler.first_epochs(number)
    return scheduler.report(number, epochs, accuracy)


def test_asha_pauses_at_a_rung_and_waits_for_eta_candidates_before_promoting():
    scheduler = asha()
    assert scheduler.first_epochs(0) == 1
    assert reach(scheduler, 0, 1, 0.9) == PAUSE
    assert scheduler.promotions(4) == []        # the first candidate is not waved through
    reach(scheduler, 1, 1, 0.5)
    assert scheduler.promotions(4) == []
    reach(scheduler, 2, 1, 0.7)
    assert scheduler.promotions(4) == [(0, 3)]  # the best of three goes on to rung 3
    assert scheduler.promotions(4) == []        # and only once


def test_the_first_candidate_can_be_stopped_when_later_ones_are_better():
    scheduler = asha(budget=6)
    for number, accuracy in enumerate([0.2, 0.9, 0.8, 0.7, 0.6, 0.5]):
        reach(scheduler, number, 1, accuracy)
    promoted = [n for n, _ in scheduler.promotions(10)]
    assert promoted == [1, 2] and 0 not in promoted
    assert 0 in scheduler.releasable()          # 6 candidates at most: 2 slots, it is 6th


def test_a_rung_compares_only_candidates_that_reached_it():
    scheduler = asha()
    for number, accuracy in enumerate([0.5, 0.4, 0.3]):
        reach(scheduler, number, 1, accuracy)
    assert scheduler.promotions(1) == [(0, 3)]
    reach(scheduler, 0, 3, 0.1)                 # a poor score at rung 3 ...
    for number, accuracy in ((3, 0.45), (4, 0.35), (5, 0.2)):
        reach(scheduler, number, 1, accuracy)
    # ... changes nothing at rung 1: the next best there is candidate 3 (0.45), not 0
    assert scheduler.promotions(1) == [(3, 3)]


def test_asha_promotes_the_highest_rungs_first_and_finishes_at_max_epochs():
    scheduler = asha()
    for number in range(9):
        reach(scheduler, number, 1, 0.1 * number)
    promoted = scheduler.promotions(3)
    assert promoted == [(8, 3), (7, 3), (6, 3)]
    for number, _ in promoted:
        reach(scheduler, number, 3, 0.1 * number)
    assert scheduler.promotions(1) == [(8, 9)]
    assert reach(scheduler, 8, 9, 0.95) == DONE


def test_a_failed_candidate_stops_and_is_never_promoted():
    scheduler = asha()
    scheduler.first_epochs(0)
    assert scheduler.report(0, 1, math.nan, ok=False) == STOP
    for number in (1, 2):
        reach(scheduler, number, 1, 0.1)
    assert [n for n, _ in scheduler.promotions(3)] == []


def test_asha_releases_candidates_the_budget_can_never_promote():
    scheduler = asha(budget=9)
    for number in range(9):
        reach(scheduler, number, 1, 0.1 * number)
    # 9 candidates at rung 1 at most: 3 slots; the 6 worst can go
    assert sorted(scheduler.releasable()) == [0, 1, 2, 3, 4, 5]
    assert sorted(scheduler.waiting()) == [6, 7, 8]


# --- SHA, Hyperband, median ------------------------------------------------------------------
def test_sha_decides_a_rung_once_the_whole_batch_reported():
    scheduler = SuccessiveHalving(min_epochs=1, max_epochs=9, eta=3)
    scheduler.prepare(9, "sync")
    batch = list(range(9))
    scheduler.start_batch(batch)
    for number in batch:
        assert scheduler.first_epochs(number) == 1
    for number in batch[:-1]:
        assert scheduler.report(number, 1, 0.1 * number) == PAUSE
        assert scheduler.promotions(9) == []
    scheduler.report(8, 1, 0.8)
    assert scheduler.promotions(9) == [(8, 3), (7, 3), (6, 3)]
    assert sorted(scheduler.releasable()) == [0, 1, 2, 3, 4, 5]
    for number in (8, 7, 6):
        scheduler.report(number, 3, 0.1 * number)
    assert scheduler.promotions(9) == [(8, 9)]
    assert scheduler.report(8, 9, 0.9) == DONE and scheduler.promotions(9) == []


def test_sha_keeps_at_least_the_best_candidate_of_a_small_batch():
    scheduler = SuccessiveHalving(min_epochs=1, max_epochs=9, eta=3)
    scheduler.prepare(4, "sync")
    scheduler.start_batch([0, 1, 2, 3])
    for number in range(4):
        scheduler.first_epochs(number)
        scheduler.report(number, 1, [0.3, 0.9, 0.1, 0.5][number])
    assert scheduler.promotions(4) == [(1, 3)]                 # 4 // 3 = 1
    scheduler.report(1, 3, 0.95)
    assert scheduler.promotions(4) == [(1, 9)]                 # 1 // 3 = 0, yet one goes on


def test_sha_batches_default_to_what_halves_down_to_one():
    scheduler = SuccessiveHalving(min_epochs=1, max_epochs=27, eta=3)    # rungs 1, 3, 9, 27
    assert scheduler.batch_size(0, None, 2) == 27
    assert scheduler.batch_size(0, 10, 2) == 10                         # the one given
    assert MedianStopping(max_epochs=9).batch_size(0, None, 4) == 4     # one per worker


@pytest.mark.parametrize("order", [[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0], [2, 5, 0, 3, 1, 4]])
def test_sha_breaks_ties_by_candidate_not_by_which_worker_finished_first(order):
    scheduler = SuccessiveHalving(min_epochs=1, max_epochs=9, eta=3)
    scheduler.prepare(6, "sync")
    scheduler.start_batch(list(range(6)))
    for number in range(6):
        scheduler.first_epochs(number)
    for number in order:
        scheduler.report(number, 1, 0.5)                       # all equal
    assert scheduler.promotions(6) == [(0, 3), (1, 3)]


def test_sha_promotes_no_failed_candidate():
    scheduler = SuccessiveHalving(min_epochs=1, max_epochs=9, eta=3)
    scheduler.prepare(2, "sync")
    scheduler.start_batch([0, 1])
    for number in range(2):
        scheduler.first_epochs(number)
        assert scheduler.report(number, 1, None, ok=False) == STOP
    assert scheduler.promotions(2) == []


def test_hyperband_brackets_follow_li_et_al():
    scheduler = Hyperband(min_epochs=1, max_epochs=27, eta=3)
    assert scheduler.bracket_sizes() == [27, 12, 6, 4]
    scheduler.prepare(100, "sync")
    assert [scheduler.batch_size(i, 10, 2) for i in range(5)] == [27, 12, 6, 4, 27]
    scheduler.start_batch(list(range(27)))
    assert scheduler.first_epochs(0) == 1
    scheduler.start_batch(list(range(27, 39)))
    assert scheduler.first_epochs(27) == 3      # the second bracket starts a rung later


def test_async_hyperband_deals_candidates_to_its_brackets_in_turn():
    scheduler = Hyperband(min_epochs=1, max_epochs=27, eta=3)
    scheduler.prepare(100, "async")
    assert [scheduler.first_epochs(n) for n in range(5)] == [1, 3, 9, 27, 1]


def test_the_median_rule_stops_below_the_median_of_those_at_the_rung():
    scheduler = MedianStopping(min_epochs=1, max_epochs=9, eta=3, min_candidates=2)
    scheduler.prepare(10, "async")
    for number in range(4):
        scheduler.first_epochs(number)
    assert scheduler.report(0, 1, 0.5) == CONTINUE    # nobody to compare with yet
    assert scheduler.report(1, 1, 0.1) == CONTINUE
    assert scheduler.report(2, 1, 0.2) == STOP        # median of 0.5 and 0.1 is 0.3
    assert scheduler.report(3, 1, 0.4) == CONTINUE
    assert scheduler.report(0, 3, 0.2) == CONTINUE    # alone at rung 3
    assert scheduler.report(0, 9, 0.6) == DONE


def test_a_rung_ranks_as_a_stable_sort_of_its_scores_while_candidates_arrive():
    """Best first, equal scores in order of first arrival; a candidate that arrives again
    keeps its place among equals and takes its new score; failures are listed apart."""
    import math
    import random

    from nord.search.schedulers import _Rung

    draw = random.Random(0)
    rung, scores = _Rung(), {}
    for _ in range(300):
        number = draw.randrange(120)
        score = draw.choice([0.1, 0.2, 0.3, -math.inf, draw.random()])
        rung.add(number, score)
        scores[number] = score
        expected = sorted(scores, key=lambda n: -scores[n])
        assert rung.ranked() == expected and rung.ranked(7) == expected[:7]
    assert set(rung.failed) == {n for n in scores if scores[n] == -math.inf}
