"""Journal: the record of one search run, an SQLite file written by one process (rank 0).

The search engine commits every result as soon as it is known (with the proposals made before
it, in one transaction), so a run killed at any point (even ``kill -9``) loses at most the
evaluations in flight, and ``run_search(..., resume=True)`` continues from the file. Reports
read the same file::

    from nord.journal import Journal, list_runs

    with Journal("runs/ga-seed0.db") as journal:
        journal.metadata()["algorithm"]         # 'genetic', with 'parameters', 'seed', 'space', ...
        rows = journal.evaluations()            # one dict per evaluation, in the order told
        journal.best()["accuracy"]
        journal.state()                         # 'finished', or 'killed' when its writer died

    runs, skipped = list_runs("runs")           # every journal below a folder, oldest first

**Tables** (``sqlite3 run.db .schema`` shows them):

* ``nord_schema``: the schema version, so that a newer nord refuses an older layout clearly.
* ``run``: one row: algorithm, its parameters, seed, search space, evaluator, data set, mode,
  batch size, budget, ``execution`` (ranks, groups, workers, device ...: what may change when
  the run is resumed), the runner's ``config``, versions, created and updated times, the
  ``status`` with its ``status_detail``, how often it was ``resumed``, and the ``writer``
  (host, pid) that holds it with its ``heartbeat``.
* ``candidates``: every candidate the algorithm proposed, with ``told_before``: how many
  results the algorithm had been told when it proposed it. Resuming replays the proposals at
  exactly those points.
* ``epochs``: the learning curves: one row per epoch trained (``candidate``, ``epoch``), with
  training loss, validation accuracy and loss, the epoch's seconds and the training callbacks'
  ``metrics``, committed as the epoch ends (a crash keeps the epochs already done).
* ``legs``: with a scheduler, each leg of a candidate's training (from ``start_epochs`` to
  ``target_epochs``), with its result and the scheduler's ``decision`` (continue, pause,
  stop, done); ``started_event`` and ``ended_event`` order hand-outs and ends, so that a
  resumed run rebuilds the scheduler exactly.
* ``evaluations``: one row per result the algorithm is told: ``sequence`` (the order told,
  from 0), ``candidate`` (the order proposed), generation, genome (JSON), ``key`` (the search
  space's exact identity of the architecture: equal keys are the same architecture), the
  descriptor's JSON when one was built, ``worker_rank`` (world rank of the group root that
  evaluated it; NULL when no worker did: a genome that did not decode, or a cached result),
  every :class:`~nord.evaluators.result.EvaluationResult` field, ``cached_from`` (the
  candidate whose result was reused for the same architecture, NULL when evaluated), and the
  ``started`` and ``ended`` wall-clock times (seconds since the epoch).

**Status.** ``running`` while a process writes it; ``finished`` when the budget is spent or the
algorithm finished; ``interrupted`` after SIGINT or SIGTERM (Ctrl-C, a scheduler's kill);
``failed`` when the run could not go on for a reason nord names (``status_detail``, e.g. a
full disk); ``crashed`` after an unexpected error. A run killed with ``kill -9`` stays
``running``, but its writer is gone: :meth:`Journal.state` then says ``killed``. Every one
of them can be resumed.

**One writer.** A journal is written by one process. Resuming refuses at once while the
process that holds it is alive, naming its host and pid. Liveness is checked, not locked: on
the same machine the writer's process must exist with the same start time; from another
machine its heartbeat (written every :data:`HEARTBEAT_SECONDS`) must be recent. So a writer
that died, even by ``kill -9``, leaves nothing that blocks a resume.

**The file on disk.** The database runs in WAL mode with ``synchronous=NORMAL``: a commit
survives the death of the process (only a power cut can lose the last ones), and a report can
read the file while the run writes it. New rows first go to ``RUN.db-wal``; the writer folds
them into ``RUN.db`` at most :data:`CHECKPOINT_SECONDS` after each commit and when it stops.
So a copy of ``RUN.db`` alone, made at any moment, holds the run as it was at most a second
earlier (a consistent prefix: whole transactions only); ``RUN.db`` with its ``-wal`` file
holds everything committed; :meth:`Journal.export` (``nord export``) writes a consistent copy
of everything, also of a live run.
"""
from __future__ import annotations

