"""nord under a real SLURM: srun, the sbatch templates in slurm/, scancel and resume.

The ``slurm_cluster`` fixture (tests/conftest.py) starts munged, slurmctld and slurmd on this
machine as a one-node cluster (tests/helpers/slurm.py) and stops them after the module. Jobs
inherit the submitting environment (sbatch's default), which carries the Open MPI root
settings and PYTHONPATH; the node declares more CPUs than this machine has, so 3 tasks fit.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from nord.journal import Journal
from tests.helpers import searches
from tests.helpers import slurm as slurm_helper
from tests.helpers.resumes import NORD, logged, results, run, search
from tests.mpirun import MPI_ENV, REPO, requires_mpirun
from tests.parallel.cluster_programs import records

pytestmark = [requires_mpirun, pytest.mark.mpi, pytest.mark.slow, pytest.mark.timeout(400)]

ABORT_BOUND = 30.0
"""Seconds within which a step with a failed rank must be over; it takes 1-2 s here."""
ONE_NODE = ["-N", "1", "-n", "3", "--ntasks-per-node=3"]
"""sbatch options that fit the templates' two-node defaults onto the one test node."""
CANCEL_BUDGET = 60
"""Evaluations of the search cancelled after its third: enough that scancel (which takes a
second or so to land) always stops it midway, even on an idle machine."""
PROGRAM = [sys.executable, "-m"]


