"""nord.legacy under real mpirun: the 2018 distributed evaluator and environment, the ported
2018 experiments 2 and 3 at smoke size (the 2018 ``--untrained`` flag on a small CIFAR-10
written in the official format), launched as the 2018 README launched them, and 2018 code
that raises on one rank, which must end the whole job at once.
"""
import re
from collections import defaultdict

import pytest

from nord.legacy.smoke import write_cifar10
from tests.helpers.legacy import package_2018, utils_2018, write
from tests.mpirun import REPO, requires_mpirun, run_mpi

pytestmark = [requires_mpirun, pytest.mark.mpi]

LEGACY = REPO / "experiments" / "legacy"
N_TRAIN, N_TEST = 20, 10
GENERATIONS, POPULATION = 10, 10  # fixed in the 2018 examples
# Horovod's background thread and MPI's busy waiting compete for the cores when ranks
# outnumber them (see the README, "Running under MPI")
FEW_CORES = {"HOROVOD_CYCLE_TIME": "10", "OMPI_MCA_mpi_yield_when_idle": "1"}


@pytest.fixture
def workdir(tmp_path):
    """A scratch folder (the 2018 programs write their logs into the working directory)."""
    write_cifar10(tmp_path / "data", n_train=N_TRAIN, n_test=N_TEST)
    return tmp_path


def run_legacy(args, ranks, workdir, timeout=300):
    run = run_mpi(args, np=ranks, cwd=workdir, timeout=timeout,
                  env=dict(FEW_CORES, NORD_LEGACY_DATA=str(workdir / "data")))
    assert not run.timed_out, f"timed out after {run.seconds:.0f} s:\n{run.output[-4000:]}"
    assert run.returncode == 0, run.output[-6000:]
    return run


def log_messages(path, name):
    """The messages of a 2018 log file, each line checked against the 2018 format."""
    messages = []
    for line in path.read_text().splitlines():
        match = re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d;%s;INFO;(.*)" % re.escape(name), line)
        assert match, f"not a 2018 log line of {name}: {line!r}"
        messages.append(match.group(1))
    return messages


def status_lines(output, ranks):
    """Whether rank 0 printed 2018's status lines, in rank order."""
    expected = "Master initialized.\n" + "".join(
        f"Worker {r + 1} of {ranks} (local {r})\n" for r in range(1, ranks))
    return expected in output


@pytest.mark.parametrize("ranks", [2, 3])
def test_distributed_evaluator_and_environment(workdir, ranks):
    run = run_legacy(["-m", "tests.parallel.legacy_programs", "rank_zero_descriptor",
                      "failure_on_rank_zero", "log_file", "close_workers"], ranks, workdir)
    assert run.output.count("checks passed") == ranks, run.output[-3000:]
    assert status_lines(run.output, ranks), run.output[-3000:]


