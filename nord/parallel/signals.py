"""Signals that end a run cleanly: SIGINT, SIGTERM and SIGHUP (an ssh session that drops)
become :class:`~nord.errors.RunInterrupted`.

A run wrapped in :func:`interruptible` records that it was interrupted, and how to go on,
instead of dying half-written::

    from nord.parallel import interruptible

    with interruptible():
        summary = run_search(...)      # Ctrl-C or scancel: RunInterrupted, the journal says so
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Iterator

from nord.errors import RunInterrupted

__all__ = ["interruptible", "reclaim_signals"]

STOPPING = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                 if hasattr(signal, name))   # no SIGHUP on Windows


def reclaim_signals() -> None:
    """Give SIGINT and SIGTERM back to the handlers Python believes are set.

    Starting MPI may install the MPI library's own handlers at the C level, behind Python's
    back; a handler set before (``interruptible``) would then never run.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for number in STOPPING:
        handler = signal.getsignal(number)
        if handler is not None:
            signal.signal(number, handler)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Inside, SIGINT, SIGTERM and SIGHUP raise :class:`~nord.errors.RunInterrupted` in the
    main thread (SIGHUP: the terminal or ssh session of the run went away).

    A run then ends cleanly: its journal says ``interrupted`` and how to go on. Under mpirun
    (which forwards SIGINT and SIGTERM to every rank as SIGTERM) and srun every rank gets the
    signal, and an Environment ends the ranks quietly. A signal whose handler the application
    set itself is left alone. Once a signal came, a second SIGTERM is ignored while the run
    ends (launchers repeat it) and a second Ctrl-C stops at once. Outside the main thread this
    does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    owner = os.getpid()

    def stop(signum, frame):
        if os.getpid() != owner:   # a forked child (a pool's worker) not yet given its own
            os._exit(128 + signum)
        signal.signal(signum, signal.SIG_IGN if signum == signal.SIGTERM else previous[signum])
        raise RunInterrupted(signal.Signals(signum).name)

    for number in STOPPING:
        default = signal.default_int_handler if number == signal.SIGINT else signal.SIG_DFL
        if signal.getsignal(number) is default:
            previous[number] = default
            signal.signal(number, stop)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
