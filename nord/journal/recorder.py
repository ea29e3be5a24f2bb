"""How a running search writes its journal: rows kept in order between commits, one commit at a
time; and the journal of a run that keeps none.

The search engine tells a :class:`RunRecorder` what happens as it happens (a candidate asked,
handed out, an epoch finished, a result told, a leg of training) and commits when workers have
their next tasks, so that they never wait for the disk::

    recorder = recorder_for(journal)       # journal: a Journal, or NoJournal()
    recorder.asked(candidate, told_before)
    recorder.handed_out(number)
    recorder.commit()                      # one transaction: the file stays a consistent prefix

A run without a journal has a :class:`NoJournal`, which keeps nothing and cannot be resumed,
and a recorder that drops every row before it is built: the engine never asks which it has.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from nord.errors import ConfigurationError
from nord.journal.records import CandidateRecord, EvaluationRecord, LegRecord

__all__ = ["RunRecorder", "NoJournal", "recorder_for"]


class RunRecorder:
    """The rows of a run since its last commit, written to ``journal`` in one transaction."""

    keeps = True
    """Whether it keeps rows (a run without a journal skips the calls: they would do nothing)."""

    def __init__(self, journal):
        self.journal = journal
        self._candidates: List[CandidateRecord] = []
        self._evaluations: List[EvaluationRecord] = []
        self._epochs: List[Tuple[int, Any, Optional[int]]] = []
        self._legs: List[LegRecord] = []
        self._attempts: List[int] = []

    def asked(self, candidate, told_before: int) -> None:
        """A candidate (its ``number``, ``generation`` and ``genome``) was proposed after
        ``told_before`` results."""
        self._candidates.append(CandidateRecord(candidate.number, candidate.generation,
                                                candidate.genome, told_before))

    def handed_out(self, number: int) -> None:
        """Candidate ``number`` went to a worker: an attempt, taken back if the run survives."""
        self._attempts.append(number)

    def told(self, sequence: int, outcome) -> None:
        """A result was told, ``sequence``-th: ``outcome`` holds its ``candidate``, ``key``,
        ``descriptor``, ``worker_rank``, ``result``, ``cached_from``, ``started`` and
        ``ended`` (the engine's Outcome)."""
        candidate = outcome.candidate
        self._evaluations.append(EvaluationRecord(
            sequence, candidate.number, candidate.generation, candidate.genome, outcome.key,
            outcome.descriptor, outcome.worker_rank, outcome.result, outcome.cached_from,
            outcome.started, outcome.ended))

    def epoch(self, number: int, record, worker_rank: Optional[int]) -> None:
        self._epochs.append((number, record, worker_rank))

    def leg(self, leg: LegRecord) -> None:
        self._legs.append(leg)

    def commit(self) -> None:
        """Write everything since the last commit, in one transaction, if there is anything."""
        if not (self._candidates or self._evaluations or self._epochs or self._legs
                or self._attempts):
            return
        rows = (self._candidates, self._evaluations, self._epochs, self._legs, self._attempts)
        self._candidates, self._evaluations, self._epochs = [], [], []
        self._legs, self._attempts = [], []
        self.journal.record(*rows)


class _Dropped(RunRecorder):
    """A recorder that keeps nothing (the run has no journal)."""

    keeps = False

    def __init__(self):
        super().__init__(None)

    def asked(self, candidate, told_before: int) -> None:
        pass

    def handed_out(self, number: int) -> None:
        pass

    def told(self, sequence: int, outcome) -> None:
        pass

    def epoch(self, *row) -> None:
        pass

    def leg(self, leg) -> None:
        pass

    def commit(self) -> None:
        pass


class NoJournal:
    """The journal of a run given no path: it keeps nothing, so nothing can resume the run.
    It answers the engine as a new, empty journal would."""

    path = None
    writing = False
    keeps_records = False
    spent_before = 0.0

    def check_start(self, record, resume: bool = False, **_: Any):
        if resume:
            raise ConfigurationError(
                "resume=True continues a run from its journal, and none was given; pass the "
                "journal's path (journal='runs/rea.db')")
        return None

    def claim(self, record, stored):
        return stored

    def attempts(self, told: bool = False) -> Dict[int, int]:
        return {}

    def release_attempts(self, survivors=None) -> None:
        pass

    def finish(self, status: str, detail: str = "") -> None:
        pass

    def close(self) -> None:
        pass


def recorder_for(journal) -> RunRecorder:
    """The recorder that writes ``journal`` (one that keeps nothing for a :class:`NoJournal`)."""
    return _Dropped() if isinstance(journal, NoJournal) else RunRecorder(journal)
