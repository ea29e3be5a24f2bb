"""Examples are tests: every experiment script runs at its --smoke size (under mpirun where
it is meant to), and its journal is a finished run that `nord report` can compare."""
import shutil
import subprocess
import sys

import pytest

from nord.errors import JournalError
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


@pytest.fixture(scope="module")
def experiment1(tmp_path_factory):
    """The journal of experiment 1 run once at its --smoke size, which tests copy before
    running anything against it."""
    journal = tmp_path_factory.mktemp("experiment1") / "e1.db"
    done = run_python([EXPERIMENTS / "experiment1_local.py", "--smoke", "--journal", journal])
    assert done.returncode == 0, done.stdout
    return journal


def copy_of(journal, tmp_path):
    copy = tmp_path / "e1.db"
    shutil.copyfile(journal, copy)
    return copy


def test_paper_examples_smoke():
    done = run_python([EXPERIMENTS / "paper_examples.py", "--smoke"])
    assert done.returncode == 0, done.stdout
    assert done.stdout.count(" ok ") == 3 and "failed" in done.stdout and "ShapeError" in done.stdout


def test_experiment1_local_smoke(experiment1):
    summary = finished_run(experiment1, evaluations=4 * (2 + 1))
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
        assert record.metadata()["evaluator"]["ranks_per_network"] == 2  # on both ranks


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


def test_experiment_resume_continues_a_finished_run(tmp_path, experiment1):
    journal = copy_of(experiment1, tmp_path)
    with Journal(journal) as record:
        before = [(r["candidate"], r["key"], r["accuracy"]) for r in record.evaluations()]
    again = run_python([EXPERIMENTS / "experiment1_local.py", "--smoke", "--journal", journal,
                        "--resume"])
    assert again.returncode == 0, again.stdout
    assert ("holds a finished run in which its budget of 12 evaluations is used (12 "
            "evaluations): nothing to do") in again.stdout
    with Journal(journal) as record:
        after = [(r["candidate"], r["key"], r["accuracy"]) for r in record.evaluations()]
        assert record.metadata()["resumed"] == 0
    assert after == before


def test_experiment_reads_mirror_files_with_their_checksums(tmp_path):
    from tests.helpers.datafiles import md5, write_mnist
    raw = tmp_path / "data" / "MNIST" / "raw"
    _, names = write_mnist(raw, n_train=60, n_test=20)
    sums = tmp_path / "mirror.md5"
    sums.write_text("".join(f"{md5(raw / name)}  {name}\n" for name in names))
    journal = tmp_path / "e1.db"
    done = run_python([EXPERIMENTS / "experiment1_local.py", "--smoke", "--journal", journal,
                       "--dataset", "mnist", "--data-root", tmp_path / "data",
                       "--data-checksums", sums])
    assert done.returncode == 0, done.stdout
    finished_run(journal, evaluations=12)
    with Journal(journal) as record:
        # the run records the checksums themselves, not the path of a file that may change
        assert record.metadata()["config"]["data_checksums"] == {
            name: md5(raw / name) for name in names}


def test_experiment_refuses_to_overwrite_a_journal_without_resume(tmp_path, experiment1):
    journal = copy_of(experiment1, tmp_path)
    before = journal.read_bytes()
    again = run_python([EXPERIMENTS / "experiment1_local.py", "--smoke", "--journal", journal])
    assert again.returncode == 2
    lines = again.stdout.strip().splitlines()
    assert len(lines) == 1 and "already holds a run" in lines[0] and "--resume" in lines[0]
    assert journal.read_bytes() == before


@requires_mpirun
@pytest.mark.mpi
def test_a_refusal_under_mpirun_is_one_line_and_ends_every_rank(tmp_path, experiment1):
    journal = copy_of(experiment1, tmp_path)
    before = journal.read_bytes()
    run = run_mpi([EXPERIMENTS / "experiment3_distributed_ga.py", "--smoke", "--journal",
                   journal], np=3, timeout=120)
    assert not run.timed_out and run.returncode == 2
    ours = [line for line in run.output.splitlines() if "experiment3" in line]
    assert len(ours) == 1 and "already holds a run" in ours[0], run.output
    assert "Traceback" not in run.output and "MPI_Abort" not in run.output
    assert journal.read_bytes() == before


def legs_and_epochs(journal):
    with Journal(journal) as record:
        return record.legs(), record.epochs(), record.metadata()


