"""The journal's read side: the run, its candidates, evaluations, epochs and legs, as plain
dicts, from any process, also while the run is written.

    with Journal("runs/rea.db") as journal:
        print(journal.state(), journal.best()["accuracy"], len(journal.evaluations()))

:class:`~nord.journal.store.Journal` inherits these methods; the writer reads through them too.
"""
from __future__ import annotations

import json
import math
import sqlite3
from typing import Any, Dict, List, Optional, Sequence, Union

from nord.errors import JournalError
from nord.evaluators.stop_rules import stopped_by_rule
from nord.journal.connection import JournalFile
from nord.journal.records import RunRecord
from nord.journal.schema import JSON_RUN_COLUMNS, RESULT_COLUMNS, STATUSES
from nord.journal.writers import Writer


def _real(value: Optional[float]) -> float:
    """SQLite stores NaN as NULL; read it back as NaN."""
    return math.nan if value is None else float(value)


def run_state(meta: Dict[str, Any], version: int = 2) -> str:
    """:meth:`JournalReader.state` of a run's metadata as read (so that a reader holding it
    can ask again, without the file, whether its writer still lives)."""
    if meta["status"] != "running" or version == 1:
        return meta["status"]
    writer = Writer.from_json(meta.get("writer"))
    alive = writer is not None and writer.alive(meta.get("heartbeat"))
    return "running" if alive else "killed"


