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
from typing import Callable, Iterator

from nord.errors import RunInterrupted

__all__ = ["interruptible", "uninterrupted", "reclaim_signals", "on_stop_signal"]

STOPPING = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                 if hasattr(signal, name))   # no SIGHUP on Windows


class _Held:
    """The stop signal that came inside :func:`uninterrupted` blocks, for the end of the
    outermost (the main thread's only: Python runs signal handlers there)."""
    depth = 0
    pending: "int | None" = None


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
        if _Held.depth and not (_Held.pending is not None and signum == signal.SIGINT):
            _Held.pending = signum   # a second Ctrl-C stops at once
            return
        _Held.pending = None
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


@contextlib.contextmanager
def uninterrupted() -> Iterator[None]:
    """Inside, a stop signal that :func:`interruptible` turns into RunInterrupted waits for
    the block to end, then stops the run as it would have.

    For what must not be cut in two, such as an epoch's callbacks and the checkpoint that
    lets a resume go on after that epoch: cut between them, the epoch would be trained
    again. A second Ctrl-C still stops at once, and ``kill -9`` cannot be held.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _Held.depth += 1
    try:
        yield
    finally:
        _Held.depth -= 1
        if _Held.depth == 0 and _Held.pending is not None:
            signum, _Held.pending = _Held.pending, None
            signal.raise_signal(signum)   # the handler runs now: RunInterrupted


@contextlib.contextmanager
def on_stop_signal(callback: Callable[[], None]) -> Iterator[None]:
    """Inside, ``callback()`` runs once, in a thread of its own, as soon as SIGINT, SIGTERM or
    SIGHUP arrives while a Python handler is set for it (``interruptible``).

    Python runs its handlers in the main thread between bytecodes, so a main thread blocked
    in C, such as a collective that waits for a rank that has already stopped, would not
    answer until killed; the thread hears of the signal through ``signal.set_wakeup_fd``.
    Outside the main thread, or where a wake-up descriptor is already set, this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    readable, writable = os.pipe()
    os.set_blocking(writable, False)
    try:
        previous = signal.set_wakeup_fd(writable, warn_on_full_buffer=False)
    except ValueError:   # not the main interpreter
        previous = None
    if previous != -1:   # someone else listens (an event loop): leave it so
        if previous is not None:
            signal.set_wakeup_fd(previous)
        os.close(readable)
        os.close(writable)
        yield
        return
    stopping = {int(number) for number in STOPPING}

    def listen() -> None:
        while True:
            try:
                data = os.read(readable, 64)
            except OSError:
                return
            if not data:   # the write end closed: the block is over
                return
            if stopping & set(data):
                callback()
                return

    listener = threading.Thread(target=listen, name="nord-stop-signal", daemon=True)
    listener.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(-1)
        os.close(writable)
        listener.join(timeout=5)
        os.close(readable)
