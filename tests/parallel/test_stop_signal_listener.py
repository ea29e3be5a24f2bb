"""on_stop_signal: a rank blocked in C (a collective whose peer has stopped) still answers a
stop signal at once, from a thread, though Python's handler waits for the main thread."""
import ctypes
import os
import signal
import threading
import time

import pytest

from nord.errors import RunInterrupted
from nord.parallel import interruptible, on_stop_signal


def test_the_callback_runs_at_once_while_the_main_thread_is_blocked_in_c():
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        pytest.skip("SIGTERM has a handler in this test process: interruptible leaves it")
    heard = []
    libc = ctypes.CDLL(None)
    started = time.monotonic()
    with pytest.raises(RunInterrupted):
        with interruptible(), on_stop_signal(
                lambda: heard.append((threading.current_thread().name, time.monotonic()))):
            # the signal comes while the main thread sleeps in C, and goes to another thread,
            # so that the sleep is not cut short
            sender = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM))
            sender.start()
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
            try:
                libc.sleep(1)   # in C: Python's handler cannot run before it returns
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
                sender.join()
    raised = time.monotonic()
    assert raised - started >= 1.0
    assert [name for name, _ in heard] == ["nord-stop-signal"]   # once, from its thread
    assert heard[0][1] - started < 0.7   # sent at 0.2 s
    assert signal.set_wakeup_fd(-1) == -1                        # and the descriptor is given back
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_without_a_signal_the_callback_never_runs_and_the_thread_ends():
    heard = []
    with on_stop_signal(lambda: heard.append(1)):
        pass
    assert heard == [] and not any(thread.name == "nord-stop-signal"
                                   for thread in threading.enumerate())
