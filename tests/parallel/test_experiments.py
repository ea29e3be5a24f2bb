"""Examples are tests: every experiment script runs at its --smoke size (under mpirun where
it is meant to), and its journal is a finished run that `nord report` can compare."""
import json
import subprocess
import sys

import pytest

from nord.journal import Journal
from tests.mpirun import REPO, MPI_ENV, requires_mpirun, run_mpi

EXPERIMENTS = REPO / "experiments"


def run_python(args, timeout=300):
    import os
    env = dict(os.environ, **MPI_ENV)
    return subprocess.run([sys.executable, *map(str, args)], cwd=REPO, env=env, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finished_run(path, evaluations):
    with Journal(path) as journal:
        summary = journal.summary()
    assert summary["status"] == "finished", summary
    assert summary["evaluations"] == evaluations
    return summary


def test_paper_examples_smoke():
    done = run_python([EXPERIMENTS / "paper_examples.py", "--smoke"])
    assert done.returncode == 0, done.stdout
    assert done.stdout.count(" ok ") == 3 and "failed" in done.stdout and "ShapeError" in done.stdout


def test_experiment1_local_smoke(tmp_path):
    journal = tmp_path / "e1.db"
    done = run_python([EXPERIMENTS / "experiment1_local.py", "--smoke", "--journal", journal])
    assert done.returncode == 0, done.stdout
    summary = finished_run(journal, evaluations=4 * (2 + 1))
    assert summary["workers"] == 1 and summary["ranks"] == 1


@requires_mpirun
@pytest.mark.mpi
def test_experiment2_data_parallel_smoke(tmp_path):
    journal = tmp_path / "e2.db"
    run = run_mpi([EXPERIMENTS / "experiment2_data_parallel.py", "--smoke", "--journal", journal],
                  np=2, timeout=300)
    assert run.returncode == 0 and not run.timed_out, run.output[-4000:]
    summary = finished_run(journal, evaluations=4 * (2 + 1))
    assert summary["ranks"] == 2 and summary["groups"] == 1
    with Journal(journal) as record:
        assert record.metadata()["evaluator"]["ranks"] == 2  # trained on both ranks


@requires_mpirun
@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_experiment3_distributed_ga_smoke(tmp_path, mode):
    journal = tmp_path / f"e3-{mode}.db"
    run = run_mpi([EXPERIMENTS / "experiment3_distributed_ga.py", "--smoke", "--mode", mode,
                   "--journal", journal], np=3, timeout=300)
    assert run.returncode == 0 and not run.timed_out, run.output[-4000:]
    summary = finished_run(journal, evaluations=4 * (2 + 1))
    assert summary["ranks"] == 3 and summary["workers"] == 2
    with Journal(journal) as record:
        trained_by = {row["worker_rank"] for row in record.evaluations() if not row["cached"]}
    assert trained_by <= {1, 2} and len(trained_by) == 2, trained_by


def test_experiment_resume_continues_a_finished_run(tmp_path):
    journal = tmp_path / "e1.db"
    first = run_python([EXPERIMENTS / "experiment1_local.py", "--smoke", "--journal", journal])
    assert first.returncode == 0, first.stdout
    with Journal(journal) as record:
        before = [(r["candidate"], r["descriptor_hash"], r["accuracy"]) for r in record.evaluations()]
    again = run_python([EXPERIMENTS / "experiment1_local.py", "--smoke", "--journal", journal,
                        "--resume"])
    assert again.returncode == 0, again.stdout
    with Journal(journal) as record:
        after = [(r["candidate"], r["descriptor_hash"], r["accuracy"]) for r in record.evaluations()]
    assert after == before


def test_experiment_refuses_to_overwrite_a_journal_without_resume(tmp_path):
    journal = tmp_path / "e1.db"
    assert run_python([EXPERIMENTS / "experiment1_local.py", "--smoke", "--journal",
                       journal]).returncode == 0
    again = run_python([EXPERIMENTS / "experiment1_local.py", "--smoke", "--journal", journal])
    assert again.returncode != 0
    assert "resume" in again.stdout


@requires_mpirun
@pytest.mark.mpi
def test_experiment3_groups_of_two_train_each_network_on_two_ranks(tmp_path):
    journal = tmp_path / "e3-groups.db"
    run = run_mpi([EXPERIMENTS / "experiment3_distributed_ga.py", "--smoke", "--group-size", "2",
                   "--journal", journal], np=3, timeout=300)
    assert run.returncode == 0 and not run.timed_out, run.output[-4000:]
    assert "stay idle" not in run.output
    summary = finished_run(journal, evaluations=4 * (2 + 1))
    assert summary["workers"] == 1 and summary["worker_ranks"] == [1]  # rank 0 only dispatches
    with Journal(journal) as record:
        evaluator = record.metadata()["evaluator"]
    assert evaluator["evaluator"] == "DistributedEvaluator" and evaluator["ranks"] == 2
