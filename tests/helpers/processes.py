"""The guard that keeps the process markers true: a test that starts another process carries
``processes``, one that starts mpirun carries ``mpi`` (tests/conftest.py turns the guard on
around the set-up, call and tear-down of every test).

    with ProcessGuard(allowed=frozenset()) as guard:    # what an unmarked test gets
        subprocess.run(["true"])                          # raises UnmarkedProcessStart
    guard.violations  # ["started a process (true) without the 'processes' marker: ..."]

What it sees, in the test's own process: every start through :mod:`subprocess`,
``os.fork``, ``os.forkpty``, ``os.posix_spawn[p]``, ``os.system`` and multiprocessing's
``Process.start`` (every start method, pools and ``concurrent.futures`` included); a child
that C code started and that is still alive when the phase ends; and mpirun started anywhere
below the test (through a shell, a script or a worker), by shims first on ``PATH`` that log
each start before they run the real launcher (:func:`install_mpi_shims`).
"""
from __future__ import annotations

import _posixsubprocess
import multiprocessing.process
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import FrozenSet, Iterable, List, Optional, Sequence, Set

MPI_LAUNCHERS = ("mpirun", "mpiexec", "orterun", "horovodrun")
"""Programs that start MPI jobs: a test that starts one carries the ``mpi`` marker."""
MPI_LOG_VARIABLE = "NORD_TEST_MPI_LOG"
"""The file the shims append each mpirun start to (one per test process)."""

PROCESSES = "processes"
MPI = "mpi"


class UnmarkedProcessStart(RuntimeError):
    """A test started a process its markers do not allow."""


def allowed_by(markers: Iterable[str]) -> FrozenSet[str]:
    """What a test with these markers may start: ``mpi`` allows both kinds."""
    names = set(markers)
    if MPI in names:
        return frozenset({MPI, PROCESSES})
    if PROCESSES in names:
        return frozenset({PROCESSES})
    return frozenset()


def _words(argv) -> List[str]:
    if argv is None:
        return []
    if isinstance(argv, (str, bytes, os.PathLike)):
        text = os.fsdecode(argv)
        try:
            return shlex.split(text)
        except ValueError:  # unbalanced quotes: words are enough to find a launcher
            return text.split()
    return [os.fsdecode(word) for word in argv]


def needed_marker(argv) -> str:
    """``mpi`` where the command line runs an MPI launcher, else ``processes``."""
    for word in _words(argv):
        if os.path.basename(word) in MPI_LAUNCHERS:
            return MPI
    return PROCESSES


def _message(what: str, marker: str) -> str:
    return (f"started {what} without the '{marker}' marker: add @pytest.mark.{marker} to the "
            f"test (or pytestmark = pytest.mark.{marker} to its module); "
            f"`make test-fast` leaves such tests out")


def children() -> Set[int]:
    """The pids of this process's children (every thread's), alive or not yet reaped."""
    pids: Set[int] = set()
    for listing in Path("/proc/self/task").glob("*/children"):
        try:
            pids.update(int(pid) for pid in listing.read_text().split())
        except OSError:  # the thread ended while we looked
            continue
    return pids


