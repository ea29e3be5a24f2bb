"""What the view shows of a run, read from its journal opened read-only: one line for the
list of runs, and the rows added since a cursor for the run's page.

    line = run_line(entry)                       # nord list's numbers, plus time
    delta = run_delta(entry, Cursor.parse(query))  # the rows after the cursor, and the next one

Every query reads through :class:`~nord.journal.reads.JournalReader` with SQLite's
``mode=ro``: the view never writes a journal, and a live run's new rows show at once.
"""
from __future__ import annotations

import hashlib
import math
import os
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from nord.errors import JournalError
from nord.journal.reads import JournalReader, run_state
from nord.report.runs import is_multi_objective
from nord.serve.catalogue import Entry
from nord.serve.weight_sharing import is_search, search_delta, search_line, search_read

__all__ = ["Cursor", "CursorError", "run_line", "run_delta", "open_reader", "json_ready",
           "signature", "signature_token"]

EVALUATION_FIELDS = ("sequence", "candidate", "generation", "accuracy", "reported_accuracy",
                     "n_params", "epochs", "status", "error", "train_time", "started", "ended",
                     "cached_from", "worker_rank")
"""The columns of each evaluation row sent to the page, in this order (rows are lists)."""
EPOCH_FIELDS = ("candidate", "epoch", "valid_accuracy", "train_loss", "valid_loss", "seconds")


class CursorError(ValueError):
    """A cursor that is not one (the request gets a 400)."""


@dataclass(frozen=True)
class Cursor:
    """Where a page's copy of a run ends: the next evaluation sequence and epoch row (SQLite
    rowid) to read, the first leg that was still open, and the last epoch of a weight-sharing
    search read. Zeros: nothing read yet."""

    evaluations: int = 0
    epochs: int = 0
    legs: int = 0
    search: int = 0

    @classmethod
    def parse(cls, query: Mapping[str, str]) -> "Cursor":
        values = {}
        for name in ("evaluations", "epochs", "legs", "search"):
            text = query.get(name, "0")
            if not text.isdigit() or len(text) > 15:
                raise CursorError(f"the cursor's '{name}' must be a whole number of at most "
                                  f"15 digits, not {text[:40]!r}; start again without it")
            values[name] = int(text)
        return cls(**values)

    def to_json(self) -> Dict[str, int]:
        return {"evaluations": self.evaluations, "epochs": self.epochs, "legs": self.legs,
                "search": self.search}


def open_reader(entry: Entry) -> JournalReader:
    """The entry's journal, opened read-only (the connection opens at the first query)."""
    return JournalReader(entry.path, read_only=True)


def signature(entry: Entry) -> Tuple:
    """What changes when a journal does: its file's and its WAL's size and time."""
    parts = []
    for suffix in ("", "-wal"):
        try:
            stat = os.stat(f"{entry.path}{suffix}")
            parts += [stat.st_size, stat.st_mtime_ns]
        except OSError:
            parts += [None, None]
    return tuple(parts)


def signature_token(entry: Entry) -> str:
    """:func:`signature` as a short string a page sends back (``seen=``)."""
    return hashlib.sha1(repr(signature(entry)).encode()).hexdigest()[:16]


_LINES: Dict[str, Tuple[Tuple, Dict[str, Any], int, float, Optional[Dict[str, Any]]]] = {}
"""entry id -> (signature, summary, schema version, reusable until, a search's own reads): a
journal whose files did not change is not read again, nor one read too recently."""


_UNTOLD_FROM: Dict[str, int] = {}
"""journal path -> the first candidate that had no result at the last read."""


