"""Replay: rebuild a search's state from its journal, so that a stopped run goes on.

The algorithm (built again with the same seed) is asked for its candidates at exactly the
points recorded in the journal (``told_before``) and told the journaled results in the
journaled order; candidates whose result is journaled are not evaluated again and not
recorded twice; candidates that were in flight when the run stopped are evaluated again.

Under a scheduler that trains in legs, the scheduler (fresh, with the run's settings) is then
told the journal's legs in the order they were handed out and ended, and the legs that were in
flight are kept to run again (:class:`~nord.search.engine.legs.Legs`).

The algorithm must be deterministic given its seed and must not change state when its
``ask`` returns None; a replay that gets a different genome than the journal's raises
:class:`~nord.errors.JournalError`.

Details (what sync and async runs keep, journals that cannot be replayed): docs/engine.md.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Dict, List, Set

from nord.errors import JournalError
from nord.evaluators.result import EvaluationResult
from nord.evaluators.stop_rules import stopped_by_rule
from nord.journal import LegRecord, evaluation_result
from nord.search.algorithms.base import Candidate
from nord.search.engine.loop import Search
from nord.search.engine.outcomes import Outcome
from nord.search.executors import Task

__all__ = ["replay"]

logger = logging.getLogger(__name__)


def replay(search: Search) -> None:
    """Bring ``search`` (with a journal) to the state its journal records: the algorithm's,
    the cache's, and the scheduler's and its legs'."""
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
    _replay_legs(search, asks, rows)
    logger.info("replayed %d journaled results (%d candidates proposed) from %s",
                search.told, search.asked, journal.path)


def _replay_legs(search: Search, asks: List[Dict[str, Any]],
                 rows: List[Dict[str, Any]]) -> None:
    """After the algorithm's replay: rebuild the scheduler and the ledger of legs from the
    journal's legs (``asks``, ``rows``: its candidates and results told), in the order they
    were handed out and ended; keep the legs that were in flight to run again. A journal
    without legs (a run that trained every candidate to the end) leaves both as they are."""
    legs = search.journal.legs()
    if not legs:
        return
    ledger, scheduler = search.legs, search.scheduler
    events = []
    for leg in legs:
        events.append((leg["started_event"], 0, leg))
        if leg["ended_event"] is not None:
            events.append((leg["ended_event"], 1, leg))
    events.sort(key=lambda item: (item[0], item[1]))
    batches = _batches(asks)
    started_batches: Set[int] = set()
    in_flight: Dict[int, Dict] = {}
    told = {row["candidate"]: row for row in rows}
    for _, kind, leg in events:
        number = leg["candidate"]
        ledger.trained[number] = None
        if kind == 0:
            batch = batches.get(number)
            if search.mode == "sync" and batch is not None and batch[0] not in started_batches:
                started_batches.add(batch[0])
                scheduler.start_batch(batch)
                search.batches += 1
            if leg["start_epochs"] == 0:
                scheduler.first_epochs(number)
            else:
                scheduler.sent_on(number, leg["start_epochs"])
            in_flight[number] = leg
        else:
            scheduler.report(number, leg["target_epochs"], leg["accuracy"],
                             leg["status"] == "ok" and not stopped_by_rule(
                                 (leg["result"] or {}).get("metrics") or {}))
            ledger.reached.setdefault(number, []).append(
                [leg["target_epochs"], (leg["result"] or {}).get("accuracy", leg["accuracy"])])
            in_flight.pop(number, None)
            result = EvaluationResult.from_dict(leg["result"] or {"status": "failed"})
            candidate = search.pending.get(number) or Candidate(
                tuple(told[number]["genome"]) if number in told else (), 0, number)
            ledger.latest[number] = Outcome(candidate, result, told[number]["key"]
                                            if number in told else None)
        ledger.event = max(ledger.event, leg["started_event"], leg["ended_event"] or 0)
    ledger.count = max(leg["leg"] for leg in legs)
    ledger.told = set(told)
    for number, row in told.items():
        if number in ledger.latest:
            ledger.latest[number].key = row["key"]
    # the candidates asked but not told: their genomes and keys, to go on training them
    for number, candidate in search.pending.items():
        if number not in ledger.latest and number not in in_flight:
            continue     # never started: prepared again
        key, descriptor = search.space.identify(candidate.genome)
        ledger.basis[number] = Task(number, candidate.genome, key, search.space, descriptor)
        search.evaluating[key] = number
        if number in ledger.latest:
            ledger.latest[number] = Outcome(candidate, ledger.latest[number].result, key,
                                            ledger.basis[number])
    ledger.resumed = {number: LegRecord(row["leg"], number, row["start_epochs"],
                                        row["target_epochs"], row["started_event"],
                                        row["started"])
                      for number, row in in_flight.items()}


def _batches(asks: List[Dict[str, Any]]) -> Dict[int, List[int]]:
    """Candidate -> the batch it was asked in (sync mode: asked at the same told count)."""
    groups: Dict[int, List[int]] = {}
    for row in asks:
        groups.setdefault(row["told_before"], []).append(row["candidate"])
    return {number: sorted(members) for members in groups.values() for number in members}


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