import json
import logging
import math
import os
import platform
import shutil
import socket
import sqlite3
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from nord.errors import DiskFullError, JournalError, JournalInUseError
from nord.jsonable import dumps, plain

__all__ = ["Journal", "RunRecord", "CandidateRecord", "EvaluationRecord", "LegRecord", "Writer",
           "list_runs", "evaluation_result", "package_versions", "SCHEMA_VERSION", "STATUSES",
           "HEARTBEAT_SECONDS", "CHECKPOINT_SECONDS"]

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 2
STATUSES = ("running", "finished", "interrupted", "failed", "crashed")
HEARTBEAT_SECONDS = 10.0
"""How often a writer refreshes its heartbeat; a writer on another machine whose heartbeat is
older than three of these is taken for dead."""
CHECKPOINT_SECONDS = 1.0
"""The longest time committed rows stay in the ``-wal`` file only (see the module docstring)."""

_RESULT_COLUMNS = ("accuracy", "loss", "train_time", "eval_time", "n_params", "epochs", "status",
                   "error", "reported_accuracy", "metrics")
_EVALUATION_COLUMNS = ("sequence", "candidate", "generation", "genome", "key", "descriptor",
                       "worker_rank") + _RESULT_COLUMNS + ("cached_from", "started", "ended")
_JSON_RUN_COLUMNS = ("parameters", "seed", "space", "evaluator", "dataset", "execution",
                     "config", "scheduler", "versions", "extra", "writer")

_SCHEMA = """
CREATE TABLE nord_schema (
    version INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE run (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    algorithm TEXT NOT NULL,
    parameters TEXT NOT NULL,
    seed TEXT NOT NULL,
    space TEXT NOT NULL,
    evaluator TEXT NOT NULL,
    dataset TEXT NOT NULL,
    mode TEXT NOT NULL,
    batch_size INTEGER,
    budget INTEGER NOT NULL,
    execution TEXT NOT NULL,
    config TEXT NOT NULL,
    scheduler TEXT NOT NULL DEFAULT '{}',
    versions TEXT NOT NULL,
    extra TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    status TEXT NOT NULL,
    status_detail TEXT NOT NULL DEFAULT '',
    resumed INTEGER NOT NULL DEFAULT 0,
    writer TEXT NOT NULL DEFAULT 'null',
    heartbeat REAL
);
CREATE TABLE candidates (
    candidate INTEGER PRIMARY KEY,
    generation INTEGER NOT NULL,
    genome TEXT NOT NULL,
    told_before INTEGER NOT NULL,
    asked REAL NOT NULL
);
CREATE TABLE evaluations (
    sequence INTEGER PRIMARY KEY,
    candidate INTEGER NOT NULL UNIQUE,
    generation INTEGER NOT NULL,
    genome TEXT NOT NULL,
    key NOT NULL,
    descriptor TEXT,
    worker_rank INTEGER,
    accuracy REAL,
    loss REAL,
    train_time REAL,
    eval_time REAL,
    n_params INTEGER,
    epochs INTEGER,
    status TEXT NOT NULL,
    error TEXT NOT NULL,
    reported_accuracy REAL,
    metrics TEXT NOT NULL,
    cached_from INTEGER,
    started REAL,
    ended REAL
);
CREATE INDEX evaluations_key ON evaluations (key);
CREATE INDEX evaluations_generation ON evaluations (generation);
CREATE TABLE epochs (
    candidate INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    train_loss REAL,
    valid_accuracy REAL,
    valid_loss REAL,
    seconds REAL,
    metrics TEXT NOT NULL,
    worker_rank INTEGER,
    recorded REAL NOT NULL,
    PRIMARY KEY (candidate, epoch)
);
CREATE TABLE legs (
    leg INTEGER PRIMARY KEY,
    candidate INTEGER NOT NULL,
    start_epochs INTEGER NOT NULL,
    target_epochs INTEGER NOT NULL,
    started_event INTEGER NOT NULL,
    ended_event INTEGER,
    started REAL,
    ended REAL,
    accuracy REAL,
    reported_accuracy REAL,
    status TEXT,
    error TEXT,
    decision TEXT,
    worker_rank INTEGER,
    train_time REAL,
    result TEXT,
    detail TEXT NOT NULL DEFAULT ''
);
"""


