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
import re
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from nord.errors import JournalError

__all__ = ["Entry", "Catalogue", "natural_key"]

_SQLITE_HEADER = b"SQLite format 3\x00"
_COMPANIONS = ("-wal", "-shm", "-journal", "-reserve")
_KERNEL_FOLDERS = ("/proc", "/sys", "/dev")
RESCAN_SECONDS = 5.0
"""How often a folder is searched again for journals that appeared in it (at the least: a
search that took long, of a large tree, is made again only after ten times its own time)."""


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


def _kind(path: str) -> Optional[str]:
    """'journal' for an SQLite file, 'comparison' for a JSON file, None for anything else
    (a file that cannot be read; one too short to be either is named by its name alone)."""
    if path.endswith(_COMPANIONS):
        return None
    try:
        status = os.stat(path)
        if not stat.S_ISREG(status.st_mode):
            return None
        head = b""
        if status.st_size >= len(_SQLITE_HEADER):   # (files of /proc say 0 bytes; some
            with open(path, "rb") as file:          # would block a read)
                head = file.read(len(_SQLITE_HEADER))
    except OSError:
        return None
    if head == _SQLITE_HEADER:
        return "journal"
    if path.endswith(".db"):   # a file named as a journal that is not one: shown unreadable
        return "unreadable"
    if path.endswith(".json"):
        return "comparison"
    return None


def natural_key(text: str) -> Tuple[Any, ...]:
    """A sort key that orders the numbers in ``text`` by value: r2 before r10."""
    return tuple(int(part) if part.isdigit() else part
                 for part in re.split(r"([0-9]+)", text))


def _files(folder: str) -> Iterator[str]:
    """The files below ``folder`` (as strings: a large tree is walked quickly). Sub-folders
    this user cannot read are left out (the view only reads: what it cannot read, it does not
    show), and so are the kernel's own file systems (/proc, /sys, /dev: no journal is kept
    there); links to folders are not followed."""
    for parent, folders, names in os.walk(folder):   # errors (unreadable folders) are skipped
        folders[:] = [name for name in folders if os.path.abspath(
            os.path.join(parent, name)) not in _KERNEL_FOLDERS]
        for name in names:
            yield os.path.join(parent, name)


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
            readable = os.R_OK | (os.X_OK if path.is_dir() else 0)
            if not os.access(path, readable):
                raise JournalError(f"'{path}' cannot be read (permission denied); nord serve "
                                   "only reads: give journals or folders you can read")
        self._entries: Dict[str, Entry] = {}
        self._scanned = -float("inf")
        self._took = 0.0
        self._lock = threading.Lock()

    def entries(self) -> List[Entry]:
        """Every served file, in the natural order of their paths (r2 before r10)."""
        with self._lock:
            if time.monotonic() - self._scanned > max(RESCAN_SECONDS, 10 * self._took):
                started = time.monotonic()
                self._entries = self._scan()
                self._scanned = time.monotonic()
                self._took = self._scanned - started
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
            named = not path.is_dir()   # a file named on its own is shown, if unreadable
            files = []
            for name in [str(path)] if named else _files(str(path)):
                kind = _kind(name)
                if kind == "comparison" and not _is_comparison(Path(name)):
                    kind = None
                if kind is not None or named:
                    files.append((natural_key(name), Path(name), kind or "unreadable"))
            for _, file, kind in sorted(files, key=lambda item: item[0]):
                entry = Entry(_id(file), file, kind)
                found.setdefault(entry.id, entry)
        return found


def _is_comparison(path: Path) -> bool:
    """Whether a JSON file holds a ``nord compare --json`` result (its ``algorithms``)."""
    try:
        if path.stat().st_size > 64 * 1024 * 1024:
            return False
        raw = path.read_bytes()
        if b'"algorithms"' not in raw:   # most JSON files are not parsed at all
            return False
        data = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and isinstance(data.get("algorithms"), dict)
