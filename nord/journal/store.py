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

import json
import logging
import math
import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

from nord.errors import DiskFullError, JournalError, JournalInUseError
from nord.journal.records import (CandidateRecord, EvaluationRecord, LegRecord, RunRecord,
                                  evaluation_row, leg_row)
from nord.journal.schema import (EVALUATION_COLUMNS, JSON_RUN_COLUMNS, LEG_COLUMNS,
                                 RESULT_COLUMNS, SCHEMA_VERSION, add_missing,
                                 create_tables)
from nord.journal.versions import package_versions
from nord.journal.writers import HEARTBEAT_SECONDS, Writer
from nord.jsonable import dumps

__all__ = ["Journal", "STATUSES"]

logger = logging.getLogger(__name__)

STATUSES = ("running", "finished", "interrupted", "failed", "crashed")
RESERVE_BYTES = 256 * 1024
"""Disk held beside a journal being written (``RUN.db-reserve``), given back to write the
run's final status when the disk is full."""


def _real(value: Optional[float]) -> float:
    """SQLite stores NaN as NULL; read it back as NaN."""
    return math.nan if value is None else float(value)


def _free_space(path: Path) -> str:
    try:
        free = shutil.disk_usage(path.parent if path.parent.exists() else ".").free
    except OSError:
        return "unknown"
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if free < 1024 or unit == "TB":
            return f"{free:.0f} {unit}" if unit == "bytes" else f"{free:.1f} {unit}"
        free /= 1024
    return "unknown"


