"""The Environment under SLURM, from the variables srun and sbatch set (one process, no MPI).

tests/parallel/test_slurm.py checks the same under a real SLURM.
"""
import pytest

from nord.parallel import Environment, launched_by_mpi, launcher_local_rank, launcher_world_size
from nord.errors import ConfigurationError

LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                      "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS",
                      "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_STEP_NUM_TASKS",
                      "SLURM_LOCALID", "SLURM_PROCID", "SLURM_NTASKS")
# what srun sets in task 1 of a 3-task step on one node (with --mpi=pmix it adds PMIX_RANK)
SRUN_TASK = {"SLURM_STEP_NUM_TASKS": "3", "SLURM_NTASKS": "3", "SLURM_PROCID": "1",
             "SLURM_LOCALID": "1", "SLURM_STEP_ID": "0"}
# what an sbatch script itself sees: the job's tasks, but no step
BATCH_SCRIPT = {"SLURM_NTASKS": "3", "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_JOB_ID": "7"}


@pytest.fixture
def plain(monkeypatch):
    """A process with no launcher variable at all."""
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_local_rank_under_srun_is_slurm_localid():
    assert launcher_local_rank(dict(SRUN_TASK, PMIX_RANK="1")) == 1


def test_mpirun_in_an_sbatch_script_keeps_open_mpi_local_rank():
    # the batch script's SLURM_LOCALID=0 is inherited by every rank mpirun starts
    ranks = dict(BATCH_SCRIPT, OMPI_COMM_WORLD_LOCAL_RANK="2", OMPI_COMM_WORLD_SIZE="3")
    assert launcher_local_rank(ranks) == 2


def test_the_world_size_under_srun_is_the_step_s_tasks():
    assert launcher_world_size(dict(SRUN_TASK, PMIX_RANK="1")) == 3


def test_an_sbatch_script_has_no_world_size():
    # SLURM_NTASKS counts the job's tasks, not the ranks of this process's launch
    assert launcher_world_size(BATCH_SCRIPT) is None
    assert not launched_by_mpi(BATCH_SCRIPT)


def test_open_mpi_world_size_comes_before_slurm():
    assert launcher_world_size({"OMPI_COMM_WORLD_SIZE": "4", "SLURM_STEP_NUM_TASKS": "1"}) == 4


def test_several_srun_tasks_without_mpi_are_refused(plain):
    for name, value in SRUN_TASK.items():
        plain.setenv(name, value)
    with pytest.raises(ConfigurationError, match=r"srun started 3 tasks without an MPI plugin.*"
                                                 r"this is task 1.*srun --mpi=pmix"):
        Environment().start()


def test_one_srun_task_without_mpi_is_a_single_process(plain):
    for name, value in dict(SRUN_TASK, SLURM_STEP_NUM_TASKS="1", SLURM_NTASKS="1").items():
        plain.setenv(name, value)
    with Environment() as env:
        assert (env.rank, env.size, env.comm) == (0, 1, None)


def test_use_mpi_false_lets_srun_tasks_run_alone(plain):
    for name, value in SRUN_TASK.items():
        plain.setenv(name, value)
    with Environment(use_mpi=False) as env:
        assert env.size == 1


def test_an_sbatch_script_runs_a_single_process(plain):
    for name, value in BATCH_SCRIPT.items():
        plain.setenv(name, value)
    with Environment() as env:
        assert (env.rank, env.size, env.local_rank) == (0, 1, 0)
