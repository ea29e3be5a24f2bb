"""Start a Python program under a real ``mpirun`` from a test, with a time bound.

    result = run_mpi(["-m", "tests.parallel.rank_programs", "environment"], np=3)
    assert result.returncode == 0, result.output

Root and oversubscription are allowed (tests run as root on 2 cores), and the job's
output is returned even when it times out, so a hang fails the test instead of CI.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    # one thread per rank: ranks share 2 cores
    "OMP_NUM_THREADS": "1",
    "PYTHONUNBUFFERED": "1",
    "PYTHONPATH": str(REPO),
}


@dataclass
class MPIRun:
    returncode: int
    output: str
    seconds: float
    timed_out: bool


def mpirun_available() -> bool:
    return shutil.which("mpirun") is not None


requires_mpirun = pytest.mark.skipif(not mpirun_available(), reason="mpirun is not installed")


def run_mpi(args, np: int = 2, timeout: float = 120.0, env: dict = None, cwd=None,
            mpirun_args=()) -> MPIRun:
    """Run ``mpirun -np NP [MPIRUN_ARGS] python ARGS...``; returns exit code and merged output."""
    command = ["mpirun", "-np", str(np), "--oversubscribe", "--bind-to", "none",
               *map(str, mpirun_args), sys.executable, *map(str, args)]
    full_env = dict(os.environ, **MPI_ENV, **(env or {}))
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env=full_env, cwd=cwd or REPO, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        output, _ = process.communicate()
        timed_out = True
    return MPIRun(process.returncode, output, time.monotonic() - started, timed_out)