class Journal:
    """The SQLite record of one search run.

    Args:
        path: the database file. :meth:`start` creates it; the read methods never do (they
            raise :class:`JournalError` for a missing file or one that is not a journal).

    Read methods may be used by any number of processes, also while the run is written.
    """

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = Path(path)
        self._connection: Optional[sqlite3.Connection] = None
        self._writing = False
        self._spent_before = 0.0                 # running seconds of the run's earlier sessions
        self._session_started = time.monotonic()
        self._writer: Optional[Writer] = None
        self._heartbeat: Optional[threading.Thread] = None
        self._stop_heartbeat = threading.Event()
        self._version = SCHEMA_VERSION
        self._attempted: Set[int] = set()   # candidates this writer handed out (release_attempts)

    # --- opening ----------------------------------------------------------------------------
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

    def exists(self) -> bool:
        """Whether the file exists and holds a nord journal with a run."""
        if not self.path.exists():
            return False
        return self._query("SELECT COUNT(*) FROM run")[0][0] == 1

    def _open(self, create: bool = False) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        if not create and not self.path.is_file():
            what = "is a folder" if self.path.is_dir() else "does not exist"
            raise JournalError(f"no journal at '{self.path}': the path {what}; check the path, "
                               "or start a run that writes it")
        new = not self.path.exists()
        connection = None
        if create:
            self._make_folder()
        try:
            if not create and read_only(self.path):
                connection = self._connect_read_only()
            else:
                connection = sqlite3.connect(str(self.path), timeout=30.0,
                                             isolation_level=None)
            connection.row_factory = sqlite3.Row
            tables = {row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
            # per connection: in WAL mode a commit then needs no fsync, and survives the
            # death of the process (docs/journal.md)
            connection.execute("PRAGMA synchronous=NORMAL")
        except (OSError, sqlite3.DatabaseError) as error:
            if connection is not None:   # the file stays unheld (a folder can be unmounted)
                connection.close()
            if new:
                raise JournalError(
                    f"cannot create a journal at '{self.path}' ({error}); give a path in a "
                    "folder this process can write") from error
            raise JournalError(
                f"'{self.path}' is not a nord journal, or is damaged (SQLite says: {error}); give "
                "the path of a journal written by a search"
            ) from error
        try:
            if not tables and create:
                create_tables(connection)
            elif not tables:   # a journal's tables come in one transaction after its file
                raise JournalError(
                    f"'{self.path}' is not a nord journal: an SQLite database without tables "
                    "(a journal is one only while a run creates it: if one is starting, try "
                    "again); give the path of a journal written by a search")
            elif "nord_schema" not in tables:
                raise JournalError(
                    f"'{self.path}' is an SQLite database but not a nord journal (it has no "
                    f"nord_schema table; tables: {sorted(tables)}); give the path of a journal "
                    "written by a search")
            else:
                row = connection.execute("SELECT version FROM nord_schema").fetchone()
                version = None if row is None else row[0]
                if version not in (1, SCHEMA_VERSION):
                    raise JournalError(
                        f"'{self.path}' is a nord journal of schema version {version}; this nord "
                        f"reads versions 1 and {SCHEMA_VERSION}. Open it with the nord release "
                        "that wrote it, or start a new journal")
                self._version = version
        except sqlite3.DatabaseError as error:
            connection.close()
            raise self._damaged(error) from error
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        return connection

    def _make_folder(self) -> None:
        """Create the journal's own folder when it is missing, and no more: a path whose
        folder's folder is missing too is more likely a typo than a wish for new folders."""
        folder = self.path.parent
        if folder.exists():
            return
        if not folder.parent.exists():
            missing = next(parent for parent in reversed(folder.parents)
                           if not parent.exists()) if folder.parents else folder
            raise JournalError(
                f"cannot create a journal at '{self.path}': the folder '{missing}' does not "
                f"exist (nord creates at most the journal's own folder, '{folder}'); check "
                f"the path, or create the folders first (mkdir -p {folder})")
        try:
            folder.mkdir()
        except OSError as error:
            raise JournalError(
                f"cannot create a journal at '{self.path}': its folder cannot be created "
                f"({error.strerror or error}); give a path in a folder this process can "
                "write") from error
        logger.info("created the folder %s for the journal", folder)

    def _connect_read_only(self) -> sqlite3.Connection:
        """A connection to a journal that cannot be written (a read-only file system or
        file): WAL mode needs a ``-shm`` file beside it, so the file is read as immutable,
        the main file alone, which holds every committed row (the writer checkpoints after
        each commit)."""
        wal = Path(f"{self.path}-wal")
        if wal.is_file() and wal.stat().st_size > 0:
            logger.warning("'%s' is read-only and has a '-wal' file: rows that were never "
                           "checkpointed (a run killed before nord checkpointed each commit) "
                           "are not read; copy both files somewhere writable to read them",
                           self.path)
        uri = f"{Path(os.path.abspath(self.path)).as_uri()}?mode=ro&immutable=1"
        return sqlite3.connect(uri, uri=True, timeout=30.0, isolation_level=None)

    def _damaged(self, error: BaseException) -> JournalError:
        return JournalError(
            f"'{self.path}' is damaged and cannot be read ({type(error).__name__}: {error}); "
            f"'sqlite3 {self.path} .recover' may save its readable rows into a new file")

    def _query(self, sql: str, params: Sequence[Any] = ()) -> List[sqlite3.Row]:
        """The rows of a read query; a damaged file becomes a JournalError naming it."""
        connection = self._open()
        try:
            return connection.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as error:
            raise self._damaged(error) from error

    def _write(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One write statement (autocommit); a full disk becomes a DiskFullError."""
        try:
            self._open().execute(sql, params)
        except sqlite3.OperationalError as error:
            raise self._write_error(error) from error

    def _write_error(self, error: sqlite3.Error) -> JournalError:
        if "full" in str(error).lower():
            return DiskFullError(
                f"the disk holding '{self.path}' is full ({_free_space(self.path)} free): the "
                "journal keeps every result committed before; free some space and resume with "
                f"'nord resume {self.path}'")
        return JournalError(f"cannot write '{self.path}': {error}")

    # --- writing (the run's one writer) ----------------------------------------------------
    def check_start(self, record: RunRecord, resume: bool = False,
                    compare: Sequence[str] = RunRecord.MUST_MATCH) -> Optional[RunRecord]:
        """Check, without writing anything, that :meth:`start` would succeed.

        ``compare`` limits the fields compared on resume (a caller that checks early, before
        it knows the whole record, compares what it knows; :meth:`start` compares all).

        Returns:
            The journaled run's record when it would be resumed, None for a new run.

        Raises:
            JournalError: the file holds a run and ``resume`` is False; ``resume`` is True and
                the file holds no run; a field in :attr:`RunRecord.MUST_MATCH` differs (the
                message names it and shows both values); the journal was written by an
                older nord.
            JournalInUseError: another live process writes it (its host and pid are named).
        """
        if self.path.is_dir():
            raise JournalError(
                f"'{self.path}' is a folder, not a journal file; give a file path, e.g. "
                f"'{self.path / 'run.db'}'")
        if not self.path.exists():
            if resume:
                raise JournalError(
                    f"there is no journal at '{self.path}' to resume; check the path (a new run "
                    "is started without --resume)")
            return None
        if read_only(self.path):
            raise JournalError(
                f"cannot {'resume' if resume else 'start a run in'} '{self.path}': the file is "
                "read-only (its file system, folder or file cannot be written), and a run "
                f"writes its journal. Copy it somewhere writable ('nord export {self.path} "
                "COPY.db') and resume the copy; reading commands (list, report, config, "
                "export) work on it as it is")
        try:
            holds_run = self.exists()
        except JournalError as unreadable:
            if resume:
                raise
            raise JournalError(f"{unreadable}, or a new path to start a run") from unreadable
        if not holds_run:
            if resume:
                raise JournalError(
                    f"'{self.path}' holds no run to resume (the run was created but never "
                    "started); start it again without --resume, or give a new journal path")
            return None
        stored = self.run_record()
        meta = self.metadata()
        if not resume:
            raise JournalError(
                f"'{self.path}' already holds a run ({stored.algorithm}, {self.count()} "
                f"evaluations, {self.state()}); it was left untouched. Resume it with --resume "
                "('nord resume PATH'), or give a new journal path")
        if self._version != SCHEMA_VERSION:
            raise JournalError(
                f"'{self.path}' was written by an older nord (journal schema {self._version}): it "
                "can be read and reported, but not resumed; start a new journal")
        writer = Writer.from_json(meta.get("writer"))
        if writer is not None and writer.alive(meta.get("heartbeat")):
            raise JournalInUseError(
                f"'{self.path}' is being written by {writer} (heartbeat "
                f"{_ago(meta.get('heartbeat'))}); wait for that run to end or stop it, then "
                "resume")
        differences = record.differences(stored, compare)
        if differences:
            name, theirs, mine = differences[0]
            if name.startswith("dataset.files"):
                raise JournalError(_data_changed(self.path, name, theirs, mine))
            raise JournalError(
                f"cannot resume '{self.path}': its run has {name}={dumps(theirs)}, this one "
                f"{name}={dumps(mine)}. Resume with the settings the run was started with (only "
                "the budget and where it runs may change), or give a new journal path")
        recorded = self.count()
        claimed = meta.get("recorded_results")
        if claimed is not None and recorded < claimed:
            raise JournalError(
                f"cannot resume '{self.path}': its run recorded {claimed} results, but the file "
                f"holds {recorded}; the rest were lost (a copy of the file made without its "
                f"'-wal' file by an older nord, or one taken while a checkpoint wrote it). "
                f"Resuming would start those evaluations over: resume the original file, or "
                f"copy RUN.db together with RUN.db-wal ('nord export' makes a whole copy); the "
                f"file was left untouched")
        # candidates proposed but not evaluated when the run stopped are evaluated first
        proposed = max(recorded, self._query("SELECT COUNT(*) FROM candidates")[0][0])
        if record.budget and record.budget < proposed:   # 0: not known yet
            pending = (f" and {proposed - recorded} candidates proposed, which a resume "
                       "evaluates first" if proposed > recorded else "")
            raise JournalError(
                f"cannot resume '{self.path}' with a budget of {record.budget}: it already holds "
                f"{recorded} evaluations{pending}, and a budget counts them too. Give a budget "
                f"of at least {proposed} (its own was {stored.budget}), or give a new journal "
                "path")
        return stored

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
        epoch_rows = [(candidate, e.epoch, e.train_loss, e.valid_accuracy, e.valid_loss,
                       e.seconds, dumps(e.metrics), rank, now) for candidate, e, rank in epochs]
        legs = list(legs)
        leg_rows = [leg_row(leg) for leg in legs]
        attempt_rows = [(number, now) for number in attempts]
        # a leg that ended is an attempt its process survived: the count starts again
        # (before this commit's hand-outs, which may be the candidate's next leg)
        survived = [(leg.candidate,) for leg in legs if leg.ended_event is not None]
        if not (candidate_rows or evaluation_rows or epoch_rows or leg_rows or attempt_rows):
            return
        connection = self._require_writer()
        try:
            connection.execute("BEGIN")
            try:
                connection.executemany(
                    "INSERT INTO candidates (candidate, generation, genome, told_before, asked)"
                    " VALUES (?, ?, ?, ?, ?)", candidate_rows)
                connection.executemany(
                    f"INSERT INTO evaluations ({', '.join(EVALUATION_COLUMNS)}) VALUES "
                    f"({', '.join('?' * len(EVALUATION_COLUMNS))})", evaluation_rows)
                # an epoch trained again after a crash replaces the lost leg's row
                connection.executemany(
                    "INSERT OR REPLACE INTO epochs (candidate, epoch, train_loss, valid_accuracy,"
                    " valid_loss, seconds, metrics, worker_rank, recorded) VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, ?)", epoch_rows)
                connection.executemany(
                    f"INSERT OR REPLACE INTO legs ({', '.join(LEG_COLUMNS)}) VALUES "
                    f"({', '.join('?' * len(LEG_COLUMNS))})", leg_rows)
                connection.executemany("UPDATE attempts SET count = 0 WHERE candidate = ?",
                                       survived)
                connection.executemany(
                    "INSERT INTO attempts (candidate, count, started) VALUES (?, 1, ?) ON "
                    "CONFLICT (candidate) DO UPDATE SET count = count + 1, started = "
                    "excluded.started", attempt_rows)
                # the run says how many results it has: a copy that lost some is caught
                connection.execute(
                    "UPDATE run SET updated = ?, heartbeat = ?, running_seconds = ?, "
                    "recorded_results = (SELECT COUNT(*) FROM evaluations) WHERE id = 1",
                    (now, now, self.running_seconds()))
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
        except sqlite3.IntegrityError as error:
            raise JournalError(
                f"'{self.path}' already has one of these candidates or evaluations ({error}); "
                "a journal is written by one process, once per candidate") from error
        except sqlite3.OperationalError as error:
            raise self._write_error(error) from error
        self._attempted.difference_update(number for number, in survived)
        self._attempted.update(number for number, _ in attempt_rows)
        self._checkpoint()

    def attempts(self, told: bool = False) -> Dict[int, int]:
        """Candidate -> how often its evaluation (under a scheduler: its current leg) was
        handed out and the process that ran the run died before its result was recorded
        (``kill -9``, the out-of-memory killer, a lost host; also a SIGTERM, as mpirun ends
        the other ranks when one dies), for the candidates without a result (``told``: also
        those told, whose later leg may be in flight). A stop that the run survived to mark
        (Ctrl-C, an error) is not counted: see :meth:`release_attempts`."""
        if self._version == 1 or "attempts" not in {row[0] for row in self._query(
                "SELECT name FROM sqlite_master WHERE type='table'")}:
            return {}
        untold = "" if told else " AND candidate NOT IN (SELECT candidate FROM evaluations)"
        rows = self._query(f"SELECT candidate, count FROM attempts WHERE count > 0{untold}")
        return {row[0]: row[1] for row in rows}

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

    def export(self, destination: Union[str, os.PathLike]) -> Path:
        """Write a consistent copy of the journal to ``destination`` (SQLite's backup API).

        Safe while the run is written: the copy holds every transaction committed when it was
        taken, and nothing half-written. A copy of a running run says ``interrupted`` (nothing
        writes it) and can be resumed on its own.

        Raises:
            JournalError: the destination exists, or cannot be written.
        """
        destination = Path(destination)
        if destination.exists():
            raise JournalError(f"'{destination}' exists already; export to a new path")
        source = self._open()
        try:
            destination.parent.mkdir(parents=True, exist_ok=True)
            target = sqlite3.connect(str(destination))
        except (OSError, sqlite3.Error) as error:
            raise JournalError(f"cannot write '{destination}': {error}") from error
        try:
            source.backup(target)
            target.execute("PRAGMA journal_mode=DELETE")
            # no process writes the copy: a run copied while running is, as a copy, stopped
            # there, and a resume of it must not wait for the original's writer
            with target:
                target.execute(
                    "UPDATE run SET status = 'interrupted', status_detail = ?, writer = 'null', "
                    "heartbeat = NULL WHERE id = 1 AND status = 'running'",
                    (f"exported from '{self.path}' while it was running; the copy can be "
                     "resumed",))
        except sqlite3.DatabaseError as error:
            target.close()
            destination.unlink(missing_ok=True)
            raise self._damaged(error) from error
        target.close()
        return destination

    # --- reading ------------------------------------------------------------------------
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
        meta = self.metadata()
        if meta["status"] != "running" or self._version == 1:
            return meta["status"]
        writer = Writer.from_json(meta.get("writer"))
        alive = writer is not None and writer.alive(meta.get("heartbeat"))
        return "running" if alive else "killed"

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
            "SELECT candidate, start_epochs, json_extract(result, '$.metrics.epochs_resumed') "
            "FROM legs WHERE result IS NOT NULL")
        if legs:   # trained in legs: a told result resumed from a pause, the legs say more
            kept = {}
            for candidate, start, epochs in legs:
                if epochs and epochs > start:
                    kept[candidate] = kept.get(candidate, 0) + int(epochs) - start
        return kept

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
        rows = [row for row in self.evaluations()
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
        """Metadata plus counts, the best accuracy and the state: one line of ``list_runs``."""
        meta = self.metadata()
        cached = "cached" if self._version == 1 else "cached_from IS NOT NULL"
        counts = self._query(
            f"SELECT COUNT(*), SUM(status = 'ok'), SUM(status != 'ok'), SUM({cached}),"
            " MAX(CASE WHEN status = 'ok' THEN accuracy END), MIN(started), MAX(ended)"
            " FROM evaluations")[0]
        total, ok, failed, cached_count, best, first, last = counts
        if self.legs():   # a promoted candidate's result is its furthest leg's, not the told one
            top = self.best()
            best = None if top is None else top["accuracy"]
        return {
            "path": str(self.path), **meta, "state": self.state(),
            "evaluations": total, "ok": ok or 0, "failed": failed or 0,
            "cached": cached_count or 0, "best_accuracy": _real(best),
            "resumed": self.resumed(),
            "wall_time": (last - first) if first is not None and last is not None else math.nan,
        }

    def __repr__(self) -> str:
        return f"Journal({str(self.path)!r})"


def read_only(path: Path) -> bool:
    """Whether ``path`` (an existing file) cannot be written: a read-only file system (also
    for root), or a file or folder this process may not write."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return True
    except (OSError, AttributeError):   # AttributeError: no statvfs (Windows)
        pass
    return not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def _data_changed(path: Path, name: str, theirs: Any, mine: Any) -> str:
    """Why a resume on data other than the run's is refused, naming the file."""
    if isinstance(theirs, dict) or isinstance(mine, dict):   # the files read differ
        theirs, mine = theirs or {}, mine or {}
        file = sorted(set(theirs) ^ set(mine), key=str)[0]
        what = (f"the run read {file}, and this one does not" if file in theirs
                else f"this run reads {file}, which the run did not")
    else:
        file = name[len("dataset.files."):]
        if theirs and mine:
            what = f"the run trained on {file} with MD5 {theirs}; that file now has MD5 {mine}"
        elif theirs:
            what = f"the run read {file} (MD5 {theirs}), and this one does not find it"
        else:
            what = f"this run reads {file} (MD5 {mine}), which the run did not"
    return (f"cannot resume '{path}': {what}. The data changed since the run started, and one "
            "journal must not mix two data sets: put the run's files back (its journal records "
            "their MD5s in the run's dataset), or start a new journal; the journal was left "
            "untouched")


def _ago(moment: Optional[float]) -> str:
    if moment is None:
        return "never written"
    return f"{max(0.0, time.time() - moment):.0f} s ago"
