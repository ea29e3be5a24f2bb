"""Journal: the record of one search run, an SQLite file written by rank 0 only.

The search loop commits every result as soon as it is known (with the proposals made before
it, in one transaction), so a run killed at any point (even ``kill -9``) loses at most the
evaluations in flight, and ``run_search(..., resume=True)`` continues from the file. Reports
read the same file::

    from nord.journal import Journal, list_runs

    with Journal("runs/ga-seed0.db") as journal:
        journal.metadata()["algorithm"]         # 'ga', with 'parameters', 'seed', 'space', ...
        rows = journal.evaluations()            # one dict per evaluation, in the order told
        journal.best()["accuracy"]
        for generation in journal.generation_stats():
            print(generation["generation"], generation["accuracy_mean"])

    for run in list_runs("runs"):               # every journal in a folder, oldest first
        print(run["path"], run["algorithm"], run["evaluations"], run["best_accuracy"])

The file holds four tables (``sqlite3 run.db .schema`` shows them):

* ``nord_schema``: the schema version, so that a newer nord refuses an older layout clearly.
* ``run``: one row of metadata: algorithm, its parameters, seed, search space, evaluator,
  data set, ranks, groups, workers, mode, batch size, budget, versions (Python, nord, numpy,
  torch, mpi4py / MPI), created and updated times, and status ``running``, ``finished`` or
  ``crashed`` (a run killed with ``kill -9`` stays ``running``).
* ``candidates``: every candidate the algorithm proposed, with ``told_before``: how many
  results the algorithm had been told when it proposed it. Resuming replays the proposals at
  exactly those points.
* ``evaluations``: one row per result the algorithm is told: ``sequence`` (the order told,
  from 0), ``candidate`` (the order proposed), generation, genome (JSON), the descriptor's
  JSON and hash, ``worker_rank`` (world rank of the group root that trained it; NULL when no
  worker did: a genome that did not decode, or a cached result), every
  :class:`~nord.evaluators.result.EvaluationResult` field, ``cached`` (1 when the same
  architecture had been evaluated earlier in the run and its result was reused;
  ``cached_from`` names that candidate), and the ``started`` and ``ended`` wall-clock times
  (seconds since the epoch).

The database runs in WAL mode with ``synchronous=NORMAL``: each commit survives the death
of the process (only a power cut can lose the last ones), and a report can read the file
while the run writes it.
"""
from __future__ import annotations

import json
import logging
import math
import os
import platform
import sqlite3
import statistics
import sys
import time
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from nord.errors import JournalError

__all__ = ["Journal", "list_runs", "evaluation_result", "package_versions", "SCHEMA_VERSION",
           "RESUME_FIELDS"]

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
STATUSES = ("running", "finished", "crashed")
RESUME_FIELDS = ("algorithm", "seed", "space", "mode", "parameters")
"""Metadata that must be equal for a run to resume a journal (each is named when it differs)."""

_RUN_COLUMNS = ("algorithm", "parameters", "seed", "space", "evaluator", "dataset", "ranks",
                "groups", "workers", "worker_ranks", "mode", "batch_size", "budget", "versions",
                "extra")
_JSON_RUN_COLUMNS = ("parameters", "seed", "space", "evaluator", "dataset", "worker_ranks",
                     "versions", "extra")
_RESULT_COLUMNS = ("accuracy", "loss", "train_time", "eval_time", "n_params", "epochs", "status",
                   "error", "reported_accuracy", "metrics")