# --- what travels into the journal ------------------------------------------------------------
@dataclass
class RunRecord:
    """What a run is, as the journal stores it.

    The fields in :attr:`MUST_MATCH` decide what a run measures: a resumed run must have the
    same ones (``batch_size`` only when given: None takes the journal's). ``budget`` and
    ``execution`` (where and how the run executes: ranks, workers, device, threads ...) may
    change when it is resumed.

    Attributes:
        algorithm: the algorithm's name.
        parameters: its settings (``SearchAlgorithm.parameters()``).
        seed: its seed.
        space: the search space (``SearchSpace.describe()``).
        evaluator: how candidates are evaluated (``Evaluator.describe()``).
        dataset: the data set, when there is one.
        mode: 'sync' or 'async'.
        batch_size: candidates per synchronous batch (None in async mode).
        budget: evaluations in the run.
        execution: ranks, groups, workers, worker ranks and other settings of where it runs.
        config: the settings a runner needs to start the run again (e.g. ``RunConfig``
            without its execution settings), or empty.
        extra: anything else to keep (free-form).
        scheduler: the scheduler's settings (empty without one).
    """

    algorithm: str
    parameters: Dict[str, Any]
    seed: Any
    space: Dict[str, Any]
    evaluator: Dict[str, Any] = field(default_factory=dict)
    dataset: Optional[Dict[str, Any]] = None
    mode: str = "sync"
    batch_size: Optional[int] = None
    budget: int = 0
    execution: Dict[str, Any] = field(default_factory=dict)
    config: Dict[str, Any] = field(default_factory=dict)
    extra: Dict[str, Any] = field(default_factory=dict)
    scheduler: Dict[str, Any] = field(default_factory=dict)

    MUST_MATCH = ("algorithm", "seed", "parameters", "space", "evaluator", "dataset", "mode",
                  "batch_size", "config", "scheduler")

    def differences(self, stored: "RunRecord", compare: Sequence[str] = MUST_MATCH
                    ) -> List[Tuple[str, Any, Any]]:
        """``(field, stored value, this value)`` for every field of ``compare`` (default: all
        that must match) that differs."""
        found = []
        for name in compare:
            mine = plain(getattr(self, name))
            theirs = plain(getattr(stored, name))
            if name == "batch_size" and mine is None:
                continue
            if mine != theirs:
                found.append(_first_difference(name, theirs, mine))
        return found


def _first_difference(name: str, theirs: Any, mine: Any) -> Tuple[str, Any, Any]:
    """The innermost differing entry of two settings, named ``field.key.key``."""
    while isinstance(theirs, dict) and isinstance(mine, dict):
        key = next((key for key in sorted(set(theirs) | set(mine), key=str)
                    if theirs.get(key) != mine.get(key)), None)
        if key is None:
            break
        name, theirs, mine = f"{name}.{key}", theirs.get(key), mine.get(key)
    return name, theirs, mine


@dataclass
class CandidateRecord:
    """A proposal: candidate ``number`` of ``generation``, proposed after ``told_before`` results."""

    number: int
    generation: int
    genome: Sequence[Any]
    told_before: int


@dataclass
class EvaluationRecord:
    """A told result, in the order told (``sequence``).

    Attributes:
        sequence: its place in the order results were told, from 0.
        candidate: the candidate's number; generation, genome: the candidate's.
        key: the space's identity of the architecture.
        descriptor: the descriptor's JSON, or None when none was built.
        worker_rank: world rank of the group root that evaluated it (None: no worker did).
        result: the EvaluationResult.
        cached_from: the candidate whose result was reused, or None.
        started, ended: wall-clock times (seconds since the epoch).
    """

    sequence: int
    candidate: int
    generation: int
    genome: Sequence[Any]
    key: Any
    descriptor: Optional[str]
    worker_rank: Optional[int]
    result: Any
    cached_from: Optional[int] = None
    started: Optional[float] = None
    ended: Optional[float] = None

    @property
    def cached(self) -> bool:
        return self.cached_from is not None


@dataclass
class LegRecord:
    """One leg of a candidate's training under a scheduler (see the ``legs`` table): written
    when it is handed out, and again (with its result and decision) when it ends."""

    leg: int
    candidate: int
    start_epochs: int
    target_epochs: int
    started_event: int
    started: Optional[float] = None
    ended_event: Optional[int] = None
    ended: Optional[float] = None
    result: Any = None
    decision: Optional[str] = None
    worker_rank: Optional[int] = None
    detail: str = ""


