"""Replay: rebuild a search's state from its journal, so that a stopped run goes on.

The algorithm (built again with the same seed) is asked for its candidates at exactly the
points recorded in the journal (``told_before``) and told the journaled results in the
journaled order; candidates whose result is journaled are not evaluated again and not
recorded twice; candidates that were in flight when the run stopped are evaluated again.

The algorithm must be deterministic given its seed and must not change state when its
``ask`` returns None; a replay that gets a different genome than the journal's raises
:class:`~nord.errors.JournalError`.

Details (what sync and async runs keep, journals that cannot be replayed): docs/engine.md.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Dict

from nord.errors import JournalError
from nord.journal import evaluation_result
from nord.search.algorithms.base import Candidate
from nord.search.engine.outcomes import Outcome

__all__ = ["replay"]

logger = logging.getLogger(__name__)


def replay(search) -> None:
    """Bring ``search`` (a :class:`~nord.search.engine.loop.Search` with a journal) to the state
    its journal records."""
    journal = search.journal
    asks = journal.candidates()
    rows = journal.evaluations(told=True)
    by_sequence = {row["sequence"]: row for row in rows}

    def outcome_of(row: Dict[str, Any]) -> Outcome:
        candidate = search.pending.get(row["candidate"]) or Candidate(
            tuple(row["genome"]), row["generation"], row["candidate"])
        return Outcome(candidate, evaluation_result(row), row["key"],
                       descriptor_json=row["descriptor"], worker_rank=row["worker_rank"],
                       cached_from=row["cached_from"], started=row["started"], ended=row["ended"])

    def count(row: Dict[str, Any]) -> None:
        search.replayed += 1
        if row["status"] != "ok":
            search.failed += 1

    index = 0
    while True:
        while index < len(asks) and asks[index]["told_before"] <= search.told:
            _replay_ask(search, asks[index])
            index += 1
        row = by_sequence.get(search.told)
        if row is None or row["candidate"] not in search.pending:
            break
        candidate = search.pending.pop(row["candidate"])
        search.algorithm.tell(candidate, evaluation_result(row))
        count(row)
        search.told += 1
    if index < len(asks):
        raise JournalError(
            f"'{journal.path}' is inconsistent: candidate {asks[index]['candidate']} was "
            f"proposed after {asks[index]['told_before']} results, but only {search.told} "
            "results can be replayed in order; the file was edited or written by two runs")
    for row in rows:
        number = row["candidate"]
        if row["key"] != "" and not row["cached"] and row["key"] not in search.cache:
            search.cache[row["key"]] = outcome_of(row)
        if number in search.pending:  # journaled but not told: a synchronous batch in progress
            search.ready[number] = outcome_of(row)
            search.sequence[number] = row["sequence"]
            count(row)
        elif row["sequence"] >= search.told:
            raise JournalError(
                f"'{journal.path}' is inconsistent: evaluation {row['sequence']} "
                f"(candidate {number}) cannot be replayed")
    if search.pending and search.mode == "sync":
        for offset, number in enumerate(sorted(search.pending)):
            search.sequence.setdefault(number, search.told + offset)
        logger.info("resuming inside a batch: candidates %d..%d, %d of them already evaluated",
                    min(search.pending), max(search.pending), len(search.ready))
    logger.info("replayed %d journaled results (%d candidates proposed) from %s",
                search.told, search.asked, journal.path)


def _replay_ask(search, recorded: Dict[str, Any]) -> None:
    candidate = search.algorithm.ask()
    expected = recorded["candidate"]
    path = search.journal.path
    if candidate is None:
        raise JournalError(
            f"cannot resume '{path}': when replayed, the algorithm proposed nothing where the "
            f"journal has candidate {expected}; the algorithm is not deterministic for its "
            "seed, or differs from the journaled run")
    genome = list(candidate.genome)
    if candidate.number != expected or not _same(genome, recorded["genome"]):
        raise JournalError(
            f"cannot resume '{path}': when replayed, the algorithm proposed candidate "
            f"{candidate.number} = {genome} where the journal has candidate {expected} = "
            f"{recorded['genome']}; the algorithm is not deterministic for its seed, or differs "
            "from the journaled run. Start a new journal")
    search.pending[candidate.number] = candidate
    search.asked += 1


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)
