"""The run's checkpoint folder: where candidates in training leave their checkpoints.

``<journal>.checkpoints`` beside the journal (a temporary folder without one) holds one file a
candidate, ``candidate-<number>.pt``, while the candidate trains or waits for a promotion; a
resumed run goes on from them. The evaluators write and read the files
(:mod:`nord.evaluators.checkpoints`); the engine names them and deletes them.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from types import MappingProxyType
from typing import Dict, Iterable, Mapping, Optional, Set, Union

from nord.errors import ConfigurationError

__all__ = ["checkpoint_folder", "Checkpoints", "NoCheckpoints", "CheckpointStore"]


def checkpoint_folder(journal_path: Optional[os.PathLike], fresh: bool = False) -> Path:
    """``<journal>.checkpoints`` next to the journal, or a new temporary folder; checked
    writable at once. ``fresh``: a new run, which must not go on from the checkpoints of
    another run once journaled at that path (they are removed).

    Raises:
        ConfigurationError: the folder cannot be created or written.
    """
    if journal_path is None:
        return Path(tempfile.mkdtemp(prefix="nord-checkpoints-"))
    folder = Path(f"{journal_path}.checkpoints")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise ConfigurationError(
            f"the checkpoint folder {folder} (next to the journal) cannot be written: "
            f"{error.strerror or error}; candidates in training keep their checkpoints there. "
            "Put the journal in a folder you can write, or run with --checkpoint-every 0 "
            "(without a scheduler)") from error
    if fresh:
        for stale in folder.glob("candidate-*.pt"):
            with contextlib.suppress(OSError):
                stale.unlink()
    return folder


class Checkpoints:
    """The checkpoint folder of one run, as the engine uses it: it names each candidate's
    file, deletes it once the candidate ends, and measures the folder's peak size.

    Args:
        folder: made by :func:`checkpoint_folder`.
        temporary: nothing can resume the run (it has no journal): the folder goes with it.
    """

    def __init__(self, folder: Path, temporary: bool):
        self.folder = folder
        self.temporary = temporary
        self.deleted: Set[int] = set()       # candidates whose file is gone for good
        self.peak_bytes = 0
        self.resumed: Dict[int, int] = {}    # candidate -> epochs an earlier session's file kept

    @classmethod
    def beside(cls, journal_path: Optional[os.PathLike], fresh: bool = False) -> "Checkpoints":
        """The folder :func:`checkpoint_folder` makes, temporary where there is no journal."""
        return cls(checkpoint_folder(journal_path, fresh), temporary=journal_path is None)

    def path(self, number: int) -> str:
        return str(self.folder / f"candidate-{number}.pt")

    def attach(self, task, every: int) -> None:
        """A candidate trained whole goes on from its file, writes it every ``every``
        epochs and leaves none when it ends."""
        task.checkpoint = self.path(task.number)
        task.checkpoint_every, task.keep_at_end = every, False

    def delete(self, number: int) -> None:
        if number in self.deleted:
            return
        self.deleted.add(number)
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.path(number))

    def note_resumed(self, number: int, metrics: Mapping, start: int = 0) -> None:
        """Remember a candidate that went on from a checkpoint an interrupted run left
        (``epochs_resumed`` in its result's ``metrics`` beyond where its leg's training began:
        its ``start``, or ``trained_from`` for a leg trained again from scratch)."""
        start = int(metrics.get("trained_from", start))
        kept = int(metrics.get("epochs_resumed", 0) or 0) - start
        if kept > 0:
            self.resumed[number] = kept

    def ended(self, number: int, metrics: Mapping) -> None:
        """A candidate trained whole is back: noted if it resumed, the folder measured, its
        file deleted."""
        self.note_resumed(number, metrics)
        self.measure()
        self.delete(number)

    def release(self, numbers: Iterable[int]) -> None:
        """The run is over: none of ``numbers`` can go on any more. Their files go (a
        temporary folder goes whole when it is closed)."""
        if not self.temporary:
            for number in numbers:
                self.delete(number)

    def measure(self) -> None:
        """Note the folder's size (as each evaluation ends) for the peak."""
        try:
            size = sum(entry.stat().st_size for entry in os.scandir(self.folder))
        except OSError:
            return
        self.peak_bytes = max(self.peak_bytes, size)

    def close(self) -> None:
        """The run stops: a temporary folder goes; a journal's stays while it holds
        checkpoints a resume goes on from."""
        if self.temporary:
            shutil.rmtree(self.folder, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                self.folder.rmdir()


class NoCheckpoints:
    """A run that keeps no checkpoints (no journal to resume from, ``checkpoint_every=0``,
    or an evaluator that does not train in legs): every candidate trains from scratch."""

    peak_bytes = None
    resumed: Mapping[int, int] = MappingProxyType({})

    def attach(self, task, every: int) -> None:
        """The task keeps its defaults: no checkpoint."""

    def ended(self, number: int, metrics: Mapping) -> None:
        """Nothing was kept."""

    def delete(self, number: int) -> None:
        """Nothing to delete."""

    def release(self, numbers: Iterable[int]) -> None:
        """Nothing was kept for a promotion."""

    def close(self) -> None:
        """Nothing to remove."""


CheckpointStore = Union[Checkpoints, NoCheckpoints]
"""Where a run's candidates keep their checkpoints, if anywhere."""
