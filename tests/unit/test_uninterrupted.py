"""uninterrupted: a stop signal inside the block stops the run once the block has ended."""
import os
import signal

import pytest

from nord.errors import RunInterrupted
from nord.parallel.signals import interruptible, uninterrupted


@pytest.fixture(autouse=True)
def default_handlers():
    if (signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        pytest.skip("this test process handles SIGTERM or SIGINT: interruptible leaves them")


def test_a_sigterm_inside_the_block_stops_the_run_when_the_block_ends():
    done = []
    with pytest.raises(RunInterrupted) as stop:
        with interruptible():
            with uninterrupted():
                os.kill(os.getpid(), signal.SIGTERM)   # Python runs the handler at once
                done.append("after the signal")
                with uninterrupted():                  # nested: the outermost decides
                    done.append("inner")
                done.append("end of the block")
            done.append("after the block")
    assert done == ["after the signal", "inner", "end of the block"]
    assert stop.value.signal_name == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_second_ctrl_c_inside_the_block_stops_at_once():
    done = []
    with pytest.raises(RunInterrupted):
        with interruptible(), uninterrupted():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("held")
            os.kill(os.getpid(), signal.SIGINT)
            done.append("not reached")
    assert done == ["held"]


def test_a_block_without_a_signal_changes_nothing():
    with interruptible():
        with uninterrupted():
            pass
        with pytest.raises(RunInterrupted):   # the next signal, outside, stops at once
            os.kill(os.getpid(), signal.SIGTERM)
            raise AssertionError("the handler did not run")
