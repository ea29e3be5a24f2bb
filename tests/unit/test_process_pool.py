"""ProcessPool: jobs on worker processes, which leave signals to the process that made them."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from nord.errors import ConfigurationError
from nord.parallel import interruptible
from nord.search.executors import ProcessPool

pytestmark = pytest.mark.timeout(60)


def _square(value: int) -> int:
    return value * value


@pytest.mark.processes
def test_jobs_run_on_workers_and_every_result_comes_back():
    assert sorted(ProcessPool(2).map(_square, range(10))) == [value * value for value in range(10)]
    assert list(ProcessPool(1).map(_square, [3, 1, 2])) == [9, 1, 4]


def test_processes_must_be_a_positive_integer():
    with pytest.raises(ConfigurationError, match="processes must be an integer >= 1; got 0"):
        ProcessPool(0)


# Under nord's interruptible() (as in ``nord compare``) the pool stops early while a worker is
# still busy: the SIGTERM that ends it used to raise in it through the inherited handler,
# and the worker printed a traceback under a finished comparison.
EARLY_STOP = textwrap.dedent("""
    import signal, time
    from nord.parallel import interruptible
    from nord.search.executors import ProcessPool

    def job(seconds):
        time.sleep(seconds)
        return (seconds, signal.getsignal(signal.SIGINT) is signal.SIG_IGN)

    with interruptible():
        results = ProcessPool(2).map(job, [0.0, 30.0])
        print("first", next(results))
        results.close()       # the pool ends its workers, one of them mid-job
    print("done")
""")


@pytest.mark.processes
def test_a_pool_ended_while_a_worker_is_busy_ends_it_quietly():
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", EARLY_STOP], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["first", "(0.0,", "True)", "done"]
    assert "Traceback" not in done.stderr and "RunInterrupted" not in done.stderr, done.stderr
    assert time.monotonic() - started < 20       # the 30 s job was ended, not waited for


@pytest.mark.processes
def test_a_forked_child_signalled_before_it_sets_its_own_handlers_exits_quietly():
    # a pool's worker inherits interruptible()'s handler at the fork; a SIGTERM that comes
    # before the worker replaces it must end the worker, not raise RunInterrupted in it
    with interruptible():
        pid = os.fork()
        if pid == 0:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            finally:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 128 + signal.SIGTERM
