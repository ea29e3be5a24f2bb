"""Who writes a journal, and whether that process still lives.

A journal has one writer. Liveness is checked, not locked: on the same machine (same boot) the
writer's pid must exist with the start time it had; from another machine its heartbeat, written
every :data:`HEARTBEAT_SECONDS`, must be younger than three of them. So a writer that died,
even by ``kill -9``, leaves nothing that blocks a resume::

    from nord.journal import Writer
    writer = Writer.from_json(meta["writer"])
    if writer is not None and writer.alive(meta["heartbeat"]):
        ...   # the run is being written by another process
"""
from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any, Dict, Mapping, NamedTuple, Optional

__all__ = ["Writer", "HEARTBEAT_SECONDS"]

HEARTBEAT_SECONDS = 10.0
"""How often a writer refreshes its heartbeat; a writer on another machine whose heartbeat is
older than three of these is taken for dead."""


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
