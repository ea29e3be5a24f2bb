"""The journal's file: opened for reading or created for a run, checked to be a nord journal
of a schema this nord reads, and its SQLite errors turned into errors that name the file.

    class JournalReader(JournalFile):   # reads.py: every query goes through self._query
        ...

The class to use is :class:`~nord.journal.store.Journal`, which is built on this one.
"""
from __future__ import annotations

import logging
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any, List, Optional, Sequence, Union

from nord.errors import DiskFullError, JournalError
from nord.journal.schema import SCHEMA_VERSION, create_tables

logger = logging.getLogger(__name__)


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


class JournalFile:
    """A journal's SQLite file and its one connection, opened when first needed.

    Args:
        path: the database file, created only by ``_open(create=True)``.
        read_only: open it with SQLite's ``mode=ro``, so that this connection cannot write
            the file whatever the file's permissions (a viewer beside a live run).
    """

    def __init__(self, path: Union[str, os.PathLike], read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        self._connection: Optional[sqlite3.Connection] = None
        self._version = SCHEMA_VERSION

    def __enter__(self) -> "JournalFile":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection; a later read opens it again."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    @property
    def schema_version(self) -> int:
        """The schema version of the file (read when it is opened)."""
        self._open()
        return self._version

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
            elif self.read_only:   # a live file, read as it grows: never 'immutable'
                uri = f"{Path(os.path.abspath(self.path)).as_uri()}?mode=ro"
                connection = sqlite3.connect(uri, uri=True, timeout=30.0,
                                             isolation_level=None)
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
