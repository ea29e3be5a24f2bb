"""The Journal: the SQLite record of one search run, written by one process and read by any.

    from nord.journal import Journal
    with Journal("runs/rea.db") as journal:        # the run's one writer (rank 0)
        journal.start(run_record, resume=True)
        journal.record(candidates, evaluations)    # one commit per result
        journal.finish("finished")
    with Journal("runs/rea.db") as journal:        # any reader, also while the run goes on
        print(journal.state(), journal.best()["accuracy"])

docs/journal.md describes the tables, the statuses and what survives a crash.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Set, Tuple, Union

from nord.errors import DiskFullError, JournalError, JournalInUseError
from nord.journal.export import JournalExport
from nord.journal.records import (CandidateRecord, EvaluationRecord, LegRecord, RunRecord,
                                  SearchEpochRecord, evaluation_row, leg_row, search_epoch_row)
from nord.journal.schema import (EVALUATION_COLUMNS, LEG_COLUMNS, SEARCH_EPOCH_COLUMNS,
                                 STATUSES, add_missing)
from nord.journal.start import StartChecks
from nord.journal.versions import package_versions
from nord.journal.writers import HEARTBEAT_SECONDS, Writer
from nord.jsonable import dumps

__all__ = ["Journal"]

logger = logging.getLogger(__name__)

RESERVE_BYTES = 256 * 1024
"""Disk held beside a journal being written (``RUN.db-reserve``), given back to write the
run's final status when the disk is full."""


