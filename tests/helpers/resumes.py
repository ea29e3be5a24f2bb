"""How the tests of killed and resumed runs start nord and read what it left.

    code, output = run(search(journal, "--budget", "3"), log, kill_after=6)   # killed
    code, output = run(["resume", str(journal)], log)                        # and resumed
    assert logged(log) == logged(whole_log)          # no epoch trained twice
    assert results(journal)[:2] == results(whole)[:2]

Runs use the plug-in tests/helpers/killing.py, which logs each finished epoch and kills the run
when told to.
"""
import os
import signal
import subprocess
import sys
import time

from nord.journal import Journal
from tests.mpirun import MPI_ENV, REPO

NORD = [sys.executable, "-m", "nord"]
DROP = ("started", "ended", "train_time", "eval_time", "worker_rank", "recorded", "seconds",
        "asked", "sequence", "told_before")


def run(argv, log, env=None, mpi=0, kill_after=None, wait=0, timeout=240):
    """Run ``nord ARGV`` (under ``mpirun -np MPI`` when given) in a session of its own, the
    epoch log at ``log``, killed after ``kill_after`` epochs once another process is
    mid-epoch too (or ``wait`` seconds have passed); the exit code and output."""
    environment = dict(os.environ, **MPI_ENV, NORD_EPOCH_LOG=str(log), **(env or {}))
    environment.pop("NORD_KILL_AFTER", None)
    if kill_after is not None:
        environment.update(NORD_KILL_AFTER=str(kill_after), NORD_KILL_WAIT=str(wait))
    command = [*NORD, *argv]
    if mpi:
        command = ["mpirun", "-np", str(mpi), "--oversubscribe", "--bind-to", "none",
                   *command]
    process = subprocess.run(command, env=environment, cwd=REPO, capture_output=True,
                             text=True, timeout=timeout, start_new_session=True)
    if os.path.exists(f"{log}.kill"):
        os.remove(f"{log}.kill")
    return process.returncode, process.stdout + process.stderr


def search(journal, *extra):
    return ["run", "--plugin", "tests.helpers.killing", "--callbacks", "epoch_log",
            "--epochs", "4", "--seed", "1", "--threads", "1", "--journal", str(journal),
            *extra]


def logged(log):
    with open(log) as file:
        return sorted(line.split()[1:] for line in file)


def results(journal):
    """Each candidate's journaled result, by candidate, and its learning curve."""
    with Journal(journal) as record:
        rows = {row["candidate"]: {k: v for k, v in row.items() if k not in DROP}
                for row in record.evaluations()}
        curves = [{k: v for k, v in row.items() if k not in DROP + ("worker_rank",)}
                  for row in record.epochs()]
        resumed = record.resumed()
    for row in rows.values():
        row["metrics"].pop("epochs_resumed", None)
    return rows, curves, resumed


def kill_in_second_epoch(command, journal, env=None) -> int:
    """Start a weight-sharing search (``command``, writing ``journal``) in a session of its
    own, and kill it with SIGKILL just after its first epoch's checkpoint appears; returns its
    exit status."""
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    checkpoint = f"{journal}.checkpoints/search.pt"
    deadline = time.time() + 300
    while not os.path.exists(checkpoint) and process.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)                                  # into the second epoch
    os.killpg(process.pid, signal.SIGKILL)
    return process.wait()
