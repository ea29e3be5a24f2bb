"""The run's checkpoint folder: where candidates in training leave their checkpoints.

``<journal>.checkpoints`` beside the journal (a temporary folder without one) holds one file a
candidate, ``candidate-<number>.pt``, while the candidate trains or waits for a promotion; a
resumed run goes on from them. The evaluators write and read the files
(:mod:`nord.evaluators.checkpoints`); the engine names them and deletes them.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Optional

from nord.errors import ConfigurationError

__all__ = ["checkpoint_folder"]


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