def _command_of(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return f"pid {pid}"
    return " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part) or f"pid {pid}"


class ProcessGuard:
    """Refuses, and records, every process start that ``allowed`` does not cover.

    Args:
        allowed: the markers the test carries that allow starts (see :func:`allowed_by`).
        mpi_log: the shims' log (:func:`install_mpi_shims`), read for mpirun started below
            the test; ``None`` leaves that out.
    """

    def __init__(self, allowed: FrozenSet[str], mpi_log: Optional[Path] = None):
        self.allowed = allowed
        self.mpi_log = mpi_log
        self.violations: List[str] = []
        self._saved = []
        self._children_before: Set[int] = set()

    def check(self, argv, what: Optional[str] = None) -> None:
        """Raise :class:`UnmarkedProcessStart` where a start of ``argv`` is not allowed."""
        marker = needed_marker(argv)
        if marker in self.allowed:
            return
        described = what or f"a process ({' '.join(_words(argv))[:200]})"
        if marker == MPI:
            described = f"mpirun ({' '.join(_words(argv))[:200]})"
        message = _message(described, marker)
        self.violations.append(message)
        raise UnmarkedProcessStart(message)

    def __enter__(self) -> "ProcessGuard":
        if self.allowed >= {MPI, PROCESSES}:
            return self
        if self.mpi_log is not None:
            self.mpi_log.write_text("")
        self._children_before = children()
        guard = self

        def patch(owner, name, replacement):
            if hasattr(owner, name):
                self._saved.append((owner, name, getattr(owner, name)))
                if isinstance(owner, type(os)):  # pickle still finds os.system by its name
                    replacement.__module__ = owner.__name__
                    replacement.__name__ = replacement.__qualname__ = name
                setattr(owner, name, replacement)

        def original(owner, name):
            return next(value for o, n, value in self._saved if o is owner and n == name)

        def execute_child(popen, args, executable, *rest, **kwargs):
            guard.check(args if executable is None else [executable, *_words(args)[1:]])
            return original(subprocess.Popen, "_execute_child")(popen, args, executable,
                                                                 *rest, **kwargs)

        def fork_exec(args, *rest, **kwargs):
            guard.check(args)
            return original(_posixsubprocess, "fork_exec")(args, *rest, **kwargs)

        def posix_spawn(path, argv, *rest, **kwargs):
            guard.check(argv or [path])
            return original(os, "posix_spawn")(path, argv, *rest, **kwargs)

        def posix_spawnp(path, argv, *rest, **kwargs):
            guard.check(argv or [path])
            return original(os, "posix_spawnp")(path, argv, *rest, **kwargs)

        def system(command):
            guard.check(command)
            return original(os, "system")(command)

        def fork():
            guard.check(["os.fork"], what="a process (os.fork)")
            return original(os, "fork")()

        def forkpty():
            guard.check(["os.forkpty"], what="a process (os.forkpty)")
            return original(os, "forkpty")()

        def start(process):
            guard.check([process.name], what=f"a multiprocessing process ({process.name})")
            return original(multiprocessing.process.BaseProcess, "start")(process)

        patch(subprocess.Popen, "_execute_child", execute_child)
        patch(_posixsubprocess, "fork_exec", fork_exec)
        patch(os, "posix_spawn", posix_spawn)
        patch(os, "posix_spawnp", posix_spawnp)
        patch(os, "system", system)
        patch(os, "fork", fork)
        patch(os, "forkpty", forkpty)
        patch(multiprocessing.process.BaseProcess, "start", start)
        return self

    def __exit__(self, *exc_info) -> None:
        while self._saved:
            owner, name, value = self._saved.pop()
            setattr(owner, name, value)
        if self.allowed >= {MPI, PROCESSES}:
            return
        # started by C code (an extension's fork): seen if still alive
        if PROCESSES not in self.allowed:
            for pid in sorted(children() - self._children_before):
                self.violations.append(_message(f"a child process ({_command_of(pid)[:200]})",
                                                PROCESSES))
        # mpirun started anywhere below the test, by a shell, a script or a worker
        if self.mpi_log is not None and self.mpi_log.exists():
            for line in self.mpi_log.read_text().splitlines():
                self.violations.append(_message(f"mpirun ({line[:200]})", MPI))


SHIM = """#!/bin/bash
# tests/helpers/processes.py: note this start for the marker guard, then run the real {name}
# (argv[0] kept: Open MPI takes an absolute one as --prefix)
if [ -n "${{{variable}:-}}" ]; then printf '%s\\n' "{name} $*" >> "${variable}"; fi
exec -a {name} {real} "$@"
"""


def install_mpi_shims(folder: Path, launchers: Sequence[str] = MPI_LAUNCHERS[:3]) -> List[str]:
    """Write a logging shim for each MPI launcher found on ``PATH`` into ``folder``, put
    ``folder`` first on this process's ``PATH`` (children inherit it) and return the names."""
    folder.mkdir(parents=True, exist_ok=True)
    made = []
    for name in launchers:
        real = shutil.which(name)
        if real is None or Path(real).parent == folder:
            continue
        shim = folder / name
        shim.write_text(SHIM.format(name=name, real=shlex.quote(real), variable=MPI_LOG_VARIABLE))
        shim.chmod(0o755)
        made.append(name)
    if made:
        os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"
    return made
