"""The ported 2018 examples (experiments/legacy) in one process, at smoke size: the 2018
``--untrained`` flag on a small CIFAR-10 written in the official format, and the README's
ways of shortening a 2018 run. Experiments 2 and 3 run under mpirun in
tests/parallel/test_legacy_mpi.py."""
import os
import re
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from nord.legacy.smoke import write_cifar10
from tests.mpirun import MPI_ENV, REPO

LEGACY = REPO / "experiments" / "legacy"
README = (REPO / "README.md").read_text()


@pytest.fixture
def workdir(tmp_path):
    """A scratch folder (the 2018 programs write their logs into the working directory)."""
    write_cifar10(tmp_path / "data", n_train=20, n_test=10)
    return tmp_path


def run_python(args, workdir, timeout=300, env=None):
    env = dict(os.environ, **MPI_ENV, NORD_LEGACY_DATA=str(workdir / "data"), **(env or {}))
    return subprocess.run([sys.executable, *map(str, args)], cwd=workdir, env=env, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_the_ports_reach_nord_only_through_one_import_line():
    ported = sorted(p for p in LEGACY.rglob("*.py") if p.name != "make_smoke_data.py")
    assert len(ported) == 6
    for path in ported:
        nord_lines = [line for line in path.read_text().splitlines()
                      if re.match(r"\s*(import|from)\s+nord\b", line)]
        entry = path.parent == LEGACY
        assert nord_lines == (["import nord.legacy"] if entry else []), (path, nord_lines)


@pytest.mark.processes
def test_descriptor_example_trains_the_branching_network(workdir):
    done = run_python([LEGACY / "descriptor_example.py"], workdir)
    assert done.returncode == 0, done.stdout
    assert "epoch 5/5" in done.stdout and "epoch 6" not in done.stdout, done.stdout
    assert re.search(r"^Finished Training\n"
                     r"Accuracy of the network on the test images: \d+\.\d\d %\n"
                     r"Loss of the network on the test images: \d+\.\d{4} \n", done.stdout,
                     re.M), done.stdout


@pytest.mark.processes
def test_genetic_example_experiment1_logs_every_individual(workdir):
    done = run_python([LEGACY / "genetic_example.py", "-e", "1", "--untrained"], workdir)
    assert done.returncode == 0, done.stdout[-4000:]
    rows = []
    for line in (workdir / "Local.log").read_text().splitlines():
        match = re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d;Local;INFO;(\d+);\[(.*)\];(\S+)", line)
        assert match, line
        rows.append((int(match.group(1)), float(match.group(3))))
    assert Counter(g for g, _ in rows) == {g: 10 for g in range(10)}  # 10 generations of 10
    assert all(-100 <= f <= 0 for _, f in rows)
    assert any(f < 0 for _, f in rows) and any(f == 0 for _, f in rows)  # some do not build


def test_numpy_refuses_the_nan_probabilities_of_the_2018_roulette():
    """Why experiment 3 needed its fix: 2018's roulette on fitness values that are all 0."""
    fitness = np.zeros(10)
    with np.errstate(invalid="ignore"):
        probabilities = fitness / np.sum(fitness)
    with pytest.raises(ValueError, match="NaN"):
        np.random.choice(10, size=1, p=probabilities)


@pytest.mark.processes
def test_experiment3_roulette_survives_a_generation_without_fitness(workdir):
    program = (
        "import nord.legacy\n"
        "from architectural_design.metaheuristics.distributed_genetic_algorithm_local_nets "
        "import DistributedGenetic\n"
        "g = DistributedGenetic(10, 1, untrained=True)\n"
        "g.population_f[:] = 0.0\n"
        "g.evolve_population()\n"
        "lb, ub = g.prob.get_bounds()\n"
        "assert len(g.population_x) == 10\n"
        "assert all(lb[i] <= x[i] <= ub[i] for x in g.population_x for i in range(len(lb)))\n"
        "print('evolved')\n")
    env_path = os.pathsep.join([str(LEGACY), str(REPO)])
    done = subprocess.run([sys.executable, "-c", program], cwd=workdir, timeout=120, text=True,
                          env=dict(os.environ, **dict(MPI_ENV, PYTHONPATH=env_path)),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert done.returncode == 0 and "evolved" in done.stdout, done.stdout


@pytest.mark.processes
def test_the_readme_shortens_a_2018_run_without_editing_it(workdir):
    """The README's short_run.py, next to the experiments: 2 generations of 4, 1 epoch each."""
    block = next(b for b in re.findall(r"```python\n(.*?)```", README, re.S) if "short_run.py" in b)
    (workdir / "short_run.py").write_text(block)
    env_path = os.pathsep.join([str(LEGACY), str(REPO)])
    done = subprocess.run([sys.executable, "short_run.py"], cwd=workdir, timeout=300, text=True,
                          env=dict(os.environ, **dict(MPI_ENV, PYTHONPATH=env_path),
                                   NORD_LEGACY_DATA=str(workdir / "data")),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert done.returncode == 0, done.stdout[-4000:]
    lines = (workdir / "Local.log").read_text().splitlines()
    generations = [int(line.split(";")[3]) for line in lines]
    assert Counter(generations) == {0: 4, 1: 4}


@pytest.mark.processes
def test_nord_legacy_epochs_shortens_the_descriptor_example(workdir):
    done = run_python([LEGACY / "descriptor_example.py"], workdir, env={"NORD_LEGACY_EPOCHS": "1"})
    assert done.returncode == 0, done.stdout
    assert "epoch 1/1" in done.stdout and "epoch 2" not in done.stdout, done.stdout