def _finite(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _time_budget(meta: Mapping[str, Any]) -> Optional[float]:
    value = (meta.get("config") or {}).get("time_budget")
    return float(value) if isinstance(value, (int, float)) else None   # stored in seconds


def run_line(entry: Entry, now: Optional[float] = None) -> Dict[str, Any]:
    """The run's line in the list: nord list's numbers (state, evaluations of the budget,
    failures, best), elapsed running time and an estimate of the time left; a weight-sharing
    search's line also has ``search`` (:func:`~nord.serve.weight_sharing.search_line`: its
    epochs, cells and final result), and its time left is reckoned in search epochs.

    A journal that cannot be read gives ``{"state": "unreadable", "error": ...}``.
    """
    now = time.time() if now is None else now
    base = {"id": entry.id, "path": str(entry.path), "kind": entry.kind}
    if entry.kind == "comparison":
        return {**base, "state": "comparison"}
    if entry.kind == "unreadable":
        return {**base, "state": "unreadable",
                "error": f"'{entry.path}' is not a nord journal or comparison"}
    held_signature = signature(entry)
    held = _LINES.get(entry.id)
    if held is not None and (held[0] == held_signature or time.monotonic() < held[3]):
        # unchanged, or read again too recently
        summary, version, searched = held[1], held[2], held[4]
    else:
        started = time.monotonic()
        try:
            with open_reader(entry) as reader:
                summary, version = reader.summary(), reader.schema_version
                searched = search_read(reader, summary) if is_search(summary) else None
        except JournalError as error:
            return {**base, "state": "unreadable", "error": str(error)}
        # a writer's checkpoint waits for readers: a summary that takes long is read at
        # most once in thirty times its cost (two seconds at most) while the run writes
        cost = time.monotonic() - started
        _LINES[entry.id] = (held_signature, summary, version,
                            time.monotonic() + min(2.0, 30 * cost), searched)
    state = run_state(summary, version)   # a writer can die without touching its files
    elapsed = summary.get("running_seconds")
    if elapsed is None:
        elapsed = _finite(summary.get("wall_time"))
    elif state == "running" and summary.get("heartbeat"):
        elapsed = float(elapsed) + max(0.0, now - float(summary["heartbeat"]))
    done, budget = summary["evaluations"], summary.get("budget")
    search = None if searched is None else search_line(summary, searched, state, str(entry.path))
    # a search's pace is its epochs'; its final evaluation, after them, has none to go by
    paced, goal = (done, budget) if search is None else (
        search["epochs"], search["of"] if search["final"] is None
        and search["epochs"] < (search["of"] or 0) else None)
    time_left = None
    if state == "running":
        limit = _time_budget(summary)
        if limit is not None and elapsed is not None:
            time_left = max(0.0, limit - elapsed)
        if goal and paced and elapsed:
            by_rate = elapsed / paced * max(0, goal - paced)
            time_left = by_rate if time_left is None else min(time_left, by_rate)
    return {
        **base, "state": state, "algorithm": summary.get("algorithm"),
        "evaluations": done, "budget": budget, "ok": summary["ok"],
        "failed": summary["failed"], "cached": summary["cached"],
        "best": _finite(summary.get("best_accuracy")), "elapsed": elapsed,
        "time_left": time_left, "created": summary.get("created"),
        "status_detail": summary.get("status_detail") or "",
        "mode": summary.get("mode"), "dataset": (summary.get("dataset") or {}).get("name")
        if isinstance(summary.get("dataset"), dict) else summary.get("dataset"),
        "objectives": _objectives(summary),
        **({} if search is None else {"search": search}),
    }


def _objectives(meta: Mapping[str, Any]) -> int:
    return 2 if is_multi_objective(meta) else 1


def run_delta(entry: Entry, cursor: Cursor) -> Dict[str, Any]:
    """What the run's page needs beyond ``cursor``: the run's line; the evaluations told
    since (as lists in :data:`EVALUATION_FIELDS` order); the candidates in flight and their
    learning curves, whole (a few rows each); the legs from the first one still open; a
    weight-sharing search's new epochs (``search``, only where there are some:
    :func:`~nord.serve.weight_sharing.search_delta`); and the cursor that follows. The first
    call (a zero cursor) also carries the metadata."""
    line = run_line(entry)
    if line["state"] == "unreadable":
        return {"run": line, "cursor": cursor.to_json()}
    with open_reader(entry) as reader:
        try:
            return _delta(reader, line, cursor)
        except JournalError as error:
            return {"run": {**line, "state": "unreadable", "error": str(error)},
                    "cursor": cursor.to_json()}


def _delta(reader: JournalReader, line: Dict[str, Any], cursor: Cursor) -> Dict[str, Any]:
    out: Dict[str, Any] = {"run": line}
    if cursor == Cursor():
        meta = reader.metadata()
        out["metadata"] = {name: meta.get(name) for name in (
            "algorithm", "parameters", "seed", "space", "evaluator", "dataset", "mode",
            "budget", "scheduler", "config", "created", "status", "status_detail")}
    rows = reader.query(f"SELECT {', '.join(EVALUATION_FIELDS)} FROM evaluations "
                        "WHERE sequence >= ? ORDER BY sequence", (cursor.evaluations,))
    evaluations = [[_json_value(value) for value in row] for row in rows]
    last_evaluation = rows[-1]["sequence"] + 1 if rows else cursor.evaluations
    legs = [] if reader.schema_version == 1 else [dict(row) for row in reader.query(
        "SELECT leg, candidate, start_epochs, target_epochs, started, ended, accuracy, "
        "reported_accuracy, status, error, decision, detail FROM legs WHERE leg >= ? "
        "ORDER BY leg", (cursor.legs,))]
    open_legs = [leg["leg"] for leg in legs if leg["ended"] is None]
    next_legs = min(open_legs) if open_legs else (legs[-1]["leg"] + 1 if legs else cursor.legs)
    # every candidate below the first untold one was told (results are never removed):
    # only those from it on are looked at
    newest = reader.query("SELECT MAX(candidate) FROM candidates")[0][0]
    start = _UNTOLD_FROM.get(str(reader.path), 0)
    if newest is None or newest + 1 < start:   # a new run in the same file
        start = 0
    untold = reader.query("SELECT candidate FROM candidates WHERE candidate >= ? AND candidate "
                          "NOT IN (SELECT candidate FROM evaluations WHERE candidate >= ?)",
                          (start, start))
    _UNTOLD_FROM[str(reader.path)] = (min(row[0] for row in untold) if untold
                                      else 0 if newest is None else newest + 1)
    in_flight = sorted({row[0] for row in untold}
                       | {leg["candidate"] for leg in legs if leg["ended"] is None})
    if line["state"] != "running":
        in_flight = []
    epochs: List[List[Any]] = []
    last_epoch = cursor.epochs
    if reader.schema_version > 1:
        newest = reader.query("SELECT MAX(rowid) FROM epochs")[0][0]
        last_epoch = max(last_epoch, 0 if newest is None else newest + 1)
        if in_flight:   # whole curves: a promoted candidate goes on from its earlier epochs
            marks = ", ".join("?" * len(in_flight))
            epochs = [[_json_value(value) for value in row] for row in reader.query(
                f"SELECT {', '.join(EPOCH_FIELDS)} FROM epochs WHERE candidate IN ({marks}) "
                "ORDER BY candidate, epoch", tuple(in_flight))]
    search = search_delta(reader, after=cursor.search)
    if search is not None:
        out["search"] = json_ready(search)
    out.update(evaluations=evaluations, in_flight=in_flight, epochs=epochs, legs=[
        {key: _json_value(value) for key, value in leg.items()} for leg in legs],
        cursor=Cursor(last_evaluation, last_epoch, next_legs,
                      cursor.search if search is None else search["last"]).to_json())
    return out


def _json_value(value: Any) -> Any:
    """NaN and infinities as null: JSON has neither."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_ready(value: Any) -> Any:
    """A JSON-ready copy: NaN and infinities become null, at any depth."""
    if isinstance(value, dict):
        return {str(key): json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    return _json_value(value)