@requires_mpirun
@pytest.mark.mpi
@pytest.mark.slow
def test_experiment2_with_successive_halving_pauses_data_parallel_candidates(tmp_path):
    """Sync successive halving, every network trained by both ranks together: a paused
    candidate's checkpoint is written once and read by both ranks when it is promoted."""
    journal = tmp_path / "e2-sha.db"
    run = run_mpi([EXPERIMENTS / "experiment2_data_parallel.py", "--smoke", "--journal", journal,
                   "--scheduler", "sha", "--max-epochs", "3"], np=2, timeout=300)
    assert run.returncode == 0 and not run.timed_out, run.output[-4000:]
    finished_run(journal, evaluations=4 * (2 + 1))
    legs, epochs, meta = legs_and_epochs(journal)
    assert meta["scheduler"]["scheduler"] == "sha"
    assert meta["evaluator"]["ranks_per_network"] == 2
    promoted = [leg for leg in legs if leg["start_epochs"] > 0 and leg["status"] == "ok"]
    assert promoted and all(leg["result"]["metrics"]["epochs_resumed"] == leg["start_epochs"]
                            for leg in promoted)
    assert len(epochs) == sum(leg["target_epochs"] - leg["start_epochs"] for leg in legs
                              if leg["status"] == "ok")
    assert not (tmp_path / "e2-sha.db.checkpoints").exists()


@requires_mpirun
@pytest.mark.mpi
@pytest.mark.slow
def test_experiment3_with_asha_resumes_groups_of_two_from_checkpoints(tmp_path):
    journal = tmp_path / "e3-asha.db"
    run = run_mpi([EXPERIMENTS / "experiment3_distributed_ga.py", "--smoke", "--mode", "async",
                   "--group-size", "2", "--scheduler", "asha", "--max-epochs", "3",
                   "--journal", journal], np=3, timeout=300)
    assert run.returncode == 0 and not run.timed_out, run.output[-4000:]
    finished_run(journal, evaluations=4 * (2 + 1))
    legs, epochs, meta = legs_and_epochs(journal)
    assert meta["evaluator"]["evaluator"] == "DistributedEvaluator"
    assert {leg["worker_rank"] for leg in legs} == {1}
    assert any(leg["start_epochs"] > 0 for leg in legs)
    assert all(leg["ended_event"] is not None for leg in legs)


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
    assert evaluator["evaluator"] == "DistributedEvaluator" and evaluator["ranks_per_network"] == 2


def _evaluations_so_far(path) -> int:
    """Evaluations a running search has journaled (0 while its journal is being created)."""
    try:
        with Journal(path) as journal:
            return journal.count()
    except JournalError as error:
        if "does not exist" in str(error) or "SQLite database without tables" in str(error):
            return 0
        raise


@requires_mpirun
@pytest.mark.mpi
@pytest.mark.timeout(600)
def test_sigterm_to_mpirun_ends_the_run_cleanly_and_resume_finishes_it(tmp_path):
    import os
    import signal
    import time

    journal = tmp_path / "run.db"
    command = ["mpirun", "-np", "3", "--oversubscribe", "--bind-to", "none", sys.executable,
               "-m", "nord", "run", "--evaluation", "distributed", "--mode", "async",
               "--algorithm", "random", "--budget", "200", "--epochs", "2", "--threads", "1",
               "--space-params", '{"channels": [1, 4], "kernel_size": [1, 3]}',
               "--journal", str(journal)]
    process = subprocess.Popen(command, cwd=REPO, env=dict(os.environ, **MPI_ENV), text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    deadline = time.monotonic() + 180
    while _evaluations_so_far(journal) < 4:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no evaluations in time"
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode != 0
    ours = [line for line in err.splitlines() if line.strip()]
    assert len(ours) == 1 and "interrupted by SIGTERM" in ours[0], err
    assert f"nord resume {journal}" in ours[0]
    with Journal(journal) as record:
        assert record.state() == "interrupted"
        before = [row["candidate"] for row in record.evaluations()]
        # a budget below what the journal holds (its candidates in flight included) is refused
        budget = len(record.candidates()) + 2
    resumed = run_mpi(["-m", "nord", "run", "--evaluation", "distributed", "--mode",
                       "async", "--algorithm", "random", "--budget", budget, "--epochs", "2",
                       "--threads", "1", "--space-params",
                       '{"channels": [1, 4], "kernel_size": [1, 3]}', "--journal", journal,
                       "--resume"], np=3, timeout=300)
    assert resumed.returncode == 0, resumed.output[-3000:]
    with Journal(journal) as record:
        rows = record.evaluations()
        assert record.state() == "finished" and len(rows) == budget
        assert [row["candidate"] for row in rows][:len(before)] == before