class JournalReader(JournalFile):
    """The queries of a journal: every method reads, none writes."""

    def metadata(self) -> Dict[str, Any]:
        """The run's metadata as a dict (JSON columns decoded; ``ranks``, ``groups``,
        ``workers`` and ``worker_ranks`` taken from ``execution``).

        Raises:
            JournalError: missing file, not a journal, damaged, or a journal without a run.
        """
        rows = self._query("SELECT * FROM run WHERE id = 1")
        row = rows[0] if rows else None
        if row is None:
            raise JournalError(f"'{self.path}' is a nord journal without a run (it was created "
                               "but the run never started); start the run again")
        data = dict(row)
        data.pop("id", None)
        try:
            for column in JSON_RUN_COLUMNS:
                if column in data:
                    data[column] = json.loads(data[column])
        except (TypeError, ValueError) as error:
            raise self._damaged(error) from error
        if self._version == 1:   # the first layout kept execution in columns
            data["worker_ranks"] = json.loads(data["worker_ranks"] or "null")
            data["execution"] = {name: data.get(name) for name in
                                 ("ranks", "groups", "workers", "worker_ranks")}
            data.setdefault("config", (data.get("extra") or {}).get("config") or {})
            data.setdefault("status_detail", "")
        for name in ("ranks", "groups", "workers", "worker_ranks"):
            data[name] = (data.get("execution") or {}).get(name)
        if data.get("status") not in STATUSES:
            raise self._damaged(ValueError(f"unknown status {data.get('status')!r}"))
        return data

    def run_record(self) -> RunRecord:
        """The journaled run as a :class:`RunRecord`."""
        meta = self.metadata()
        return RunRecord(**{name: meta.get(name) for name in (
            "algorithm", "parameters", "seed", "space", "evaluator", "dataset", "mode",
            "batch_size", "budget", "execution", "config", "extra")},
            scheduler=meta.get("scheduler") or {})

    def writer(self) -> Optional[Writer]:
        """The process that holds the run now: None when none does (or it died)."""
        meta = self.metadata()
        writer = Writer.from_json(meta.get("writer"))
        return writer if writer is not None and writer.alive(meta.get("heartbeat")) else None

    def state(self) -> str:
        """The status, except that a run still marked ``running`` whose writer is gone
        (``kill -9``, a lost host, a power cut) is ``killed``."""
        return run_state(self.metadata(), self._version)

    def query(self, sql: str, params: Sequence[Any] = ()) -> List[sqlite3.Row]:
        """The rows of a read query of one's own (a viewer's incremental reads); a damaged
        file raises JournalError."""
        return self._query(sql, params)

    def evaluation(self, candidate: int) -> Optional[Dict[str, Any]]:
        """The candidate's evaluation as :meth:`evaluations` gives it (at its furthest leg),
        or None when it has none yet."""
        rows = self._query("SELECT * FROM evaluations WHERE candidate = ?", (candidate,))
        if not rows:
            return None
        try:
            return self._furthest([self._evaluation_dict(rows[0])])[0]
        except (TypeError, ValueError, KeyError) as error:
            raise self._damaged(error) from error

    def count(self) -> int:
        """The number of evaluations recorded."""
        return self._query("SELECT COUNT(*) FROM evaluations")[0][0]

    def candidates(self) -> List[Dict[str, Any]]:
        """Every proposed candidate, in the order proposed."""
        rows = self._query("SELECT * FROM candidates ORDER BY candidate")
        try:
            return [dict(row, genome=json.loads(row["genome"])) for row in rows]
        except (TypeError, ValueError) as error:
            raise self._damaged(error) from error

    def evaluations(self, generation: Optional[int] = None, told: bool = False
                    ) -> List[Dict[str, Any]]:
        """Every evaluation as a dict, in the order told (by ``sequence``), each with its
        architecture's one result: the one at the furthest epoch it reached.

        Without a scheduler that is the result told. With one, a candidate can train on after
        it was told (an ASHA promotion): its row then carries its furthest leg's result
        (accuracy, reported accuracy, epochs, loss, times, metrics), and ``told_epochs`` the
        epochs it had when told; earlier legs are its learning curve. Cached repeats follow
        the candidate they reused.

        Args:
            generation: only that generation's evaluations.
            told: the results exactly as the algorithm was told them (what a resume replays).

        Each dict has the columns of the ``evaluations`` table (docs/journal.md); ``genome``
        and ``metrics`` are decoded, ``cached`` says whether the result was reused, NaN
        accuracy and loss read as NaN.
        """
        query, params = "SELECT * FROM evaluations", ()
        if generation is not None:
            query, params = query + " WHERE generation = ?", (generation,)
        rows = self._query(query + " ORDER BY sequence", params)
        try:
            rows = [self._evaluation_dict(row) for row in rows]
        except (TypeError, ValueError, KeyError) as error:
            raise self._damaged(error) from error
        return rows if told else self._furthest(rows)

    def _evaluation_dict(self, row: sqlite3.Row) -> Dict[str, Any]:
        data = dict(row)
        data["genome"] = json.loads(data["genome"])
        data["metrics"] = json.loads(data["metrics"])
        if self._version == 1:
            data["key"] = data.pop("descriptor_hash")
            if not data.pop("cached"):
                data["cached_from"] = None
        data["cached"] = data["cached_from"] is not None
        for column in ("accuracy", "loss", "train_time", "eval_time"):
            data[column] = _real(data[column])
        return data

    def epochs(self, candidate: Optional[int] = None) -> List[Dict[str, Any]]:
        """The learning curves: every recorded epoch (of one candidate), by candidate and epoch;
        ``metrics`` decoded, missing values as NaN."""
        if self._version == 1:
            return []
        query, params = "SELECT * FROM epochs", ()
        if candidate is not None:
            query, params = query + " WHERE candidate = ?", (candidate,)
        rows = self._query(query + " ORDER BY candidate, epoch", params)
        try:
            out = []
            for row in rows:
                data = dict(row)
                data["metrics"] = json.loads(data["metrics"])
                for column in ("train_loss", "valid_accuracy", "valid_loss", "seconds"):
                    data[column] = _real(data[column])
                out.append(data)
            return out
        except (TypeError, ValueError) as error:
            raise self._damaged(error) from error

    def series(self, candidate: Optional[int] = None) -> List[Dict[str, Any]]:
        """The training callbacks' per-step series: rows of ``candidate``, ``leg`` (the
        scheduler's leg that trained the epoch; None without a scheduler), ``epoch`` (1 in
        the first), ``step`` (within the epoch), ``name`` and ``value`` (a NaN reads back
        as NaN), by candidate, name, epoch and step. Empty for a journal written
        before series were kept."""
        if self._version == 1 or not self._has_table("series"):
            return []
        query, params = "SELECT candidate, epoch, step, name, value FROM series", ()
        if candidate is not None:
            query, params = query + " WHERE candidate = ?", (candidate,)
        rows = self._query(query + " ORDER BY candidate, name, epoch, step", params)
        spans: Dict[int, List[tuple]] = {}   # candidate -> (start, target, leg), latest first
        for leg in self._query("SELECT leg, candidate, start_epochs, target_epochs FROM legs "
                               "ORDER BY leg DESC"):
            spans.setdefault(leg["candidate"], []).append(
                (leg["start_epochs"], leg["target_epochs"], leg["leg"]))
        out = []
        for row in rows:
            number, epoch = row["candidate"], row["epoch"]
            leg = next((leg for start, target, leg in spans.get(number, ())
                        if start < epoch <= target), None)
            out.append({"candidate": number, "leg": leg, "epoch": epoch, "step": row["step"],
                        "name": row["name"], "value": _real(row["value"])})
        return out

    def _has_table(self, name: str) -> bool:
        return bool(self._query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                (name,)))

    def search_epochs(self, after: int = 0) -> List[Dict[str, Any]]:
        """The epochs of a weight-sharing search, in order: ``epoch``, ``cell`` (the
        benchmark's string), ``genome``, ``weights`` (edge -> operation -> probability),
        ``metrics`` (losses, learning rate, what the method measured), ``lookup_accuracy``
        (the derived cell's 200-epoch test accuracy in the table; None off the table),
        ``seconds`` and ``recorded``. Empty for a run that shares no weights.

        Args:
            after: only the epochs after this one (a viewer's incremental reads).
        """
        if not self._has_table("search_epochs"):
            return []
        rows = self.query("SELECT * FROM search_epochs WHERE epoch > ? ORDER BY epoch", (after,))
        try:
            return [{**dict(row), "genome": tuple(json.loads(row["genome"])),
                     "weights": json.loads(row["weights"]),
                     "metrics": json.loads(row["metrics"])} for row in rows]
        except (TypeError, ValueError) as error:
            raise self._damaged(error) from error

    def legs(self) -> List[Dict[str, Any]]:
        """Every leg of training under a scheduler, in the order handed out."""
        if self._version == 1:
            return []
        rows = [dict(row) for row in self._query("SELECT * FROM legs ORDER BY leg")]
        try:
            for row in rows:
                row["result"] = None if row["result"] is None else json.loads(row["result"])
        except (TypeError, ValueError) as error:
            raise self._damaged(error) from error
        return rows

    def unusable_checkpoints(self) -> int:
        """Legs that were to resume from a checkpoint that could not be used, and trained
        again from scratch (their ``detail`` says why)."""
        if self._version == 1:
            return 0
        return self._query("SELECT COUNT(*) FROM legs WHERE detail != ''")[0][0]

    def resumed(self) -> Dict[int, int]:
        """Candidates that went on from a checkpoint left within their training by a run
        that was stopped (killed, cancelled): candidate -> the epochs that checkpoint kept
        from being trained again (a scheduler's promotions, which go on from their pauses,
        are not counted)."""
        kept: Dict[int, int] = {}
        rows = self._query(
            "SELECT candidate, json_extract(metrics, '$.epochs_resumed') FROM evaluations "
            "WHERE cached_from IS NULL" if self._version > 1 else
            "SELECT candidate, json_extract(metrics, '$.epochs_resumed') FROM evaluations")
        for candidate, epochs in rows:
            if epochs:
                kept[candidate] = int(epochs)
        legs = [] if self._version == 1 else self._query(
            "SELECT candidate, start_epochs, json_extract(result, '$.metrics.epochs_resumed'), "
            "json_extract(result, '$.metrics.trained_from') FROM legs WHERE result IS NOT NULL")
        if legs:   # trained in legs: a told result resumed from a pause, the legs say more
            kept = {}
            for candidate, start, epochs, trained_from in legs:
                start = start if trained_from is None else trained_from   # a leg restarted
                if epochs and epochs > start:
                    kept[candidate] = kept.get(candidate, 0) + int(epochs) - start
        return kept

    def trainings(self, mentioning: Sequence[str] = ()) -> List[Dict[str, Any]]:
        """Every result that training produced: under a scheduler each ended leg's (``leg``
        its number), in the order handed out, then each evaluation of a candidate without
        legs that reused no other's result (``leg`` None), in the order told. What a training
        callback or a stopping rule said of a candidate is in these, whichever leg said it
        (:meth:`evaluations` keeps only a candidate's furthest leg).

        Args:
            mentioning: only the results whose metrics have one of these keys (e.g.
                ``("stopped_by", "diagnostics")``); all when empty.

        Returns:
            dicts of ``candidate``, ``leg``, ``epochs``, ``status`` and ``metrics`` (decoded).
        """
        patterns = tuple(f'%"{key}"%' for key in mentioning)

        def sieve(column: str) -> str:   # a quick one in SQL; the keys are checked below
            return (" AND (" + " OR ".join([f"{column} LIKE ?"] * len(patterns)) + ")"
                    if patterns else "")

        own = "cached_from IS NULL" if self._version > 1 else "NOT cached"
        legs, no_legs = [], ""
        if self._version > 1:
            legs = self._query("SELECT leg, candidate, result FROM legs WHERE result IS NOT "
                               f"NULL{sieve('result')} ORDER BY leg", patterns)
            no_legs = " AND candidate NOT IN (SELECT candidate FROM legs)"
        evaluations = self._query("SELECT candidate, epochs, status, metrics FROM evaluations "
                                  f"WHERE {own}{no_legs}{sieve('metrics')} ORDER BY sequence",
                                  patterns)
        try:
            trained = []
            for row in legs:
                result = json.loads(row["result"])
                trained.append({"candidate": row["candidate"], "leg": row["leg"],
                                "epochs": result.get("epochs"), "status": result.get("status"),
                                "metrics": result.get("metrics") or {}})
            trained += [{"candidate": row["candidate"], "leg": None, "epochs": row["epochs"],
                         "status": row["status"], "metrics": json.loads(row["metrics"])}
                        for row in evaluations]
        except (TypeError, ValueError) as error:
            raise self._damaged(error) from error
        return [row for row in trained
                if not mentioning or any(key in row["metrics"] for key in mentioning)]

    def final_evaluations(self) -> List[Dict[str, Any]]:
        """:meth:`evaluations` (each architecture with its final result)."""
        return self.evaluations()

    def _furthest(self, rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """``rows`` with the results of their furthest legs (see :meth:`evaluations`)."""
        furthest: Dict[int, Dict[str, Any]] = {}
        for leg in self.legs():
            if leg["ended_event"] is None or leg["result"] is None:
                continue
            held = furthest.get(leg["candidate"])
            if held is None or leg["target_epochs"] >= held["target_epochs"]:
                furthest[leg["candidate"]] = leg
        if not furthest:
            return rows
        for row in rows:
            source = row["cached_from"] if row["cached_from"] is not None else row["candidate"]
            leg = furthest.get(source)
            row["told_epochs"] = row["epochs"]
            if leg is None or leg["target_epochs"] <= (row["epochs"] or 0):
                continue
            result = leg["result"]
            for column in RESULT_COLUMNS:
                if column in result:
                    row[column] = result[column]
            row["metrics"] = result.get("metrics") or {}
            for column in ("accuracy", "loss", "reported_accuracy"):
                if row.get(column) is None:
                    row[column] = math.nan
        return rows

    def best(self, count: Optional[int] = None
             ) -> Union[Optional[Dict[str, Any]], List[Dict[str, Any]]]:
        """The evaluation with the highest search accuracy (earliest on ties), or None. With
        a scheduler, results are final (:meth:`evaluations`) and ranked first by the
        epochs trained: a candidate stopped after one epoch is never compared with one
        trained to the end.

        Args:
            count: return a list of the ``count`` best instead. Cached repeats of an
                architecture are left out of the list, so each architecture appears once.
        """
        return self._best_of(self.evaluations(), count)

    @staticmethod
    def _best_of(evaluations: List[Dict[str, Any]], count: Optional[int] = None
                 ) -> Union[Optional[Dict[str, Any]], List[Dict[str, Any]]]:
        """:meth:`best` among ``evaluations`` (rows of :meth:`evaluations`)."""
        rows = [row for row in evaluations
                if row["status"] == "ok" and math.isfinite(row["accuracy"])]
        scheduled = bool(rows) and "told_epochs" in rows[0]

        def rank(row):
            return ((row["epochs"] or 0) if scheduled else 0, row["accuracy"], -row["sequence"])

        if count is None:
            return max(rows, key=rank, default=None)
        unique = [row for row in rows if not row["cached"]]
        unique.sort(key=rank, reverse=True)
        return unique[:count]

    def summary(self) -> Dict[str, Any]:
        """Metadata plus counts, the best accuracy and the state: one line of ``list_runs``.

        Under a scheduler ``ok``, ``failed`` and the best accuracy are those of each
        candidate's final result (:meth:`evaluations`: a promoted leg that failed makes a
        failure); ``stopped_by_rules`` and ``diagnosed`` count the candidates a stopping rule
        ended or a callback raised in, in any leg (``stopped_legs``, ``diagnosed_legs``: in
        how many legs); ``wall_time`` is the running time of the run's sessions."""
        meta = self.metadata()
        cached = "cached" if self._version == 1 else "cached_from IS NOT NULL"
        counts = self._query(
            f"SELECT COUNT(*), SUM(status = 'ok'), SUM(status != 'ok'), SUM({cached}),"
            " MAX(CASE WHEN status = 'ok' THEN accuracy END), MIN(started), MAX(ended)"
            " FROM evaluations")[0]
        total, ok, failed, cached_count, best, first, last = counts
        # every leg's, so that what an earlier leg than the result's said counts too
        said = self.trainings(mentioning=("diagnostics", "stopped_by"))
        diagnosed = [row for row in said if row["metrics"].get("diagnostics")]
        stopped = [row for row in said if stopped_by_rule(row["metrics"])]
        # a promoted candidate's result is its furthest leg's, not the told one
        if self._has_table("legs") and self._query("SELECT 1 FROM legs LIMIT 1"):
            final = self.evaluations()
            ok = sum(row["status"] == "ok" for row in final)
            failed = len(final) - ok
            top = self._best_of(final)
            best = None if top is None else top["accuracy"]
        return {
            "path": str(self.path), **meta, "state": self.state(),
            "evaluations": total, "ok": ok or 0, "failed": failed or 0,
            "cached": cached_count or 0, "best_accuracy": _real(best),
            "resumed": self.resumed(),
            "diagnosed": len({row["candidate"] for row in diagnosed}),
            "diagnosed_legs": sum(row["leg"] is not None for row in diagnosed),
            "first_diagnosed": min((row["candidate"] for row in diagnosed), default=None),
            "stopped_by_rules": len({row["candidate"] for row in stopped}),
            "stopped_legs": sum(row["leg"] is not None for row in stopped),
            "wall_time": self._wall_time(meta, first, last),
            **self._search_progress(),
        }

    def _search_progress(self) -> Dict[str, Any]:
        """A weight-sharing search's epochs done, its latest derived cell and that cell's table
        accuracy (nothing for a run that shares no weights)."""
        if not self._has_table("search_epochs"):
            return {}
        rows = self._query("SELECT epoch, cell, lookup_accuracy FROM search_epochs "
                           "ORDER BY epoch DESC LIMIT 1")
        if not rows:
            return {}
        return {"search_epochs_done": int(rows[0]["epoch"]), "latest_cell": rows[0]["cell"],
                "latest_lookup_accuracy": rows[0]["lookup_accuracy"]}

    @staticmethod
    def _wall_time(meta: Dict[str, Any], first: Optional[float], last: Optional[float]
                   ) -> float:
        """The run's own running time over its sessions (the gaps between a stopped session
        and its resume left out, as ``--time-budget`` counts it); on a simulated clock, or
        in a journal written before sessions were timed, its first evaluation's start to
        its last one's end."""
        running = meta.get("running_seconds")
        if running is not None and not (meta.get("execution") or {}).get("simulated"):
            return float(running)
        return (last - first) if first is not None and last is not None else math.nan

    def attempts(self, told: bool = False) -> Dict[int, int]:
        """Candidate -> how often in a row its evaluation (under a scheduler: its current leg)
        was handed out and the process that ran the run died before its result, or a new
        epoch of it, was recorded (``kill -9``, the out-of-memory killer, a lost host; also a
        SIGTERM, as mpirun ends the other ranks when one dies), for the candidates without a
        result (``told``: also those told, whose later leg may be in flight). A stop that the
        run survived to mark (Ctrl-C, an error) is not counted: see
        :meth:`release_attempts`."""
        if self._version == 1 or "attempts" not in {row[0] for row in self._query(
                "SELECT name FROM sqlite_master WHERE type='table'")}:
            return {}
        untold = "" if told else " AND candidate NOT IN (SELECT candidate FROM evaluations)"
        rows = self._query(f"SELECT candidate, count FROM attempts WHERE count > 0{untold}")
        return {row[0]: row[1] for row in rows}
