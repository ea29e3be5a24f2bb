"""nord.legacy under real mpirun: the 2018 distributed evaluator and environment, and the ported
2018 experiments 2 and 3 at smoke size (the 2018 ``--untrained`` flag on a small CIFAR-10
written in the official format), launched as the 2018 README launched them.
"""
import re
from collections import defaultdict

import pytest

from nord.legacy.smoke import write_cifar10
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


@pytest.mark.parametrize("ranks", [2, 3])
def test_distributed_evaluator_and_environment(workdir, ranks):
    run = run_legacy(["-m", "tests.parallel.legacy_programs", "rank_zero_descriptor",
                      "failure_on_rank_zero", "log_file"], ranks, workdir)
    assert run.output.count("checks passed") == ranks, run.output[-3000:]
    assert all(f"[rank {r}/{ranks}]" in run.output for r in range(ranks))  # the status lines


@pytest.mark.parametrize("ranks", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_experiment2_evaluates_each_network_on_every_rank(workdir, ranks):
    run = run_legacy([LEGACY / "genetic_example.py", "-e", "2", "--untrained"], ranks, workdir)
    assert all(f"[rank {r}/{ranks}]" in run.output for r in range(ranks))
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
