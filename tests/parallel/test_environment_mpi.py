"""nord.parallel.environment under a real mpirun, at 2 and 3 ranks.

Each test starts ``mpirun -np N python -m tests.parallel.environment_programs ...`` and checks
what the ranks reported; expectations are computed from N. A job that reports for several
tests (the world attributes, the output markers) runs once per N and is shared.
A 2-rank job takes about 1-3 s here.
"""
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.mpirun import MPI_ENV, REPO, requires_mpirun, run_mpi

pytestmark = [requires_mpirun, pytest.mark.mpi]

PROGRAM = ["-m", "tests.parallel.environment_programs"]
JOB_TIMEOUT = 60  # seconds; a healthy job ends in a few
ABORT_BOUND = 30  # seconds within which a job with a failed rank must be over
SIZES = [2, 3]


class Job:
    """The outcome of one mpirun job: exit code, merged output, and each rank's JSON record."""

    def __init__(self, run, records):
        self.returncode = run.returncode
        self.output = run.output
        self.seconds = run.seconds
        self.timed_out = run.timed_out
        self.records = records

    def describe(self):
        return f"exit {self.returncode} after {self.seconds:.1f} s, output:\n{self.output}"


@functools.lru_cache(maxsize=None)
def launch(np, *args, env_items=()):
    """Run a program with OUTDIR as its first argument after the command; cached per arguments."""
    outdir = tempfile.mkdtemp(prefix="nord-env-test-")
    try:
        flags = [a for a in args if a.startswith("--")]
        rest = [a for a in args if not a.startswith("--")]
        command, *more = rest
        run = run_mpi([*PROGRAM, *flags, command, outdir, *more], np=np, timeout=JOB_TIMEOUT,
                      env=dict(env_items))
        records = {}
        for path in sorted(Path(outdir).glob("rank-*.json")):
            record = json.loads(path.read_text())
            records[record["rank"]] = record
        return Job(run, records)
    finally:
        shutil.rmtree(outdir, ignore_errors=True)


@functools.lru_cache(maxsize=None)
def launch_plain(np, *args):
    """Run a program that reports through its output only; cached per arguments."""
    return Job(run_mpi([*PROGRAM, *args], np=np, timeout=JOB_TIMEOUT), {})


def finished(job):
    assert job.returncode == 0 and not job.timed_out, job.describe()
    return job


def records_of(np, *args, **kwargs):
    job = finished(launch(np, *args, **kwargs))
    assert sorted(job.records) == list(range(np)), job.describe()
    return [job.records[rank] for rank in range(np)]


# --- world --------------------------------------------------------------------------------------
@pytest.mark.parametrize("np", SIZES)
def test_rank_and_size(np):
    assert ([(r["rank"], r["size"], r["comm_size"]) for r in records_of(np, "world")] ==
        [(rank, np, np) for rank in range(np)])


@pytest.mark.parametrize("np", SIZES)
def test_only_rank_zero_is_root(np):
    assert [r["is_root"] for r in records_of(np, "world")] == [True] + [False] * (np - 1)


@pytest.mark.parametrize("np", SIZES)
def test_local_rank_on_one_host_is_the_rank(np):
    assert [r["local_rank"] for r in records_of(np, "world")] == list(range(np))


@pytest.mark.parametrize("np", SIZES)
def test_local_rank_found_through_mpi_without_the_launcher_variable(np):
    records = records_of(np, "--no-local-rank-variable", "world")
    assert [r["local_rank"] for r in records] == list(range(np))


@pytest.mark.parametrize("np", SIZES)
def test_mpi_started_under_mpirun(np):
    assert all(r["uses_mpi"] for r in records_of(np, "world"))


@pytest.mark.parametrize("np", SIZES)
def test_bcast_gives_roots_object_to_every_rank(np):
    expected = {"size": np, "squares": [r * r for r in range(np)]}
    assert [r["bcast"] for r in records_of(np, "world")] == [expected] * np


@pytest.mark.parametrize("np", SIZES)
def test_bcast_from_the_last_rank(np):
    assert {r["bcast_from_last"] for r in records_of(np, "world")} == {f"from rank {np - 1}"}


@pytest.mark.parametrize("np", SIZES)
def test_gather_collects_in_rank_order_on_root_only(np):
    assert ([r["gather"] for r in records_of(np, "world")] ==
        [[10 * rank for rank in range(np)]] + [None] * (np - 1))


