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

__all__ = ["list_runs"]


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
