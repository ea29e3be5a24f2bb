"""A run given no journal names its own, and runs started together never share one."""
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from nord.app.runner import default_journal, release_default_journal
from nord.app.settings import RunConfig
from nord.journal import list_runs
from tests.mpirun import REPO


def test_names_taken_in_the_same_second_differ_and_are_claimed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = RunConfig(space="nasbench201")
    with ThreadPoolExecutor(8) as pool:
        paths = list(pool.map(lambda _: default_journal(config), range(8)))
    assert len(set(paths)) == 8
    assert all(path.startswith(os.path.join("runs", "regularized_evolution-")) for path in paths)
    assert all(os.path.isdir(f"{path}.checkpoints") for path in paths)   # the claims
    for path in paths:
        release_default_journal(path)
    assert os.listdir("runs") == []


@pytest.mark.processes
def test_three_runs_started_at_once_without_a_journal_each_write_their_own(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    runs = [subprocess.Popen([sys.executable, "-m", "nord", "run", "--space", "nasbench201",
                              "--budget", "20", "--seed", str(seed)], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for seed in range(3)]
    outputs = [run.communicate(timeout=120)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], outputs
    found, skipped = list_runs(tmp_path / "runs")
    assert len(found) == 3 and not skipped
    assert sorted(run["seed"] for run in found) == [0, 1, 2]
    assert sorted(os.listdir(tmp_path / "runs")) == sorted(
        os.path.basename(run["path"]) for run in found)    # no claim left behind
