"""Worker processes on a GPU (``nord run --workers``): several candidates per GPU, time-sliced
or under CUDA MPS, the capacity the admission rule starts from, and a dispatching process that
opens no CUDA context.

Every test needs a GPU (marker ``gpu``; skipped, saying so, where torch sees none):
``python3 -m pytest -m gpu tests/unit/test_gpu_workers.py``. Not yet run on a GPU.
"""
import os
import subprocess
import sys
import textwrap

import pytest

from nord.journal import Journal
from nord.parallel.mps import control_program
from tests.mpirun import REPO

pytestmark = [pytest.mark.gpu, pytest.mark.processes]


def run_python(code: str, timeout: float = 600) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, text=True,
                          capture_output=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return done.stdout


def test_two_workers_share_one_gpu_by_time_slicing_and_the_engine_opens_no_context(tmp_path):
    journal = tmp_path / "sliced.db"
    out = run_python(f"""
        import torch
        from nord.app.runner import run
        from nord.app.settings import RunConfig
        run(RunConfig(algorithm="random", budget=6, epochs=1, device="cuda:0", mode="async",
                      worker_processes=2, mps="off", journal="{journal}"), progress=False)
        print("engine CUDA initialised:", torch.cuda.is_initialized())
    """)
    assert "engine CUDA initialised: False" in out
    with Journal(journal) as record:
        rows, execution = record.evaluations(), record.metadata()["execution"]
    assert len(rows) == 6 and all(row["status"] == "ok" for row in rows), rows
    assert {row["worker_rank"] for row in rows} == {1, 2}
    assert execution["devices"] == ["cuda:0", "cuda:0"]
    assert execution["sharing"] in ("time-slicing", "mps")   # mps: a daemon was running already


@pytest.mark.skipif(control_program() is None, reason="nvidia-cuda-mps-control is not installed")
def test_mps_on_runs_the_workers_under_a_daemon_of_nords_own_and_stops_it(tmp_path):
    journal = tmp_path / "mps.db"
    out = run_python(f"""
        import glob, tempfile
        from nord.app.runner import run
        from nord.app.settings import RunConfig
        run(RunConfig(algorithm="random", budget=6, epochs=1, device="cuda:0", mode="async",
                      worker_processes=2, mps="on", journal="{journal}"), progress=False)
        print("left:", glob.glob(tempfile.gettempdir() + "/nord-mps-*"))
    """)
    assert "left: []" in out       # the daemon's folder is gone: it was told to quit
    with Journal(journal) as record:
        rows, execution = record.evaluations(), record.metadata()["execution"]
    assert all(row["status"] == "ok" for row in rows), rows
    assert execution["sharing"] == "mps"
    survivors = subprocess.run(["pgrep", "-f", "nvidia-cuda-mps-control -f"], text=True,
                               capture_output=True).stdout.split()
    assert not survivors


def test_each_worker_reports_the_free_memory_of_its_gpu():
    out = run_python("""
        import functools, torch
        from nord.evaluators.local import LocalEvaluator
        from nord.search import ProcessExecutor
        executor = ProcessExecutor(functools.partial(LocalEvaluator, epochs=1), workers=2,
                                   devices=["cuda:0", "cuda:0"], mps="off")
        executor.start()
        capacity = executor._state.capacity["cuda:0"]
        executor.close()
        free, total = torch.cuda.mem_get_info(0)
        print("capacity within the GPU:", 0 < capacity <= total)
    """)
    assert "capacity within the GPU: True" in out
