"""A run under a real mpirun whose networks train on a group of two ranks (rank 0 only
dispatches), stopped while the group trains one.

Ctrl-C reaches only mpirun (Open MPI puts each rank in a process group of its own), which
ends the ranks with SIGCONT, SIGTERM and SIGKILL, exactly as when one rank is killed by the
out-of-memory killer. What tells them apart is whether every rank that trained the candidate
lived to get the SIGTERM: after Ctrl-C the candidate in flight is not charged with an attempt;
after a rank is killed it is.
"""
import os
import signal
import subprocess
import sys
import time

import pytest

from nord.journal import Journal
from tests.helpers.resumes import NORD, run, search
from tests.helpers.signals import default_sigint
from tests.mpirun import MPI_ENV, REPO, requires_mpirun

pytestmark = [requires_mpirun, pytest.mark.mpi, pytest.mark.processes, pytest.mark.timeout(180)]

GROUPS = ["--budget", "100", "--evaluation", "distributed", "--group-size", "2",
          "--backend", "torch"]


def untold_attempts(journal):
    """``{candidate: count}`` of the attempts of candidates without a result."""
    with Journal(journal) as record:
        rows = record._query("SELECT candidate, count FROM attempts WHERE candidate NOT IN "
                             "(SELECT candidate FROM evaluations)")
        return record.state(), {row[0]: row[1] for row in rows}


def stopped(np, argv, ready, stop, env=None):
    """Run ``mpirun -np NP ARGV`` in a session of its own, call ``stop(process)`` once
    ``ready()``, and return the job's output."""
    command = ["mpirun", "-np", str(np), "--oversubscribe", "--bind-to", "none",
               *map(str, argv)]
    process = subprocess.Popen(command, env=dict(os.environ, **MPI_ENV, **(env or {})),
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True, preexec_fn=default_sigint)
    try:
        deadline = time.monotonic() + 120
        while not ready():
            assert process.poll() is None, process.stdout.read()
            assert time.monotonic() < deadline, "the first network did not start in time"
            time.sleep(0.01)
        stop(process)
        return process.communicate(timeout=60)[0]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def ctrl_c(process):
    os.killpg(process.pid, signal.SIGINT)   # what Ctrl-C in a terminal does


def test_ctrl_c_of_mpirun_charges_no_attempt_to_the_network_in_training(tmp_path):
    journal, log = tmp_path / "run.db", tmp_path / "epochs.log"
    # 40 epochs: the first network is still training when mpirun's SIGTERM comes, 1 s after
    # Ctrl-C, however busy the machine
    output = stopped(3, [*NORD, *search(journal, *GROUPS, "--epochs", "40")],
                     lambda: log.exists() and log.read_text(),   # the first network trains
                     ctrl_c, env={"NORD_EPOCH_LOG": str(log)})
    state, attempts = untold_attempts(journal)
    assert state == "interrupted", output
    assert attempts and set(attempts.values()) == {0}, (attempts, output)   # taken back
    assert "did not say they survived" not in output
    assert ("interrupted by SIGTERM (mpirun ends its ranks so on Ctrl-C, or when one of them "
            "has died)") in output


def test_a_rank_killed_in_training_charges_the_network_an_attempt(tmp_path):
    journal = tmp_path / "run.db"
    # the first rank of the group mid-way through the second epoch kills itself (its own
    # process group under mpirun)
    code, output = run(search(journal, *GROUPS), tmp_path / "epochs.log", mpi=3,
                       kill_after=1, wait=0, timeout=120)
    assert code != 0, output
    state, attempts = untold_attempts(journal)
    assert state == "interrupted", output
    assert attempts == {0: 1}, output
    assert "did not say they survived" in output


# --- rank 0 trains each network with the other ranks (data-parallel: one group of all) ---------
TOGETHER = """
import os, sys, time
from mpi4py import MPI
from nord.parallel import Environment, wait_for_message
from nord.search.algorithms.random_search import RandomSearch
from nord.search.engine import run_search
from nord.search.executors import MPIExecutor
from tests.helpers.toy import ToyEvaluator, ToySpace

class Together(ToyEvaluator):
    '''Rank 0 trains each network (20 s) with the other ranks, which wait in serve() as the
    members of a data-parallel group do, each saying its pid.'''
    def __init__(self, comm, folder):
        super().__init__()
        self.comm, self.folder = comm, folder
    def serve(self):
        with open(os.path.join(self.folder, f"rank{self.comm.Get_rank()}.pid"), "w") as file:
            file.write(str(os.getpid()))
        wait_for_message(self.comm, 0, 5, MPI.Status())
        self.comm.recv(source=0, tag=5)
    def release(self):
        for rank in range(1, self.comm.Get_size()):
            self.comm.send(None, dest=rank, tag=5)
    def _evaluate(self, descriptor):
        open(os.path.join(self.folder, "training"), "w").close()
        time.sleep(20)
        return super()._evaluate(descriptor)

with Environment() as env:
    executor = MPIExecutor(Together(env.group.comm, sys.argv[2]), env, space=ToySpace())
    run_search(RandomSearch(ToySpace(), seed=0) if env.is_root else None, budget=2,
               journal=sys.argv[1], executor=executor)
"""


@pytest.mark.parametrize("stop", ["ctrl-c", "kill -9 of rank 1"])
def test_rank_0_training_with_the_other_ranks_is_charged_only_when_one_died(tmp_path, stop):
    journal, member = tmp_path / "run.db", tmp_path / "rank1.pid"
    output = stopped(2, [sys.executable, "-c", TOGETHER, journal, tmp_path],
                     lambda: ((tmp_path / "training").exists() and member.exists()
                              and member.read_text()),
                     ctrl_c if stop == "ctrl-c"
                     else lambda _: os.kill(int(member.read_text()), signal.SIGKILL))
    state, attempts = untold_attempts(journal)
    assert state == "interrupted", output
    assert attempts == ({0: 0} if stop == "ctrl-c" else {0: 1}), output