_EVALUATION_COLUMNS = ("sequence", "candidate", "generation", "genome", "descriptor",
                       "descriptor_hash", "worker_rank") + _RESULT_COLUMNS + (
                       "cached", "cached_from", "started", "ended")

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
    ranks INTEGER,
    groups INTEGER,
    workers INTEGER,
    worker_ranks TEXT NOT NULL,
    mode TEXT,
    batch_size INTEGER,
    budget INTEGER,
    versions TEXT NOT NULL,
    extra TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    status TEXT NOT NULL,
    resumed INTEGER NOT NULL DEFAULT 0
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
    descriptor TEXT,
    descriptor_hash TEXT NOT NULL,
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
    cached INTEGER NOT NULL,
    cached_from INTEGER,
    started REAL,
    ended REAL
);
CREATE INDEX evaluations_hash ON evaluations (descriptor_hash);
CREATE INDEX evaluations_generation ON evaluations (generation);
"""


def _json_default(value: Any) -> Any:
    """JSON for numpy scalars and arrays (``tolist``/``item``), tuples and anything else (str)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return str(value)


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=_json_default)


def _canonical(value: Any) -> Any:
    """``value`` as it reads back from the journal (tuples become lists, numpy becomes Python)."""
    return json.loads(_dumps(value))


def _real(value: Optional[float]) -> float:
    """SQLite stores NaN as NULL; read it back as NaN."""
    return math.nan if value is None else float(value)


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


