"""Under mpirun, an exception that escapes 2018 code on any rank ends the whole job at once.

2018 programs talk to ``mpi4py`` directly (``MPI.COMM_WORLD.send/recv``), outside any
:class:`~nord.parallel.Environment`. When one rank died of an exception there, mpi4py's
``MPI_Finalize`` at exit waited for the other ranks, which waited for it: the job hung
(2018's experiment 3 under NumPy >= 1.16). Importing ``nord.legacy`` in a process that an
MPI launcher started with several ranks therefore installs an ``excepthook`` that does what
nord's Environment does: print the traceback with each line prefixed ``[rank R]``, then
``MPI_Abort`` (a rank that never started MPI just exits non-zero, which ends the job too).
"""
from __future__ import annotations

import sys

from nord.parallel.environment import report_failure
from nord.parallel.launcher import launcher_rank, launcher_world_size

__all__ = ["install_abort_hook", "abort_hook_installed"]


def _running_mpi():
    """mpi4py's MPI module when this process has started MPI and not finalised it, else None."""
    mpi = sys.modules.get("mpi4py.MPI")
    try:
        if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
            return mpi
    except Exception:  # noqa: BLE001 - a broken MPI must not hide the user's exception
        pass
    return None


class _AbortOnError:
    """The ``sys.excepthook`` of a rank of a multi-rank job running 2018 code."""

    def __init__(self, previous):
        self.previous = previous

    def __call__(self, exc_type, exc, tb) -> None:
        mpi = _running_mpi()
        if mpi is None or issubclass(exc_type, SystemExit):
            self.previous(exc_type, exc, tb)  # the process exits non-zero; mpirun ends the job
            return
        world = mpi.COMM_WORLD
        rank = world.Get_rank()
        if world.Get_size() < 2:
            self.previous(exc_type, exc, tb)
            return
        code = report_failure(rank, world.Get_size(), exc_type, exc, tb)
        world.Abort(code)


def abort_hook_installed() -> bool:
    return isinstance(sys.excepthook, _AbortOnError)


def install_abort_hook() -> bool:
    """Install the hook when an MPI launcher started this process with several ranks.

    Returns whether it is installed. Idempotent; the hook that was there before handles
    every exception of a process that has not started MPI.
    """
    size = launcher_world_size()
    if size is None or size < 2 or launcher_rank() is None:
        return abort_hook_installed()
    if not abort_hook_installed():
        sys.excepthook = _AbortOnError(sys.excepthook)
    return True