@pytest.mark.parametrize("np", SIZES)
def test_allgather_gives_every_rank_the_list(np):
    expected = [rank ** 2 for rank in range(np)]
    assert [r["allgather"] for r in records_of(np, "world")] == [expected] * np


@pytest.mark.parametrize("np", SIZES)
def test_a_failure_on_one_rank_is_a_refusal_on_every_rank(np):
    """on_every_rank: the failing rank keeps its own error, the others get its message."""
    records = [r["every_rank"] for r in records_of(np, "world")]
    assert [(r["value"], r["error"]) for r in records] == [(3 * rank, None) for rank in range(np)]
    message = f"rank {np - 1} cannot read its file"
    assert [(r["failed_value"], r["failed"]) for r in records] == (
        [(None, ["NordError", message])] * (np - 1) + [(None, ["ValueError", message])])


@pytest.mark.parametrize("np", SIZES)
def test_default_is_one_group_of_all_ranks(np):
    records = records_of(np, "world")
    assert ([(r["n_groups"], r["group_roots"], r["group"]["members"]) for r in records] ==
        [(1, [0], list(range(np)))] * np)


def test_hostfile_localhost_runs_two_ranks():
    hostfile = str(REPO / "hostfiles" / "localhost")
    records = records_of(2, "world", env_items=(("OMPI_MCA_orte_default_hostfile", hostfile),))
    assert [r["size"] for r in records] == [2, 2]


# --- output -------------------------------------------------------------------------------------
def marker_lines(output, marker):
    return [line for line in output.splitlines() if marker in line]


@pytest.mark.parametrize("np", SIZES)
def test_log_is_written_once_by_rank_zero(np):
    job = finished(launch_plain(np, "output"))
    lines = marker_lines(job.output, "log-marker")
    assert len(lines) == 1, job.describe()
    assert lines[0].endswith("INFO nord: log-marker from rank 0"), job.describe()


@pytest.mark.parametrize("np", SIZES)
def test_print_is_written_once_by_rank_zero(np):
    job = finished(launch_plain(np, "output"))
    assert marker_lines(job.output, "print-marker") == ["print-marker from rank 0"], job.describe()


@pytest.mark.parametrize("np", SIZES)
def test_ordered_print_is_in_rank_order(np):
    # the ranks reach print_ordered last rank first (staggered sleeps)
    job = finished(launch_plain(np, "output"))
    assert (marker_lines(job.output, "ordered-marker") ==
        [f"[rank {rank}] ordered-marker {rank}" for rank in range(np)]), job.describe()


@pytest.mark.parametrize("np", SIZES)
def test_status_has_one_line_per_rank_in_order(np):
    job = finished(launch_plain(np, "output"))
    lines = marker_lines(job.output, "status-marker")
    assert ([re.match(r"\[rank (\d+)/(\d+)\]", line).groups() for line in lines] ==
        [(str(rank), str(np)) for rank in range(np)]), job.describe()


# --- groups -------------------------------------------------------------------------------------
def expected_groups(np, group_size, dedicated):
    """The layout, written out independently of nord's helper."""
    workers = list(range(1 if dedicated else 0, np))
    k = len(workers) if group_size is None else group_size
    return [workers[i:i + k] for i in range(0, len(workers), k)]


GROUP_CASES = [  # (np, group_size, dedicated_root)
    (2, 1, False), (3, 1, False),
    (2, 2, False), (3, 2, False),
    (2, None, False), (3, 3, False),
    (2, None, True), (3, None, True), (3, 1, True),
]


def group_records(np, group_size, dedicated):
    return records_of(np, "groups", "none" if group_size is None else str(group_size),
                      "dedicated" if dedicated else "no-dedicated")


@pytest.mark.parametrize("np, group_size, dedicated", GROUP_CASES)
def test_groups_follow_the_layout(np, group_size, dedicated):
    layout = expected_groups(np, group_size, dedicated)
    for record in group_records(np, group_size, dedicated):
        assert record["layout"] == layout
        assert record["n_groups"] == len(layout)
        assert record["group_roots"] == [members[0] for members in layout]


@pytest.mark.parametrize("np, group_size, dedicated", GROUP_CASES)
def test_each_rank_is_in_its_group(np, group_size, dedicated):
    layout = expected_groups(np, group_size, dedicated)
    for record in group_records(np, group_size, dedicated):
        rank, group = record["rank"], record["group"]
        if dedicated and rank == 0:
            assert group is None
            continue
        index = next(i for i, members in enumerate(layout) if rank in members)
        members = layout[index]
        assert (group["index"], group["members"], group["rank"], group["size"], group["is_root"],
                group["root"]) == (index, members, members.index(rank), len(members),
                                   rank == members[0], members[0])