def srun(slurm, *args, timeout=120):
    """``srun ARGS`` against the test cluster, from the repository; exit code and output."""
    started = time.monotonic()
    done = subprocess.run(["srun", *map(str, args)], cwd=REPO, env=slurm.env(**MPI_ENV),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    return done, time.monotonic() - started


def submit(slurm, template, command, tmp_path, *options):
    """``sbatch ONE_NODE OPTIONS slurm/TEMPLATE COMMAND``; the job id and its output file."""
    output = tmp_path / "job-%j.out"
    job = slurm.sbatch([f"slurm/{template}", *map(str, command)], *ONE_NODE, "-o", str(output),
                       *options, env=slurm.env(**MPI_ENV), cwd=REPO)
    return job, tmp_path / f"job-{job}.out"


def completed(slurm, job, output, timeout=300):
    fields = slurm.wait(job, timeout=timeout)
    text = output.read_text() if output.exists() else "(no output file)"
    assert (fields["JobState"], fields["ExitCode"]) == ("COMPLETED", "0:0"), (
        f"job {job}: {fields['JobState']} {fields['ExitCode']}\n{text[-5000:]}")
    return text


# --- srun ---------------------------------------------------------------------------------------
def test_srun_gives_ranks_local_ranks_and_the_host(slurm_cluster, tmp_path):
    done, _ = srun(slurm_cluster, "--mpi=pmix", "-n", 3,
                   *PROGRAM, "tests.parallel.cluster_programs", "where", tmp_path)
    assert done.returncode == 0, done.stdout[-4000:]
    ranks = records(tmp_path)
    assert [r["rank"] for r in ranks] == [0, 1, 2] and {r["size"] for r in ranks} == {3}
    # one node: each rank's local rank is SLURM_LOCALID, which is also MPI's count on the node
    assert [r["slurm_localid"] for r in ranks] == ["0", "1", "2"]
    assert [r["local_rank"] for r in ranks] == [r["node_rank"] for r in ranks] == [0, 1, 2]
    # what DistributedEvaluator reads without an Environment, and the runner's world size
    assert [r["launcher_local_rank"] for r in ranks] == [0, 1, 2]
    assert {r["launcher_world_size"] for r in ranks} == {3}
    assert {r["hostname"] for r in ranks} == {socket.gethostname()}
    assert {r["slurm_node"] for r in ranks} == {slurm_cluster.host}


def test_an_error_on_one_rank_ends_the_srun_step(slurm_cluster):
    done, seconds = srun(slurm_cluster, "--mpi=pmix", "-n", 3,
                         *PROGRAM, "tests.parallel.environment_programs", "fail", 1, "raise")
    assert done.returncode != 0 and seconds < ABORT_BOUND, (seconds, done.stdout[-4000:])
    assert "[rank 1] ValueError: deliberate failure on rank 1" in done.stdout, done.stdout[-4000:]
    assert "went on after the failure" not in done.stdout


def test_srun_without_an_mpi_plugin_is_refused(slurm_cluster):
    done, _ = srun(slurm_cluster, "--mpi=none", "-n", 2,
                   *PROGRAM, "tests.parallel.cluster_programs", "start")
    assert done.returncode != 0, done.stdout[-4000:]
    assert done.stdout.count("srun started 2 tasks without an MPI plugin") == 2, done.stdout[-4000:]
    assert "started as rank" not in done.stdout


def test_srun_runs_an_experiment(slurm_cluster, tmp_path):
    journal = tmp_path / "e3.db"
    command = searches.experiment_command("experiment3_distributed_ga.py", "--mode", "async",
                                          "--journal", str(journal))
    done, _ = srun(slurm_cluster, "--mpi=pmix", "-n", 3, *command, timeout=300)
    assert done.returncode == 0, done.stdout[-5000:]
    info = searches.run_info(journal)
    assert info["status"] == "finished" and info["ranks"] == 3 and info["worker_ranks"] == [1, 2]
    trained_by = {row["worker_rank"] for row in searches.evaluations(journal, drop=())
                  if not row["cached"]}
    assert trained_by == {1, 2}


# --- sbatch templates ---------------------------------------------------------------------------
def test_mpirun_template_takes_ranks_from_the_allocation(slurm_cluster, tmp_path):
    command = [*PROGRAM, "tests.parallel.cluster_programs", "where", tmp_path]
    job, output = submit(slurm_cluster, "mpirun.sbatch", command, tmp_path)
    completed(slurm_cluster, job, output)
    ranks = records(tmp_path)
    assert [r["rank"] for r in ranks] == [0, 1, 2] and {r["size"] for r in ranks} == {3}
    assert [r["local_rank"] for r in ranks] == [r["node_rank"] for r in ranks] == [0, 1, 2]


def test_a_cancelled_search_is_resumed_by_a_new_job(slurm_cluster, tmp_path):
    journal = tmp_path / "cancelled.db"
    job, output = submit(slurm_cluster, "srun.sbatch",
                         searches.search_command(journal, CANCEL_BUDGET, mode="async"), tmp_path)
    deadline = time.monotonic() + 240
    while searches.count(journal) < 3:
        state = slurm_cluster.job(job)["JobState"]
        assert state in ("PENDING", "RUNNING"), f"job {job} {state}:\n{output.read_text()[-4000:]}"
        assert time.monotonic() < deadline, "the search recorded nothing in time"
        time.sleep(0.05)
    slurm_cluster.run(["scancel", job])
    fields = slurm_cluster.wait(job, timeout=60)
    assert fields["JobState"] == "CANCELLED", fields

    before = searches.evaluations(journal)
    told = [int(n) for n in re.findall(rf"(\d+)/{CANCEL_BUDGET} evaluations", output.read_text())]
    info = searches.run_info(journal)
    assert 3 <= len(before) < CANCEL_BUDGET
    # scancel sends SIGTERM to every task: rank 0 says so in the journal before it ends
    assert (info["status"], info["status_detail"]) == ("interrupted", "SIGTERM")
    assert len(before) >= max(told, default=0), "an evaluation rank 0 reported is not journaled"

    job, output = submit(slurm_cluster, "srun.sbatch", searches.resume_command(journal), tmp_path)
    completed(slurm_cluster, job, output)
    after = searches.evaluations(journal)
    assert after[:len(before)] == before, "the resumed run changed what was journaled"
    assert len(after) == CANCEL_BUDGET and searches.run_info(journal)["status"] == "finished"
    assert searches.retrained(before, after) == []


# --- the fixture itself -------------------------------------------------------------------------
def zombie_or_gone(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_slurm_leaves_nothing_behind_when_a_test_fails():
    if slurm_helper.cannot_run() is not None:
        pytest.skip(slurm_helper.cannot_run())
    work = tempfile.mkdtemp(prefix=slurm_helper.workdir_prefix())
    try:
        with pytest.raises(RuntimeError, match="a failing test"):
            with slurm_helper.SlurmCluster(work) as cluster:
                job = cluster.sbatch(["--wrap=sleep 600"], "-o", "/dev/null")
                while not cluster._job_processes(job):
                    assert cluster.job(job)["JobState"] in ("PENDING", "RUNNING")
                    time.sleep(0.05)
                pids = cluster.processes_of_cluster()
                assert len(pids) > 3  # munged, slurmctld, slurmd and the job's
                raise RuntimeError("a failing test")
        assert all(zombie_or_gone(pid) for pid in pids)
        assert cluster.processes_of_cluster() == []
    finally:
        shutil.rmtree(work, ignore_errors=True)


@requires_mpirun
@pytest.mark.mpi
def test_a_slurm_job_cancelled_mid_candidate_is_resumed_by_a_new_job(slurm_cluster, tmp_path):
    """scancel (SIGTERM to every task) in the middle of a candidate's training, then a new
    job that resumes: the candidate goes on from its last epoch."""
    extra = ["--budget", "3", "--epochs", "6", "--algorithm", "random", "--mode", "async"]
    code, output = run(search(tmp_path / "whole.db", *extra), tmp_path / "whole.log", mpi=2)
    assert code == 0, output
    journal, log = tmp_path / "cut.db", tmp_path / "cut.log"
    # the second candidate waits in its third epoch (an epoch takes 30 ms: a scancel
    # that a busy machine slows down could otherwise come after the candidate ended)
    env = slurm_cluster.env(**MPI_ENV, NORD_EPOCH_LOG=str(log), NORD_PAUSE_AFTER="8")
    job = slurm_cluster.sbatch(["slurm/srun.sbatch", *NORD, *search(journal, *extra)], "-N", "1",
                               "-n", "2", "--ntasks-per-node=2", "-o", str(tmp_path / "1.out"),
                               env=env, cwd=REPO)
    deadline = time.monotonic() + 240
    while not os.path.exists(f"{log}.paused"):
        assert slurm_cluster.job(job)["JobState"] in ("PENDING", "RUNNING"), (
            (tmp_path / "1.out").read_text()[-3000:])
        assert time.monotonic() < deadline, "the search trained nothing in time"
        time.sleep(0.05)
    slurm_cluster.run(["scancel", job])
    assert slurm_cluster.wait(job, timeout=60)["JobState"] == "CANCELLED"
    with Journal(journal) as record:
        assert record.state() == "interrupted"
    assert os.listdir(f"{journal}.checkpoints") == ["candidate-1.pt"]
    job = slurm_cluster.sbatch(["slurm/srun.sbatch", *NORD, "resume", str(journal)], "-N", "1",
                               "-n", "2", "--ntasks-per-node=2", "-o", str(tmp_path / "2.out"),
                               env=env, cwd=REPO)
    fields = slurm_cluster.wait(job, timeout=240)
    assert fields["JobState"] == "COMPLETED", (tmp_path / "2.out").read_text()[-3000:]
    assert logged(log) == logged(tmp_path / "whole.log")      # no epoch trained twice
    expected, actual = results(tmp_path / "whole.db"), results(journal)
    assert actual[:2] == expected[:2] and actual[2]
