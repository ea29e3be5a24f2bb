"""The files a view serves: the journals (and ``nord compare --json`` results) found in the
paths it was given, each behind an opaque id, so that no request ever names a path.

    catalogue = Catalogue(["runs/", "compare.json"])
    for entry in catalogue.entries():          # folders scanned again every few seconds
        print(entry.id, entry.path, entry.kind)
    catalogue.get("3f2a9c0d1e4b")              # None for an id it does not hold

A file is found by its content, as ``nord list`` finds runs: any SQLite file below a folder
(whatever its name), and JSON files that hold a comparison.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Union

from nord.errors import JournalError

__all__ = ["Entry", "Catalogue"]

_SQLITE_HEADER = b"SQLite format 3\x00"
_COMPANIONS = ("-wal", "-shm", "-journal", "-reserve")
RESCAN_SECONDS = 5.0
"""How often a folder is searched again for journals that appeared in it."""


@dataclass(frozen=True)
class Entry:
    """One served file.

    Attributes:
        id: 12 hex digits of the SHA-1 of its real path (what URLs name).
        path: the file, as found under the path it was given by.
        kind: ``'journal'``, ``'comparison'`` or ``'unreadable'`` (neither: a JSON or
            SQLite file found in a folder whose content is not one; its run is shown as such).
    """

    id: str
    path: Path
    kind: str


def _kind(path: Path) -> Optional[str]:
    """'journal' for an SQLite file, 'comparison' for a JSON file, None for anything else."""
    if path.name.endswith(_COMPANIONS) or not path.is_file():
        return None
    try:
        with open(path, "rb") as file:
            head = file.read(len(_SQLITE_HEADER))
    except OSError:
        return None
    if head == _SQLITE_HEADER:
        return "journal"
    if path.suffix == ".db":   # a file named as a journal that is not one: shown unreadable
        return "unreadable"
    if path.suffix == ".json":
        return "comparison"
    return None


def _id(path: Path) -> str:
    return hashlib.sha1(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()[:12]


class Catalogue:
    """The journals and comparisons below some paths (files or folders).

    Args:
        paths: journals, comparison JSON files, or folders searched with their sub-folders.

    Raises:
        JournalError: a path that does not exist.
    """

    def __init__(self, paths: Union[str, os.PathLike, Iterable[Union[str, os.PathLike]]]):
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        self.paths = [Path(path) for path in paths]
        for path in self.paths:
            if not path.exists():
                raise JournalError(f"'{path}' does not exist; give run journals, "
                                   "'nord compare --json' files or folders of them")
        self._entries: Dict[str, Entry] = {}
        self._scanned = -float("inf")
        self._lock = threading.Lock()

    def entries(self) -> List[Entry]:
        """Every served file, journals first in the order found."""
        with self._lock:
            if time.monotonic() - self._scanned > RESCAN_SECONDS:
                self._entries = self._scan()
                self._scanned = time.monotonic()
            return list(self._entries.values())

    def get(self, entry_id: str) -> Optional[Entry]:
        """The entry with this id, or None (also for any string that is not an id)."""
        for entry in self.entries():
            if entry.id == entry_id:
                return entry
        return None

    def _scan(self) -> Dict[str, Entry]:
        found: Dict[str, Entry] = {}
        for path in self.paths:
            if path.is_dir():
                candidates = sorted(file for file in path.rglob("*") if file.is_file())
            else:
                candidates = [path]
            for file in candidates:
                kind = _kind(file)
                if kind is None and file in self.paths:   # named on its own: shown, unreadable
                    kind = "unreadable"
                if kind is None:
                    continue
                if kind == "comparison" and not _is_comparison(file):
                    if file not in self.paths:
                        continue
                    kind = "unreadable"
                entry = Entry(_id(file), file, kind)
                found.setdefault(entry.id, entry)
        return found


def _is_comparison(path: Path) -> bool:
    """Whether a JSON file holds a ``nord compare --json`` result (its ``algorithms``)."""
    try:
        if path.stat().st_size > 64 * 1024 * 1024:
            return False
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and isinstance(data.get("algorithms"), dict)