@pytest.mark.parametrize("np, group_size, dedicated", GROUP_CASES)
def test_group_communicator_spans_the_group(np, group_size, dedicated):
    for record in group_records(np, group_size, dedicated):
        group = record["group"]
        if group is not None:
            assert group["comm_size"] == group["size"]
            assert group["allgather"] == group["members"]


@pytest.mark.parametrize("np, group_size, dedicated", GROUP_CASES)
def test_group_bcast_comes_from_the_group_root(np, group_size, dedicated):
    for record in group_records(np, group_size, dedicated):
        group = record["group"]
        if group is not None:
            assert group["bcast"] == f"group {group['index']} root {group['root']}"


def test_a_second_environment_in_the_same_job_makes_new_groups():
    records = records_of(3, "twice")
    assert ([(r["first"]["members"], r["second"]["members"]) for r in records] ==
        [([rank], [0, 1, 2]) for rank in range(3)])


def test_three_ranks_in_groups_of_two_leave_a_group_of_one():
    sizes = [r["group"]["size"] for r in group_records(3, 2, False)]
    assert sizes == [2, 2, 1]


# --- failure ------------------------------------------------------------------------------------
def failed(np, rank, how):
    job = launch_plain(np, "fail", str(rank), how)
    assert not job.timed_out and job.seconds < ABORT_BOUND, job.describe()
    assert job.returncode != 0, job.describe()
    assert "went on after the failure" not in job.output, job.describe()
    return job


@pytest.mark.parametrize("np, rank", [(3, 1), (3, 2), (2, 1)])
def test_exception_on_a_rank_aborts_the_job_with_its_traceback(np, rank):
    job = failed(np, rank, "raise")
    assert f"[rank {rank}] Traceback (most recent call last):" in job.output, job.describe()
    assert f"[rank {rank}] ValueError: deliberate failure on rank {rank}" in job.output, (
        job.describe())


def test_exception_on_the_root_aborts_the_job():
    job = failed(3, 0, "raise")
    assert "[rank 0] ValueError: deliberate failure on rank 0" in job.output, job.describe()


def test_abort_uses_mpi_abort_on_comm_world():
    job = failed(3, 1, "raise")
    assert "aborting all 3 ranks with MPI_Abort(1)" in job.output, job.describe()


def test_exception_outside_with_is_caught_by_the_excepthook():
    job = failed(3, 2, "hook")
    assert "[rank 2] ValueError: deliberate failure on rank 2" in job.output, job.describe()


def test_sys_exit_with_a_code_ends_the_job_with_it():
    assert failed(3, 1, "exit3").returncode == 3


def test_keyboard_interrupt_ends_the_job():
    job = failed(3, 1, "interrupt")
    assert job.returncode == 130 and "[rank 1] interrupted" in job.output, job.describe()


def test_sigterm_on_a_rank_ends_the_job():
    failed(3, 1, "sigterm")


def test_invalid_groups_end_the_job_without_hanging():
    job = launch_plain(3, "config-error")
    assert not job.timed_out and job.returncode != 0, job.describe()
    assert "ConfigurationError: a group size of 4 (--group-size, group_size=) is larger than the 3 ranks" in job.output, (
        job.describe())


# --- without mpi4py, and MPI forced outside mpirun ----------------------------------------------
def test_without_mpi4py_every_rank_runs_alone_and_warns():
    job = finished(launch(2, "--no-mpi4py", "world"))
    # both ranks believe they are rank 0 of 1 and write the same file
    assert (job.records[0]["size"], job.records[0]["uses_mpi"]) == (1, False), job.describe()
    assert job.output.count("mpi4py is not installed") == 2, job.describe()


def test_use_mpi_true_outside_mpirun_is_an_mpi_singleton():
    code = ("from nord.parallel.environment import Environment\n"
            "with Environment(use_mpi=True) as env:\n"
            "    print(env.size, env.comm is not None, env.group.comm.Get_size())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **MPI_ENV}, cwd=REPO, timeout=JOB_TIMEOUT)
    assert done.returncode == 0 and done.stdout.split() == ["1", "True", "1"], done.stderr