@contextlib.contextmanager
def _write_transaction(connection: sqlite3.Connection) -> Iterator[None]:
    """One transaction that holds the write lock from its start (a commit of another connection
    between a read and a write, the heartbeat's, could otherwise make SQLite refuse the write
    at once, whatever the busy timeout), rolled back on any error."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


class Journal(StartChecks, JournalExport):
    """The SQLite record of one search run.

    Args:
        path: the database file. :meth:`start` creates it; the read methods never do (they
            raise :class:`JournalError` for a missing file or one that is not a journal).

    Read methods may be used by any number of processes, also while the run is written.

    The file and its connection are :class:`~nord.journal.connection.JournalFile`'s, the
    reads :class:`~nord.journal.reads.JournalReader`'s, the checks before a start
    :class:`~nord.journal.start.StartChecks`'s and the copy
    :class:`~nord.journal.export.JournalExport`'s; this class is the run's one writer.
    """

    keeps_records = True
    """What a run writes here is kept (a run without a journal has a ``NoJournal``)."""

    def __init__(self, path: Union[str, os.PathLike]):
        super().__init__(path)
        self._writing = False
        self._spent_before = 0.0                 # running seconds of the run's earlier sessions
        self._session_started = time.monotonic()
        self._writer: Optional[Writer] = None
        self._heartbeat: Optional[threading.Thread] = None
        self._stop_heartbeat = threading.Event()
        self._attempted: Set[int] = set()   # candidates this writer handed out (release_attempts)

    # --- closing ----------------------------------------------------------------------------
    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def writing(self) -> bool:
        """Whether this object holds the run as its writer (between start and close)."""
        return self._writing

    def close(self) -> None:
        """Close the file. A writer that did not :meth:`finish` marks the run ``crashed``
        (it cannot say how the run ended); a process that dies without closing leaves it
        ``running``, and readers then see that its writer is gone."""
        if self._writing:
            try:
                self.finish("crashed", "the journal was closed without a final status")
            except JournalError as error:
                logger.warning("%s", error)
        self._stop_heartbeat.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=5)
            self._heartbeat = None
        if self._connection is not None:
            if self._writing:
                self._checkpoint()
                self._release_reserve()
            self._connection.close()
            self._connection = None
        self._writing = False

    # --- writing (the run's one writer) ----------------------------------------------------
    def start(self, record: RunRecord, resume: bool = False) -> Optional[RunRecord]:
        """Begin writing a run, or take over a journaled run to resume it.

        Every check of :meth:`check_start` comes first: a refused start writes nothing.

        Returns:
            The journaled run's record when resumed (its ``batch_size`` applies when the new
            record has none), None when a new run was started.

        Raises:
            JournalError, JournalInUseError: see :meth:`check_start`.
            DiskFullError: the disk is full.
        """
        return self.claim(record, self.check_start(record, resume))

    def claim(self, record: RunRecord, stored: Optional[RunRecord]) -> Optional[RunRecord]:
        """Begin writing a run that :meth:`check_start` has just accepted, without checking it
        again: for a caller with work between the check and the first write (the search
        engine makes its checkpoint folder there). A writer that came in between is refused.

        Args:
            record: the run, as given to :meth:`check_start`.
            stored: what :meth:`check_start` returned (None: a new run).

        Returns:
            ``stored``.

        Raises:
            JournalInUseError: another process started or took the run since the check.
            DiskFullError: the disk is full.
        """
        self._writer = Writer.this_process()
        now = time.time()
        try:
            connection = self._open(create=True)
            connection.execute("BEGIN IMMEDIATE")   # no other writer between check and claim
            try:
                if stored is None:
                    if connection.execute("SELECT COUNT(*) FROM run").fetchone()[0]:
                        raise JournalInUseError(
                            f"another process started a run in '{self.path}' just now")
                    self._insert_run(connection, record, now)
                else:
                    add_missing(connection)
                    meta = dict(connection.execute(
                        "SELECT writer, heartbeat, running_seconds FROM run WHERE id = 1"
                    ).fetchone())
                    self._spent_before = float(meta["running_seconds"] or 0.0)
                    other = Writer.from_json(json.loads(meta["writer"]))
                    if other is not None and other.alive(meta["heartbeat"]):
                        raise JournalInUseError(f"'{self.path}' was just taken by {other}")
                    connection.execute(
                        "UPDATE run SET budget = ?, execution = ?, versions = ?, status = "
                        "'running', status_detail = '', updated = ?, resumed = resumed + 1, "
                        "writer = ?, heartbeat = ? WHERE id = 1",
                        (record.budget, dumps(record.execution), dumps(package_versions()), now,
                         dumps(self._writer.to_json()), now))
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as error:
            raise self._write_error(error) from error
        self._writing = True
        self._session_started = time.monotonic()
        self._reserve()
        self._checkpoint()   # the run row too is in RUN.db at once
        self._start_heartbeat()
        return stored

    def _insert_run(self, connection: sqlite3.Connection, record: RunRecord, now: float) -> None:
        if not record.algorithm:
            raise JournalError("the run's record must name its algorithm")
        values = {
            "algorithm": record.algorithm, "parameters": dumps(record.parameters or {}),
            "seed": dumps(record.seed), "space": dumps(record.space or {}),
            "evaluator": dumps(record.evaluator or {}), "dataset": dumps(record.dataset),
            "mode": record.mode, "batch_size": record.batch_size, "budget": int(record.budget),
            "execution": dumps(record.execution or {}), "config": dumps(record.config or {}),
            "scheduler": dumps(record.scheduler or {}),
            "versions": dumps(package_versions()), "extra": dumps(record.extra or {}),
            "id": 1, "created": now, "updated": now, "status": "running",
            "writer": dumps(self._writer.to_json()), "heartbeat": now,
        }
        connection.execute(
            f"INSERT INTO run ({', '.join(values)}) VALUES ({', '.join('?' * len(values))})",
            list(values.values()))

    @property
    def _reserve_path(self) -> Path:
        return Path(f"{self.path}-reserve")

    def _reserve(self) -> None:
        """Hold RESERVE_BYTES of the disk beside the journal while writing it, so that a full
        disk still lets the run write how it ended (:meth:`finish` frees them first)."""
        try:
            with open(self._reserve_path, "wb") as reserve:
                reserve.write(bytes(RESERVE_BYTES))
        except OSError as error:   # no room even for that: the status may not be written
            logger.debug("no reserve beside %s: %s", self.path, error)
            self._reserve_path.unlink(missing_ok=True)

    def _release_reserve(self) -> bool:
        """Give the reserve back to the disk; whether there was one."""
        try:
            self._reserve_path.unlink()
            return True
        except FileNotFoundError:
            return False
        except OSError as error:
            logger.debug("reserve beside %s not removed: %s", self.path, error)
            return False

    def _start_heartbeat(self) -> None:
        self._stop_heartbeat.clear()
        path, writer, stop = str(self.path), dumps(self._writer.to_json()), self._stop_heartbeat
        spent, started = self._spent_before, self._session_started

        def beat() -> None:
            try:
                connection = sqlite3.connect(path, timeout=5.0, isolation_level=None)
            except sqlite3.Error:
                return
            try:
                while not stop.wait(HEARTBEAT_SECONDS):
                    try:
                        connection.execute("UPDATE run SET heartbeat = ?, running_seconds = ? "
                                           "WHERE id = 1 AND writer = ?",
                                           (time.time(),
                                            spent + time.monotonic() - started, writer))
                    except sqlite3.Error as error:  # a busy or full disk: the next beat retries
                        logger.debug("heartbeat of %s not written: %s", path, error)
            finally:
                connection.close()

        self._heartbeat = threading.Thread(target=beat, name="nord-journal-heartbeat",
                                           daemon=True)
        self._heartbeat.start()

    def _require_writer(self) -> sqlite3.Connection:
        if not self._writing:
            raise JournalError(f"'{self.path}' is not open for writing; call start() first")
        return self._open()

    def record(self, candidates: Iterable[CandidateRecord] = (),
               evaluations: Iterable[EvaluationRecord] = (),
               epochs: Iterable[Tuple[int, Any, Optional[int]]] = (),
               legs: Iterable[LegRecord] = (), attempts: Iterable[int] = ()) -> None:
        """Record proposed candidates, told results, finished epochs (``(candidate,
        EpochRecord, worker_rank)``), legs of training and the candidates handed out for
        evaluation (``attempts``: their numbers; see :meth:`attempts`), in one commit.

        One transaction keeps the file a consistent prefix of the run whenever the process
        dies: a result is never on disk without the proposals made before it.

        Raises:
            JournalError: a candidate or sequence number that is already recorded (nothing of
                this call is then written).
            DiskFullError: the disk is full (nothing of this call is written).
        """
        now = time.time()
        candidate_rows = [(c.number, c.generation, dumps(list(c.genome)), c.told_before, now)
                          for c in candidates]
        evaluation_rows = [evaluation_row(evaluation) for evaluation in evaluations]
        epochs = list(epochs)
        epoch_rows = [(candidate, e.epoch, e.train_loss, e.valid_accuracy, e.valid_loss,
                       e.seconds, dumps(e.metrics), rank, now) for candidate, e, rank in epochs]
        series_rows = [(candidate, e.epoch, int(step), str(name), float(value))
                       for candidate, e, _ in epochs for step, name, value in e.series]
        legs = list(legs)
        leg_rows = [leg_row(leg) for leg in legs]
        attempt_rows = [(number, now) for number in attempts]
        # a leg that ended is an attempt its process survived: the count starts again,
        # before this commit's hand-outs, which may be the candidate's next leg
        survived = [(leg.candidate,) for leg in legs if leg.ended_event is not None]
        if not (candidate_rows or evaluation_rows or epoch_rows or leg_rows or attempt_rows):
            return
        connection = self._require_writer()
        try:
            # the write lock first: this commit reads (which epochs are new) before it writes
            with _write_transaction(connection):
                connection.executemany(
                    "INSERT INTO candidates (candidate, generation, genome, told_before, asked)"
                    " VALUES (?, ?, ?, ?, ?)", candidate_rows)
                connection.executemany(
                    f"INSERT INTO evaluations ({', '.join(EVALUATION_COLUMNS)}) VALUES "
                    f"({', '.join('?' * len(EVALUATION_COLUMNS))})", evaluation_rows)
                # a new epoch (not one reported again after a resume): its process survived
                # the attempts before this one, which is still under way
                progressed = [(row[0],) for row in epoch_rows if connection.execute(
                    "SELECT 1 FROM epochs WHERE candidate = ? AND epoch = ?", row[:2]
                ).fetchone() is None]
                # an epoch trained again after a crash replaces the lost leg's row
                connection.executemany(
                    "INSERT OR REPLACE INTO epochs (candidate, epoch, train_loss, valid_accuracy,"
                    " valid_loss, seconds, metrics, worker_rank, recorded) VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, ?)", epoch_rows)
                # an epoch reported again (a resume) brings its whole series again
                connection.executemany("DELETE FROM series WHERE candidate = ? AND epoch = ?",
                                       [row[:2] for row in epoch_rows])
                connection.executemany(
                    "INSERT OR REPLACE INTO series (candidate, epoch, step, name, value) "
                    "VALUES (?, ?, ?, ?, ?)", series_rows)
                connection.executemany(
                    f"INSERT OR REPLACE INTO legs ({', '.join(LEG_COLUMNS)}) VALUES "
                    f"({', '.join('?' * len(LEG_COLUMNS))})", leg_rows)
                connection.executemany("UPDATE attempts SET count = 0 WHERE candidate = ?",
                                       survived)
                connection.executemany("UPDATE attempts SET count = MIN(count, 1) WHERE "
                                       "candidate = ?", progressed)
                connection.executemany(
                    "INSERT INTO attempts (candidate, count, started) VALUES (?, 1, ?) ON "
                    "CONFLICT (candidate) DO UPDATE SET count = count + 1, started = "
                    "excluded.started", attempt_rows)
                # the run says how many results it has: a copy that lost some is caught
                connection.execute(
                    "UPDATE run SET updated = ?, heartbeat = ?, running_seconds = ?, "
                    "recorded_results = (SELECT COUNT(*) FROM evaluations) WHERE id = 1",
                    (now, now, self.running_seconds()))
        except sqlite3.IntegrityError as error:
            raise JournalError(
                f"'{self.path}' already has one of these candidates or evaluations ({error}); "
                "a journal is written by one process, once per candidate") from error
        except sqlite3.OperationalError as error:
            raise self._write_error(error) from error
        self._attempted.difference_update(number for number, in survived)
        self._attempted.update(number for number, _ in attempt_rows)
        self._checkpoint()

    def search_epoch(self, record: SearchEpochRecord) -> None:
        """Record one finished epoch of a weight-sharing search, in one commit (an epoch
        recorded again, after a resume, replaces its row with the same values).

        Raises:
            DiskFullError: the disk is full (nothing is written).
        """
        now = time.time()
        connection = self._require_writer()
        try:
            with _write_transaction(connection):
                connection.execute(
                    f"INSERT OR REPLACE INTO search_epochs ({', '.join(SEARCH_EPOCH_COLUMNS)}) "
                    f"VALUES ({', '.join('?' * len(SEARCH_EPOCH_COLUMNS))})",
                    search_epoch_row(record, now))
                connection.execute(
                    "UPDATE run SET updated = ?, heartbeat = ?, running_seconds = ? WHERE id = 1",
                    (now, now, self.running_seconds()))
        except sqlite3.OperationalError as error:
            raise self._write_error(error) from error
        self._checkpoint()

    def release_attempts(self, only: Optional[Iterable[int]] = None) -> None:
        """Take back the attempts this writer recorded for candidates still without a result
        (or, under a scheduler, whose leg has not ended): the run stops (Ctrl-C, an error of
        its own) and those evaluations did not kill it. ``only``: just these candidates
        (those whose process is known to have survived a SIGTERM)."""
        numbers = sorted(self._attempted if only is None else self._attempted & set(only))
        if not numbers:
            return
        self._attempted.difference_update(numbers)
        self._write(
            f"UPDATE attempts SET count = MAX(count - 1, 0) WHERE candidate IN "
            f"({', '.join('?' * len(numbers))}) AND candidate NOT IN (SELECT candidate FROM "
            "evaluations)", numbers)

    def _checkpoint(self) -> None:
        """Fold the write-ahead log into the main file, so that ``RUN.db`` alone holds every
        committed row (people copy the file, not its ``-wal``). FULL waits for readers of an
        older snapshot (their busy timeout) instead of leaving frames behind."""
        if self._connection is None:
            return
        try:
            busy, _, _ = self._connection.execute("PRAGMA wal_checkpoint(FULL)").fetchone()
        except sqlite3.Error as error:  # a full disk: the rows are safe in the WAL
            logger.warning("checkpoint of %s failed: %s; its rows are in %s-wal until the next "
                           "one", self.path, error, self.path)
            return
        if busy:
            logger.warning("checkpoint of %s incomplete (a reader held it); its last rows are "
                           "in %s-wal until the next one", self.path, self.path)

    def finish(self, status: str, detail: str = "") -> None:
        """End the writing: mark the run ``status`` (with ``detail``) and release it.

        Raises:
            JournalError: an unknown status.
            DiskFullError: the status could not be written (the file is full).
        """
        if status not in STATUSES:
            raise JournalError(f"a run's status is one of {STATUSES}; got {status!r}")
        self._require_writer()
        self._stop_heartbeat.set()
        query = ("UPDATE run SET status = ?, status_detail = ?, updated = ?, running_seconds = ?, "
                 "writer = 'null' WHERE id = 1")
        try:
            self._write(query, (status, detail, time.time(), self.running_seconds()))
        except DiskFullError:
            if not self._release_reserve():
                raise
            # in the room the reserve held
            self._write(query, (status, detail, time.time(), self.running_seconds()))
        self._writing = False
        self._release_reserve()
        self._checkpoint()

    @property
    def spent_before(self) -> float:
        """Running seconds of the run's sessions before this one (0 for a new run, and for a
        journal written before nord counted them)."""
        return self._spent_before

    def running_seconds(self) -> float:
        """Seconds the run has run in all its sessions: while this process writes it, this
        session included (recorded with every commit and heartbeat, so a killed session
        loses at most the seconds since the last); else as recorded (0 when unknown)."""
        if self._writing:
            return self._spent_before + (time.monotonic() - self._session_started)
        rows = self._query("SELECT * FROM run WHERE id = 1")
        return float((dict(rows[0]).get("running_seconds") if rows else None) or 0.0)

    def set_budget(self, budget: int) -> None:
        """Record a new budget for the run being written (a resumed run that was extended)."""
        self._require_writer()
        self._write("UPDATE run SET budget = ?, updated = ? WHERE id = 1",
                    (int(budget), time.time()))
        self._checkpoint()