@pytest.mark.parametrize("ranks", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_experiment2_evaluates_each_network_on_every_rank(workdir, ranks):
    run = run_legacy([LEGACY / "genetic_example.py", "-e", "2", "--untrained"], ranks, workdir)
    assert status_lines(run.output, ranks), run.output[-3000:]
    rows = [m.split(";") for m in log_messages(workdir / "NORD.log", "NORD")]
    # rank 0 alone writes, each individual once: 10 per generation
    per_generation = defaultdict(int)
    for generation, _, fitness in rows:
        per_generation[int(generation)] += 1
        assert -100 <= float(fitness) <= 0
    assert dict(per_generation) == {g: POPULATION for g in range(GENERATIONS)}
    assert any(float(f) < 0 for _, _, f in rows), "no network scored above 0"


@pytest.mark.parametrize("ranks", [3, pytest.param(2, marks=pytest.mark.slow)])
def test_experiment3_workers_evaluate_and_rank_0_evolves(workdir, ranks):
    run = run_legacy([LEGACY / "genetic_example.py", "-e", "3", "--untrained"], ranks, workdir)
    scores = [float(m.split(";")[1])
              for m in log_messages(workdir / "Distributed_Genetic.log", "Distributed_Genetic")]
    assert len(scores) == GENERATIONS * POPULATION
    printed = [float(b) for b in re.findall(r"Best f for gen \d+: (\S+)", run.output)]
    # the best of each generation, as it was evaluated (2018 printed 0.0 here every time)
    assert printed == [max(scores[g * POPULATION:(g + 1) * POPULATION]) for g in range(GENERATIONS)]
    workers = ranks - 1  # the work is dealt out in turn: the same share for every worker
    for worker in range(1, ranks):
        messages = log_messages(workdir / f"{worker}.log", str(worker))
        got = sum(m.startswith("Worker got") for m in messages)
        assert got == GENERATIONS * POPULATION // workers, messages


# 2018's experiment 3 in small, as 2018 wrote it: rank 0 deals the individuals out to the
# workers and collects their fitness by tag, then every rank runs the roulette wheel; the
# workers hold no fitness, divide 0 by 0, and NumPy refuses the NaN probabilities. With
# `master`, rank 0 raises instead, while the workers wait for their next individuals.
DISTRIBUTED_GA_2018 = """import nord.legacy
import sys
import numpy as np
from mpi4py import MPI
from utils import get_logger

POPULATION, GENERATIONS = 4, 3
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
logger = get_logger(str(rank))
fitness = np.zeros(POPULATION)
for generation in range(GENERATIONS):
    if rank == 0:
        if sys.argv[1] == "master" and generation == 1:
            raise RuntimeError("rank 0 failed in generation 1")
        for i in range(POPULATION):
            comm.send([i, [i + 1]], dest=1 + i % (size - 1))
        for _ in range(POPULATION):
            status = MPI.Status()
            f = comm.recv(status=status)
            fitness[status.Get_tag()] = -f[0]
    else:
        work = [comm.recv(source=0, tag=MPI.ANY_TAG) for _ in range(rank - 1, POPULATION, size - 1)]
        for i, x in work:
            comm.send([-float(x[0])], 0, tag=i)
            logger.info("Worker sending %d", i)
    comm.Barrier()
    if sys.argv[1] == "worker":
        with np.errstate(invalid="ignore"):
            probabilities = fitness / np.sum(fitness)
        np.random.choice(POPULATION, size=1, p=probabilities)
print("rank", rank, "finished every generation", flush=True)
"""


@pytest.mark.parametrize("ranks, failing", [(2, "worker"), (3, "worker"), (2, "master")])
def test_an_error_on_any_rank_of_2018_code_ends_the_job_at_once(tmp_path, ranks, failing):
    """Without nord.legacy this job hangs: the failing rank waits in MPI_Finalize for ranks that
    wait for it. Run in a folder shaped like a 2018 checkout, which the line also handles."""
    write(tmp_path, {**package_2018(), **utils_2018(), "ga.py": DISTRIBUTED_GA_2018})
    run = run_mpi(["ga.py", failing], np=ranks, cwd=tmp_path, timeout=120)
    assert not run.timed_out, f"hung for {run.seconds:.0f} s:\n{run.output[-4000:]}"
    assert run.returncode != 0 and run.seconds < 60, (run.returncode, run.seconds)
    error = ("ValueError: probabilities contain NaN" if failing == "worker"
             else "RuntimeError: rank 0 failed in generation 1")
    failed = range(1, ranks) if failing == "worker" else [0]
    assert any(f"[rank {r}] {error}" in run.output for r in failed), run.output[-4000:]
    assert "aborting all %d ranks with MPI_Abort(1)" % ranks in run.output, run.output[-4000:]
    assert "finished every generation" not in run.output
    # the 2018 package and utils.py of the folder are replaced, and rank 0 alone says so
    assert run.output.count("nord.legacy: NORD 2018's own neural_nets/ and utils.py") == 1
