"""TrainToEnd, the scheduler of a run without early stopping: its answers to the engine, and
a run under it journals exactly what a run with ``scheduler=None`` journals (no legs, no
scheduler in the run record)."""
import sqlite3

import pytest

from nord.errors import ConfigurationError
from nord.search.algorithms.random_search import ASHASearch, RandomSearch
from nord.search.engine import run_search
from nord.search.schedulers import TrainToEnd, list_schedulers, make_scheduler
from tests.helpers.toy import ToyCurves, ToyEvaluator, ToySpace

CLOCKS = {"nord_schema": {"created"},
          "run": {"created", "updated", "heartbeat", "running_seconds"},
          "candidates": {"asked"},
          "evaluations": {"started", "ended", "train_time", "eval_time"},
          "epochs": {"seconds", "recorded"},
          "legs": {"started", "ended", "train_time"},
          "attempts": {"started"}}


def tables(path):
    """Every table of a journal, row by row, without the columns that hold times."""
    connection = sqlite3.connect(path)
    try:
        names = [name for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        dump = {}
        for name in names:
            cursor = connection.execute(f"SELECT * FROM {name}")
            columns = [column[0] for column in cursor.description]
            dump[name] = [{column: value for column, value in zip(columns, row)
                           if column not in CLOCKS.get(name, ())} for row in cursor]
        return dump
    finally:
        connection.close()


# --- its answers -----------------------------------------------------------------------------
def test_it_records_nothing_and_sizes_batches_as_a_run_without_a_scheduler():
    scheduler = TrainToEnd()
    assert scheduler.parameters() == {}
    assert scheduler.batch_size(0, None, 4) == 4     # one candidate per worker
    assert scheduler.batch_size(5, 3, 4) == 3        # the batch size given
    assert not scheduler.trains_in_legs
    assert make_scheduler("asha").trains_in_legs


def test_it_gives_no_first_leg_so_each_candidate_is_one_evaluation_to_the_end():
    scheduler = TrainToEnd()
    scheduler.start_batch([0, 1, 2])                 # nothing to prepare
    assert scheduler.first_epochs(0) is None
    assert make_scheduler("asha", min_epochs=1, max_epochs=9).first_epochs(0) == 1


def test_it_serves_what_an_early_stopping_rule_refuses():
    """A table look-up has no epochs to stop at: ASHA refuses it, training to the end does not."""
    algorithm, evaluator = RandomSearch(ToySpace(), seed=0), ToyEvaluator()
    with pytest.raises(ConfigurationError, match="does not train in epochs"):
        make_scheduler("asha").check_serves(algorithm, evaluator)
    scheduler = TrainToEnd()
    for mode in ("sync", "async"):
        scheduler.prepare(10, mode)
    scheduler.check_serves(algorithm, evaluator)


def test_an_algorithm_that_needs_a_scheduler_hears_no_scheduler_was_given():
    """The algorithms' rules are told None for it, so their refusal reads as before."""
    algorithm = ASHASearch(ToySpace(), seed=0)
    with pytest.raises(ConfigurationError) as expected:
        algorithm.check_scheduler(None)
    with pytest.raises(ConfigurationError) as refused:
        TrainToEnd().check_algorithm(algorithm)
    assert str(refused.value) == str(expected.value)
    assert "got no --scheduler" in str(refused.value)
    with pytest.raises(ConfigurationError, match="got no --scheduler"):
        run_search(algorithm, ToyEvaluator(), budget=2)
    make_scheduler("asha").check_algorithm(algorithm)   # the one it runs under


def test_it_is_not_a_name_users_give():
    assert TrainToEnd.name not in list_schedulers()
    with pytest.raises(ConfigurationError, match="unknown scheduler"):
        make_scheduler(TrainToEnd.name)


@pytest.mark.parametrize("scheduler", ["asha", make_scheduler, 0])
def test_a_scheduler_that_is_not_one_is_refused(scheduler):
    with pytest.raises(ConfigurationError, match="scheduler must be a Scheduler or None"):
        run_search(RandomSearch(ToySpace(), seed=0), ToyEvaluator(), budget=2,
                   scheduler=scheduler)


# --- the journal -----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_run_under_it_journals_what_a_run_without_a_scheduler_journals(tmp_path, mode):
    """Candidates that train epochs (learning curves, checkpoints within training) in the
    plain loop: the same rows in every table, no legs, ``{}`` as the run's scheduler."""
    dumps = []
    for name, scheduler in (("none", None), ("explicit", TrainToEnd())):
        path = tmp_path / f"{name}.db"
        summary = run_search(RandomSearch(ToySpace(), seed=3), ToyCurves(max_epochs=3),
                             budget=8, mode=mode, journal=path, scheduler=scheduler)
        assert summary.evaluations == 8
        assert summary.legs is None   # the plain loop ran, not the one that trains in legs
        dumps.append(tables(path))
        assert not (tmp_path / f"{name}.db.checkpoints").exists()
    without, under = dumps
    assert under == without
    assert under["legs"] == []
    assert len(under["evaluations"]) == 8 and len(under["epochs"]) >= 3 * 5
    (run,) = under["run"]
    assert run["scheduler"] == "{}"
    assert run["batch_size"] == (1 if mode == "sync" else None)
