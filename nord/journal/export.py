"""A consistent copy of a journal, also of a run being written (SQLite's backup API).

    with Journal("runs/rea.db") as journal:
        journal.export("backup/rea.db")
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Union

from nord.errors import JournalError
from nord.journal.connection import JournalFile


class JournalExport(JournalFile):
    """The copy of :class:`~nord.journal.store.Journal`: it reads the file and writes another."""

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