class Journal:
    """The SQLite record of one search run.

    Args:
        path: the database file. It is created by :meth:`start` (never by the read methods,
            which raise :class:`JournalError` for a missing file or one that is not a journal).

    The file is opened on first use and kept open until :meth:`close` (or the end of a
    ``with`` block). Only one process may write a journal (rank 0 of a run); any number may
    read it, also while it is written.
    """

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = Path(path)
        self._connection: Optional[sqlite3.Connection] = None

    # --- opening ----------------------------------------------------------------------------
    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Close the file (the WAL is folded back into it when the last connection closes)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def exists(self) -> bool:
        """Whether the file exists and holds a nord journal with a run."""
        if not self.path.exists():
            return False
        self._open(create=False)
        return self._connection.execute("SELECT COUNT(*) FROM run").fetchone()[0] == 1

    def _open(self, create: bool) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        if not create and not self.path.exists():
            raise JournalError(f"no journal at '{self.path}': the file does not exist; check the "
                               "path, or start a run that writes it")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            connection = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
            connection.row_factory = sqlite3.Row
            tables = {row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as error:
            raise JournalError(
                f"'{self.path}' is not a nord journal (SQLite says: {error}); give the path of a "
                "journal written by run_search, or a new path to start a run") from error
        try:
            if not tables and create:
                self._create(connection)
            elif "nord_schema" not in tables:
                raise JournalError(
                    f"'{self.path}' is an SQLite database but not a nord journal (it has no "
                    f"nord_schema table; tables: {sorted(tables) or 'none'}); give the path of a "
                    "journal written by run_search, or a new path to start a run")
            else:
                row = connection.execute("SELECT version FROM nord_schema").fetchone()
                version = None if row is None else row[0]
                if version != SCHEMA_VERSION:
                    raise JournalError(
                        f"'{self.path}' is a nord journal of schema version {version}; this nord "
                        f"reads version {SCHEMA_VERSION}. Open it with the nord release that "
                        "wrote it, or start a new journal")
            self._configure(connection)
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        return connection

    @staticmethod
    def _configure(connection: sqlite3.Connection) -> None:
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.OperationalError as error:  # a read-only file can still be read
            logger.debug("journal pragmas not set: %s", error)

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

    def _read(self) -> sqlite3.Connection:
        return self._open(create=False)

    # --- writing (rank 0 of the run) -----------------------------------------------------
    def start(self, run: Mapping[str, Any], resume: bool = False) -> bool:
        """Begin writing a run, or check that a journaled run may be resumed.

        Args:
            run: the run's metadata: ``algorithm``, ``parameters``, ``seed``, ``space``, and any
                of ``evaluator``, ``dataset``, ``ranks``, ``groups``, ``workers``,
                ``worker_ranks``, ``mode``, ``batch_size``, ``budget``, ``extra``. Versions are
                added here.
            resume: continue the run already in the file (its metadata must match); when the
                file has no run yet, a new one is started.

        Returns:
            True when an existing run is resumed, False when a new one was started.

        Raises:
            JournalError: the file is not a journal; it already holds a run and ``resume`` is
                False; or ``resume`` is True and one of :data:`RESUME_FIELDS` differs (the
                message names it and shows both values).
        """
        connection = self._open(create=True)
        existing = connection.execute("SELECT COUNT(*) FROM run").fetchone()[0]
        values = {column: run.get(column) for column in _RUN_COLUMNS}
        values["versions"] = package_versions()
        for column, default in (("evaluator", {}), ("extra", {}), ("worker_ranks", [])):
            if values[column] is None:
                values[column] = default
        if existing and not resume:
            raise JournalError(
                f"'{self.path}' already holds a run ({self.metadata()['algorithm']}, "
                f"{self.count()} evaluations); resume it with resume=True (--resume), or give "
                "a new journal path")
        if existing:
            self._check_resumable(values)
            connection.execute(
                "UPDATE run SET budget = ?, ranks = ?, groups = ?, workers = ?, worker_ranks = ?,"
                " versions = ?, status = 'running', updated = ?, resumed = resumed + 1"
                " WHERE id = 1",
                (values["budget"], values["ranks"], values["groups"], values["workers"],
                 _dumps(values["worker_ranks"]), _dumps(values["versions"]), time.time()))
            return True
        now = time.time()
        row = {column: (_dumps(values[column]) if column in _JSON_RUN_COLUMNS else values[column])
               for column in _RUN_COLUMNS}
        if row["algorithm"] is None:
            raise JournalError("the run's metadata must name its algorithm ('algorithm')")
        row["parameters"] = _dumps(values["parameters"] or {})
        row["space"] = _dumps(values["space"] or {})
        columns = list(row) + ["id", "created", "updated", "status"]
        connection.execute(
            f"INSERT INTO run ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            [*row.values(), 1, now, now, "running"])
        return False

    def _check_resumable(self, values: Mapping[str, Any]) -> None:
        recorded = self.metadata()
        for field in RESUME_FIELDS:
            old, new = recorded.get(field), _canonical(values.get(field))
            if field == "mode" and new is None:
                continue
            if old != new:
                raise JournalError(
                    f"cannot resume '{self.path}': field '{field}' differs: the journal has "
                    f"{_dumps(old)}, this run has {_dumps(new)}. Resume with the settings the "
                    "run was started with, or give a new journal path")

    def set_status(self, status: str) -> None:
        """Mark the run ``running``, ``finished`` or ``crashed``."""
        if status not in STATUSES:
            raise JournalError(f"a run's status is one of {STATUSES}; got {status!r}")
        self._read().execute("UPDATE run SET status = ?, updated = ? WHERE id = 1",
                             (status, time.time()))

    def update_run(self, **values: Any) -> None:
        """Change metadata columns of the run (e.g. ``batch_size``), in one commit."""
        unknown = sorted(set(values) - set(_RUN_COLUMNS))
        if unknown:
            raise JournalError(f"unknown run metadata {unknown}; known: {list(_RUN_COLUMNS)}")
        assignments = ", ".join(f"{column} = ?" for column in values)
        params = [_dumps(v) if column in _JSON_RUN_COLUMNS else v for column, v in values.items()]
        self._read().execute(f"UPDATE run SET {assignments}, updated = ? WHERE id = 1",
                             [*params, time.time()])

    def record(self, candidates: Iterable[Mapping[str, Any]] = (),
               evaluations: Iterable[Mapping[str, Any]] = ()) -> None:
        """Record proposed candidates, then told results, in one commit.

        One transaction keeps the file a consistent prefix of the run whenever the process
        dies: a result is never on disk without the proposals made before it.

        Args:
            candidates: dicts with ``candidate``, ``generation``, ``genome``, ``told_before``.
            evaluations: dicts with ``sequence``, ``candidate``, ``generation``, ``genome``,
                ``descriptor`` (JSON text or None), ``worker_rank``, ``result`` (an
                EvaluationResult), ``cached``, ``cached_from``, ``started``, ``ended``.

        Raises:
            JournalError: a candidate or sequence number that is already recorded (nothing of
                this call is then written).
        """
        now = time.time()
        candidate_rows = [(c["candidate"], c["generation"], _dumps(list(c["genome"])),
                           c["told_before"], now) for c in candidates]
        evaluation_rows = [_evaluation_row(evaluation) for evaluation in evaluations]
        if not candidate_rows and not evaluation_rows:
            return
        connection = self._read()
        try:
            with _transaction(connection):
                connection.executemany(
                    "INSERT INTO candidates (candidate, generation, genome, told_before, asked)"
                    " VALUES (?, ?, ?, ?, ?)", candidate_rows)
                connection.executemany(
                    f"INSERT INTO evaluations ({', '.join(_EVALUATION_COLUMNS)}) VALUES "
                    f"({', '.join('?' * len(_EVALUATION_COLUMNS))})", evaluation_rows)
        except sqlite3.IntegrityError as error:
            raise JournalError(
                f"'{self.path}' already has one of these candidates or evaluations ({error}); "
                "a journal is written by one process, once per candidate") from error

    def record_candidates(self, candidates: Iterable[Mapping[str, Any]]) -> None:
        """Record proposed candidates in one commit (see :meth:`record`)."""
        self.record(candidates=candidates)

    def record_evaluation(self, evaluation: Mapping[str, Any]) -> None:
        """Record one told result in its own commit (see :meth:`record`)."""
        self.record(evaluations=[evaluation])

    # --- reading ------------------------------------------------------------------------
    def metadata(self) -> Dict[str, Any]:
        """The run's metadata as a dict (JSON columns decoded).

        Raises:
            JournalError: missing file, not a journal, or a journal without a run.
        """
        row = self._read().execute("SELECT * FROM run WHERE id = 1").fetchone()
        if row is None:
            raise JournalError(f"'{self.path}' is a nord journal without a run (it was created "
                               "but the run never started); start the run again")
        data = dict(row)
        data.pop("id", None)
        for column in _JSON_RUN_COLUMNS:
            data[column] = json.loads(data[column])
        return data

    def count(self) -> int:
        """The number of evaluations recorded."""
        return self._read().execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]

    def candidates(self) -> List[Dict[str, Any]]:
        """Every proposed candidate, in the order proposed."""
        rows = self._read().execute("SELECT * FROM candidates ORDER BY candidate").fetchall()
        result = []
        for row in rows:
            data = dict(row)
            data["genome"] = json.loads(data["genome"])
            result.append(data)
        return result

    def evaluations(self, generation: Optional[int] = None) -> List[Dict[str, Any]]:
        """Every evaluation as a dict, in the order told (by ``sequence``).

        Args:
            generation: only that generation's evaluations.

        Each dict has the columns described in the module docstring; ``genome`` and
        ``metrics`` are decoded, ``cached`` is a bool, NaN accuracy and loss read as NaN.
        """
        query, params = "SELECT * FROM evaluations", ()
        if generation is not None:
            query, params = query + " WHERE generation = ?", (generation,)
        rows = self._read().execute(query + " ORDER BY sequence", params).fetchall()
        return [_evaluation_dict(row) for row in rows]

    def results(self) -> List[Any]:
        """Every evaluation as an :class:`EvaluationResult`, in the order told."""
        return [evaluation_result(row) for row in self.evaluations()]

    def best(self, count: Optional[int] = None) -> Union[Optional[Dict[str, Any]], List[Dict[str, Any]]]:
        """The evaluation with the highest search accuracy (earliest on ties), or None.

        Args:
            count: return a list of the ``count`` best instead. Cached repeats of an
                architecture are left out of the list, so each architecture appears once.
        """
        rows = [row for row in self.evaluations()
                if row["status"] == "ok" and math.isfinite(row["accuracy"])]
        if count is None:
            return max(rows, key=lambda row: (row["accuracy"], -row["sequence"]), default=None)
        unique = [row for row in rows if not row["cached"]]
        unique.sort(key=lambda row: (-row["accuracy"], row["sequence"]))
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
        """Metadata plus counts and the best accuracy: one line of ``list_runs``."""
        meta = self.metadata()
        connection = self._read()
        counts = connection.execute(
            "SELECT COUNT(*), SUM(status = 'ok'), SUM(status != 'ok'), SUM(cached),"
            " MAX(CASE WHEN status = 'ok' THEN accuracy END), MIN(started), MAX(ended)"
            " FROM evaluations").fetchone()
        total, ok, failed, cached, best, first, last = counts
        return {
            "path": str(self.path), **meta,
            "evaluations": total, "ok": ok or 0, "failed": failed or 0, "cached": cached or 0,
            "best_accuracy": _real(best),
            "wall_time": (last - first) if first is not None and last is not None else math.nan,
        }

    def __repr__(self) -> str:
        return f"Journal({str(self.path)!r})"


class _transaction:
    """``with _transaction(connection):`` one explicit BEGIN ... COMMIT (ROLLBACK on error)."""

    def __init__(self, connection: sqlite3.Connection):
        self.connection = connection

    def __enter__(self):
        self.connection.execute("BEGIN")

    def __exit__(self, exc_type, exc, tb):
        self.connection.execute("ROLLBACK" if exc_type else "COMMIT")
        return False


def _evaluation_row(evaluation: Mapping[str, Any]) -> List[Any]:
    result = evaluation["result"]
    row = {
        "sequence": evaluation["sequence"],
        "candidate": evaluation["candidate"],
        "generation": evaluation.get("generation", 0),
        "genome": _dumps(list(evaluation["genome"])),
        "descriptor": evaluation.get("descriptor"),
        "descriptor_hash": result.descriptor_hash or "",
        "worker_rank": evaluation.get("worker_rank"),
        "accuracy": result.accuracy, "loss": result.loss,
        "train_time": result.train_time, "eval_time": result.eval_time,
        "n_params": int(result.n_params), "epochs": int(result.epochs),
        "status": result.status, "error": result.error or "",
        "reported_accuracy": result.reported_accuracy,
        "metrics": _dumps(result.metrics or {}),
        "cached": int(bool(evaluation.get("cached", False))),
        "cached_from": evaluation.get("cached_from"),
        "started": evaluation.get("started"), "ended": evaluation.get("ended"),
    }
    return [row[column] for column in _EVALUATION_COLUMNS]


def _evaluation_dict(row: sqlite3.Row) -> Dict[str, Any]:
    data = dict(row)
    data["genome"] = json.loads(data["genome"])
    data["metrics"] = json.loads(data["metrics"])
    data["cached"] = bool(data["cached"])
    for column in ("accuracy", "loss", "train_time", "eval_time"):
        data[column] = _real(data[column])
    return data


def evaluation_result(row: Mapping[str, Any]):
    """The :class:`EvaluationResult` of one evaluation dict (from :meth:`Journal.evaluations`)."""
    from nord.evaluators.result import EvaluationResult

    return EvaluationResult.from_dict({column: row[column] for column in _RESULT_COLUMNS}
                                      | {"descriptor_hash": row["descriptor_hash"]})


def list_runs(directory: Union[str, os.PathLike], pattern: str = "*.db") -> List[Dict[str, Any]]:
    """Every nord journal in ``directory`` (files matching ``pattern``), oldest run first.

    Each item is :meth:`Journal.summary`: the path, the metadata, counts and best accuracy.
    Files that are not nord journals are skipped (logged at debug level).

    Raises:
        JournalError: ``directory`` does not exist.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise JournalError(f"'{directory}' is not a directory; give the folder that holds the "
                           "run journals")
    runs = []
    for path in sorted(directory.glob(pattern)):
        try:
            with Journal(path) as journal:
                runs.append(journal.summary())
        except JournalError as error:
            logger.debug("skipping %s: %s", path, error)
    runs.sort(key=lambda run: (run["created"], run["path"]))
    return runs
