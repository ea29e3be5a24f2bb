"""How the engine writes a run: one recorder whatever the journal, and a journal of nothing."""
import pytest

from nord.errors import ConfigurationError
from nord.evaluators.result import EpochRecord, EvaluationResult
from nord.journal import LegRecord
from nord.journal.recorder import NoJournal, RunRecorder, recorder_for
from nord.search.algorithms.base import Candidate
from nord.search.algorithms.random_search import RandomSearch
from nord.search.engine import Outcome, run_search
from tests.helpers.toy import ToyEvaluator, ToySpace


class Calls:
    """A journal that keeps what it is asked to record."""

    def __init__(self):
        self.calls = []

    def record(self, *rows):
        self.calls.append(rows)


def test_a_run_without_a_journal_keeps_nothing_and_cannot_be_resumed():
    with pytest.raises(ConfigurationError, match="resume=True continues a run from its "
                                                 "journal, and none was given"):
        run_search(RandomSearch(ToySpace(), seed=0), ToyEvaluator(), budget=3, resume=True)
    with pytest.raises(ConfigurationError, match="none was given"):
        NoJournal().check_start(None, resume=True)
    summary = run_search(RandomSearch(ToySpace(), seed=0), ToyEvaluator(), budget=5)
    assert summary.journal is None and summary.evaluations == 5


def test_a_commit_writes_every_row_since_the_last_in_one_call_in_order():
    journal = Calls()
    recorder = recorder_for(journal)
    recorder.asked(Candidate((1, 2), 0, 0), 0)
    recorder.asked(Candidate((2, 2), 0, 1), 0)
    recorder.handed_out(0)
    epoch = EpochRecord(1, 0.5, 0.9, 0.4, 1.0)
    recorder.epoch(0, epoch, 3)
    leg = LegRecord(1, 0, 0, 1, 1, 0.0)
    recorder.leg(leg)
    result = EvaluationResult(accuracy=0.9)
    recorder.told(0, Outcome(Candidate((1, 2), 0, 0), result, "k", worker_rank=3, started=1.0,
                             ended=2.0))
    recorder.commit()
    recorder.commit()                       # nothing since: no second transaction
    assert len(journal.calls) == 1
    candidates, evaluations, epochs, legs, attempts = journal.calls[0]
    assert [c.number for c in candidates] == [0, 1] and candidates[1].genome == (2, 2)
    assert [(e.sequence, e.candidate, e.worker_rank, e.result) for e in evaluations] == [
        (0, 0, 3, result)]
    assert epochs == [(0, epoch, 3)] and legs == [leg] and attempts == [0]


def test_the_recorder_of_no_journal_drops_every_row():
    recorder = recorder_for(NoJournal())
    assert type(recorder) is not RunRecorder and isinstance(recorder, RunRecorder)
    recorder.asked(Candidate((1, 1), 0, 0), 0)
    recorder.handed_out(0)
    recorder.commit()                       # NoJournal has no record(): nothing may reach it


def test_a_new_epoch_starts_the_count_of_kills_again_and_one_reported_again_does_not(tmp_path):
    """A candidate in training when the run was killed twice is given up only if it finished
    no epoch in between: a long candidate whose job is preempted twice goes on."""
    from nord.journal import CandidateRecord, Journal, RunRecord

    record = RunRecord(algorithm="random", parameters={}, seed=0, space={}, budget=5)
    journal = Journal(tmp_path / "r.db")
    journal.claim(record, journal.check_start(record))
    try:
        journal.record(candidates=[CandidateRecord(0, 0, (1, 2), 0)], attempts=[0])
        assert journal.attempts() == {0: 1}
        epoch = EpochRecord(1, 0.5, 0.9, 0.4, 1.0)
        journal.record(attempts=[0])                           # killed once, handed out again
        assert journal.attempts() == {0: 2}
        epoch = EpochRecord(1, 0.5, 0.9, 0.4, 1.0)
        journal.record(epochs=[(0, epoch, 0)])                 # it trained on: only this
        assert journal.attempts() == {0: 1}                    # attempt, under way, counts
        journal.record(attempts=[0])                           # killed, handed out again
        journal.record(epochs=[(0, epoch, 0)])                 # epoch 1 reported again
        assert journal.attempts() == {0: 2}                    # is no progress
    finally:
        journal.close()
