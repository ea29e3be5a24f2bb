"""Every run journal in some files and folders, one summary line each (``nord list``).

    from nord.journal import list_runs
    runs, skipped = list_runs("runs")   # every journal below runs/, oldest first
    for run in runs:
        print(run["path"], run["algorithm"], run["state"], run["best_accuracy"])
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Iterable, List, Tuple, Union

from nord.errors import JournalError
from nord.journal.store import Journal

__all__ = ["list_runs", "in_legs"]

_SQLITE_HEADER = b"SQLite format 3\x00"
_COMPANIONS = ("-wal", "-shm", "-journal")   # SQLite's files beside a database


def in_legs(legs: int) -> str:
    """How many of a scheduler's legs of training a count of candidates spans, as ``nord list``
    and the report say it after the count ('' without legs)."""
    return f", in {legs} leg(s) of training" if legs else ""


def _is_sqlite(path: Path) -> bool:
    """Whether ``path`` is an SQLite database file (by its header, whatever its name)."""
    if path.name.endswith(_COMPANIONS) or not path.is_file():
        return False
    try:
        with open(path, "rb") as file:
            return file.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER
    except OSError:
        return False


def list_runs(paths: Union[str, os.PathLike, Iterable[Union[str, os.PathLike]]],
              pattern: str = "*.db") -> Tuple[List[Dict[str, Any]], List[Tuple[Path, str]]]:
    """Every nord journal among ``paths`` (files, or folders searched with their sub-folders
    for files named by ``pattern`` and for SQLite files of any name, e.g. ``run.sqlite`` or
    ``run``), oldest run first.

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
            named = set(path.rglob(pattern))
            files.extend(sorted(named | {found for found in path.rglob("*")
                                         if found not in named and _is_sqlite(found)}))
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