# --- who writes a journal ----------------------------------------------------------------------
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _process_start(pid: int) -> Optional[int]:
    """The start time of process ``pid`` in clock ticks since boot (Linux), or None when
    there is no such process or it has ended: a zombie (killed, not yet reaped by its
    parent) writes nothing more."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:
        fields = stat.rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else int(fields[19])
    except (IndexError, ValueError):
        return None


class Writer(NamedTuple):
    """The process that writes a journal: host name, pid, the pid's start time and boot id
    (so that a pid reused after the writer died is not taken for it)."""

    host: str
    pid: int
    started: Optional[int]
    boot: str

    @classmethod
    def this_process(cls) -> "Writer":
        pid = os.getpid()
        return cls(socket.gethostname(), pid, _process_start(pid), _boot_id())

    @classmethod
    def from_json(cls, value: Any) -> Optional["Writer"]:
        if not isinstance(value, Mapping):
            return None
        try:
            return cls(str(value["host"]), int(value["pid"]), value.get("started"),
                       str(value.get("boot", "")))
        except (KeyError, TypeError, ValueError):
            return None

    def to_json(self) -> Dict[str, Any]:
        return self._asdict()

    def alive(self, heartbeat: Optional[float], now: Optional[float] = None) -> bool:
        """Whether this writer still runs (see the module docstring)."""
        here = Writer.this_process()
        if self.host == here.host and self.boot == here.boot and self.boot:
            return self.started is not None and _process_start(self.pid) == self.started
        now = time.time() if now is None else now
        return heartbeat is not None and now - heartbeat < 3 * HEARTBEAT_SECONDS

    def __str__(self) -> str:
        return f"pid {self.pid} on host {self.host}"


def package_versions() -> Dict[str, Optional[str]]:
    """Versions of Python, nord, numpy, torch, mpi4py and the MPI library, without importing
    torch or starting MPI (the MPI library is named only when mpi4py's MPI is already loaded)."""
    versions: Dict[str, Optional[str]] = {"python": platform.python_version()}
    for package in ("nord", "numpy", "torch", "mpi4py", "horovod", "pygmo"):
        try:
            versions[package] = importlib_metadata.version(package)
        except importlib_metadata.PackageNotFoundError:
            versions[package] = None
    if versions["nord"] is None:
        import nord
        versions["nord"] = getattr(nord, "__version__", None)
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None:
        try:
            versions["mpi"] = mpi.Get_library_version().strip().splitlines()[0]
        except Exception:  # noqa: BLE001 - a version string is not worth failing a run for
            versions["mpi"] = None
    return versions


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
        self._writer: Optional[Writer] = None
        self._heartbeat: Optional[threading.Thread] = None
        self._stop_heartbeat = threading.Event()
        self._checkpointed = 0.0
        self._version = SCHEMA_VERSION

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
                self._checkpoint(force=True)
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
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
            connection.row_factory = sqlite3.Row
            tables = {row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
            # per connection: in WAL mode a commit then needs no fsync, and survives the
            # death of the process (see the module docstring)
            connection.execute("PRAGMA synchronous=NORMAL")
        except (OSError, sqlite3.DatabaseError) as error:
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
                self._create(connection)
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

    @staticmethod
    def _create(connection: sqlite3.Connection) -> None:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("BEGIN")
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                connection.execute(statement)
        connection.execute("INSERT INTO nord_schema (version, created) VALUES (?, ?)",
                           (SCHEMA_VERSION, time.time()))
        connection.execute("COMMIT")

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
            raise JournalError(
                f"cannot resume '{self.path}': its run has {name}={dumps(theirs)}, this one "
                f"{name}={dumps(mine)}. Resume with the settings the run was started with (only "
                "the budget and where it runs may change), or give a new journal path")
        recorded = self.count()
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
        stored = self.check_start(record, resume)
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
                    meta = dict(connection.execute(
                        "SELECT writer, heartbeat FROM run WHERE id = 1").fetchone())
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
        self._checkpointed = time.monotonic()
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

    def _start_heartbeat(self) -> None:
        self._stop_heartbeat.clear()
        path, writer, stop = str(self.path), dumps(self._writer.to_json()), self._stop_heartbeat

        def beat() -> None:
            try:
                connection = sqlite3.connect(path, timeout=5.0, isolation_level=None)
            except sqlite3.Error:
                return
            try:
                while not stop.wait(HEARTBEAT_SECONDS):
                    try:
                        connection.execute("UPDATE run SET heartbeat = ? WHERE id = 1 AND "
                                           "writer = ?", (time.time(), writer))
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
               legs: Iterable[LegRecord] = ()) -> None:
        """Record proposed candidates, told results, finished epochs (``(candidate,
        EpochRecord, worker_rank)``) and legs of training, in one commit.

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
        evaluation_rows = [_evaluation_row(evaluation) for evaluation in evaluations]
        epoch_rows = [(candidate, e.epoch, e.train_loss, e.valid_accuracy, e.valid_loss,
                       e.seconds, dumps(e.metrics), rank, now) for candidate, e, rank in epochs]
        leg_rows = [_leg_row(leg) for leg in legs]
        if not (candidate_rows or evaluation_rows or epoch_rows or leg_rows):
            return
        connection = self._require_writer()
        try:
            connection.execute("BEGIN")
            try:
                connection.executemany(
                    "INSERT INTO candidates (candidate, generation, genome, told_before, asked)"
                    " VALUES (?, ?, ?, ?, ?)", candidate_rows)
                connection.executemany(
                    f"INSERT INTO evaluations ({', '.join(_EVALUATION_COLUMNS)}) VALUES "
                    f"({', '.join('?' * len(_EVALUATION_COLUMNS))})", evaluation_rows)
                # an epoch trained again after a crash replaces the lost leg's row
                connection.executemany(
                    "INSERT OR REPLACE INTO epochs (candidate, epoch, train_loss, valid_accuracy,"
                    " valid_loss, seconds, metrics, worker_rank, recorded) VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, ?)", epoch_rows)
                connection.executemany(
                    f"INSERT OR REPLACE INTO legs ({', '.join(_LEG_COLUMNS)}) VALUES "
                    f"({', '.join('?' * len(_LEG_COLUMNS))})", leg_rows)
                connection.execute("UPDATE run SET updated = ?, heartbeat = ? WHERE id = 1",
                                   (now, now))
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
        self._checkpoint()

    def _checkpoint(self, force: bool = False) -> None:
        """Fold the write-ahead log into the main file (at most every CHECKPOINT_SECONDS)."""
        if self._connection is None or (
                not force and time.monotonic() - self._checkpointed < CHECKPOINT_SECONDS):
            return
        try:
            self._connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as error:  # readers or a full disk: the rows are safe in the WAL
            logger.debug("checkpoint of %s skipped: %s", self.path, error)
        self._checkpointed = time.monotonic()

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
        self._write("UPDATE run SET status = ?, status_detail = ?, updated = ?, writer = 'null' "
                    "WHERE id = 1", (status, detail, time.time()))
        self._writing = False
        self._checkpoint(force=True)

    def set_budget(self, budget: int) -> None:
        """Record a new budget for the run being written (a resumed run that was extended)."""
        self._require_writer()
        self._write("UPDATE run SET budget = ?, updated = ? WHERE id = 1",
                    (int(budget), time.time()))

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
            for column in _JSON_RUN_COLUMNS:
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
        return "running" if writer is not None and writer.alive(meta.get("heartbeat")) \
            else "killed"

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

    def evaluations(self, generation: Optional[int] = None) -> List[Dict[str, Any]]:
        """Every evaluation as a dict, in the order told (by ``sequence``).

        Args:
            generation: only that generation's evaluations.

        Each dict has the columns of the ``evaluations`` table (module docstring); ``genome``
        and ``metrics`` are decoded, ``cached`` says whether the result was reused, NaN
        accuracy and loss read as NaN.
        """
        query, params = "SELECT * FROM evaluations", ()
        if generation is not None:
            query, params = query + " WHERE generation = ?", (generation,)
        rows = self._query(query + " ORDER BY sequence", params)
        try:
            return [self._evaluation_dict(row) for row in rows]
        except (TypeError, ValueError, KeyError) as error:
            raise self._damaged(error) from error

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

    def final_evaluations(self) -> List[Dict[str, Any]]:
        """:meth:`evaluations`, each with the result its architecture ended the run with.

        Without a scheduler that is the result told. With one, a candidate can train on after
        it was told (an ASHA promotion): its row then carries its furthest leg's result
        (accuracy, reported accuracy, epochs, loss, times, metrics), and ``told_epochs`` the
        epochs it had when told; cached repeats follow the candidate they reused.
        """
        rows = self.evaluations()
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
            for column in _RESULT_COLUMNS:
                if column in result:
                    row[column] = result[column]
            row["metrics"] = result.get("metrics") or {}
            for column in ("accuracy", "loss", "reported_accuracy"):
                if row.get(column) is None:
                    row[column] = math.nan
        return rows

    def best(self, count: Optional[int] = None) -> Union[Optional[Dict[str, Any]], List[Dict[str, Any]]]:
        """The evaluation with the highest search accuracy (earliest on ties), or None. With
        a scheduler, results are final (:meth:`final_evaluations`) and ranked first by the
        epochs trained: a candidate stopped after one epoch is never compared with one
        trained to the end.

        Args:
            count: return a list of the ``count`` best instead. Cached repeats of an
                architecture are left out of the list, so each architecture appears once.
        """
        rows = [row for row in self.final_evaluations()
                if row["status"] == "ok" and math.isfinite(row["accuracy"])]
        scheduled = bool(rows) and "told_epochs" in rows[0]

        def rank(row):
            return ((row["epochs"] or 0) if scheduled else 0, row["accuracy"], -row["sequence"])

        if count is None:
            return max(rows, key=rank, default=None)
        unique = [row for row in rows if not row["cached"]]
        unique.sort(key=rank, reverse=True)
        return unique[:count]

    def generation_stats(self) -> List[Dict[str, Any]]:
        """Per-generation figures, for plots: one dict per generation, in order.

        Keys: ``generation``, ``evaluations``, ``ok``, ``failed``, ``cached``,
        ``accuracy_mean``, ``accuracy_median``, ``accuracy_std``, ``accuracy_min``,
        ``accuracy_max`` (over ok evaluations; NaN when none), ``best_so_far`` (best accuracy
        up to and including this generation), ``n_params_mean``, ``train_time_sum``,
        ``started``, ``ended`` and ``wall_time`` (first start to last end).
        """
        by_generation: Dict[int, List[Dict[str, Any]]] = {}
        for row in self.evaluations():
            by_generation.setdefault(row["generation"], []).append(row)
        stats, best = [], math.nan
        for generation in sorted(by_generation):
            rows = by_generation[generation]
            good = [row for row in rows if row["status"] == "ok" and math.isfinite(row["accuracy"])]
            accuracies = [row["accuracy"] for row in good]
            if accuracies:
                best = max(accuracies) if math.isnan(best) else max(best, max(accuracies))
            starts = [row["started"] for row in rows if row["started"] is not None]
            ends = [row["ended"] for row in rows if row["ended"] is not None]
            stats.append({
                "generation": generation,
                "evaluations": len(rows),
                "ok": len(good),
                "failed": sum(row["status"] != "ok" for row in rows),
                "cached": sum(row["cached"] for row in rows),
                "accuracy_mean": statistics.fmean(accuracies) if accuracies else math.nan,
                "accuracy_median": statistics.median(accuracies) if accuracies else math.nan,
                "accuracy_std": statistics.pstdev(accuracies) if accuracies else math.nan,
                "accuracy_min": min(accuracies, default=math.nan),
                "accuracy_max": max(accuracies, default=math.nan),
                "best_so_far": best,
                "n_params_mean": (statistics.fmean(row["n_params"] for row in good)
                                  if good else math.nan),
                "train_time_sum": sum(row["train_time"] for row in rows
                                      if not row["cached"] and math.isfinite(row["train_time"])),
                "started": min(starts, default=None),
                "ended": max(ends, default=None),
                "wall_time": (max(ends) - min(starts)) if starts and ends else math.nan,
            })
        return stats

    def summary(self) -> Dict[str, Any]:
        """Metadata plus counts, the best accuracy and the state: one line of ``list_runs``."""
        meta = self.metadata()
        cached = "cached" if self._version == 1 else "cached_from IS NOT NULL"
        counts = self._query(
            f"SELECT COUNT(*), SUM(status = 'ok'), SUM(status != 'ok'), SUM({cached}),"
            " MAX(CASE WHEN status = 'ok' THEN accuracy END), MIN(started), MAX(ended)"
            " FROM evaluations")[0]
        total, ok, failed, cached_count, best, first, last = counts
        return {
            "path": str(self.path), **meta, "state": self.state(),
            "evaluations": total, "ok": ok or 0, "failed": failed or 0,
            "cached": cached_count or 0, "best_accuracy": _real(best),
            "wall_time": (last - first) if first is not None and last is not None else math.nan,
        }

    def __repr__(self) -> str:
        return f"Journal({str(self.path)!r})"


def _ago(moment: Optional[float]) -> str:
    if moment is None:
        return "never written"
    return f"{max(0.0, time.time() - moment):.0f} s ago"


def _evaluation_row(evaluation: EvaluationRecord) -> List[Any]:
    result = evaluation.result
    row = {
        "sequence": evaluation.sequence, "candidate": evaluation.candidate,
        "generation": evaluation.generation, "genome": dumps(list(evaluation.genome)),
        "key": evaluation.key, "descriptor": evaluation.descriptor,
        "worker_rank": evaluation.worker_rank,
        "accuracy": result.accuracy, "loss": result.loss,
        "train_time": result.train_time, "eval_time": result.eval_time,
        "n_params": int(result.n_params), "epochs": int(result.epochs),
        "status": result.status, "error": result.error or "",
        "reported_accuracy": result.reported_accuracy,
        "metrics": dumps(result.metrics or {}),
        "cached_from": evaluation.cached_from,
        "started": evaluation.started, "ended": evaluation.ended,
    }
    return [row[column] for column in _EVALUATION_COLUMNS]


_LEG_COLUMNS = ("leg", "candidate", "start_epochs", "target_epochs", "started_event",
                "ended_event", "started", "ended", "accuracy", "reported_accuracy", "status",
                "error", "decision", "worker_rank", "train_time", "result", "detail")


def _leg_row(leg: LegRecord) -> List[Any]:
    result = leg.result
    row = {"leg": leg.leg, "candidate": leg.candidate, "start_epochs": leg.start_epochs,
           "target_epochs": leg.target_epochs, "started_event": leg.started_event,
           "ended_event": leg.ended_event, "started": leg.started, "ended": leg.ended,
           "accuracy": None if result is None else result.accuracy,
           "reported_accuracy": None if result is None else result.reported_accuracy,
           "status": None if result is None else result.status,
           "error": None if result is None else result.error,
           "decision": leg.decision, "worker_rank": leg.worker_rank,
           "train_time": None if result is None else result.train_time,
           "result": None if result is None else dumps(result.to_dict()), "detail": leg.detail}
    return [row[column] for column in _LEG_COLUMNS]


def evaluation_result(row: Mapping[str, Any]):
    """The :class:`EvaluationResult` of one evaluation dict (from :meth:`Journal.evaluations`)."""
    from nord.evaluators.result import EvaluationResult

    return EvaluationResult.from_dict({column: row[column] for column in _RESULT_COLUMNS})


def list_runs(paths: Union[str, os.PathLike, Iterable[Union[str, os.PathLike]]],
              pattern: str = "*.db") -> Tuple[List[Dict[str, Any]], List[Tuple[Path, str]]]:
    """Every nord journal among ``paths`` (files, or folders searched with their sub-folders
    for ``pattern``), oldest run first.

    Returns:
        ``(runs, skipped)``: each run is :meth:`Journal.summary` (path, metadata, counts, best
        accuracy, state); ``skipped`` lists ``(path, reason)`` for each file that is not a
        readable journal.

    Raises:
        JournalError: a path that does not exist.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: List[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(sorted(path.rglob(pattern)))
        elif path.is_file():
            files.append(path)
        else:
            raise JournalError(f"'{path}' does not exist; give a run journal or a folder of them")
    runs, skipped = [], []
    for path in files:
        try:
            with Journal(path) as journal:
                runs.append(journal.summary())
        except JournalError as error:
            skipped.append((path, str(error)))
    runs.sort(key=lambda run: (run["created"], run["path"]))
    return runs, skipped
