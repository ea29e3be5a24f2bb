"""The marker guard (tests/helpers/processes.py, wired in tests/conftest.py): an unmarked test
that starts a process fails, naming the marker to add. The refusals here start nothing (the
guard refuses before the fork), so these tests run in-process; the few that let a process
start carry ``processes`` themselves."""
import concurrent.futures
import ctypes
import multiprocessing
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import processes
from tests.helpers.processes import ProcessGuard, UnmarkedProcessStart, allowed_by
from tests.mpirun import requires_mpirun, run_mpi

REPO = Path(__file__).resolve().parents[2]
UNMARKED = allowed_by([])


def refused(start, allowed=UNMARKED) -> ProcessGuard:
    """Run ``start`` under a guard, expect the refusal, return the guard."""
    with ProcessGuard(allowed) as guard:
        with pytest.raises(UnmarkedProcessStart):
            start()
    return guard


def test_an_unmarked_subprocess_is_refused_before_it_runs_and_named(tmp_path):
    made = tmp_path / "made"
    guard = refused(lambda: subprocess.run(["touch", str(made)]))
    assert not made.exists()
    assert len(guard.violations) == 1
    assert "touch" in guard.violations[0]
    assert "@pytest.mark.processes" in guard.violations[0]


@pytest.mark.parametrize("start", [
    lambda: subprocess.check_output("echo hi", shell=True),
    lambda: os.popen("echo hi").read(),
    lambda: os.system("true"),
    lambda: os.fork(),
    lambda: os.posix_spawn("/bin/true", ["true"], dict(os.environ)),
], ids=["shell", "popen", "system", "fork", "posix_spawn"])
def test_every_way_into_a_process_is_refused(start):
    guard = refused(start)
    assert "'processes' marker" in guard.violations[0]


@pytest.mark.parametrize("method", ["spawn", "fork", "forkserver"])
def test_multiprocessing_is_refused_whatever_its_start_method(method):
    context = multiprocessing.get_context(method)
    guard = refused(lambda: context.Process(target=print).start())
    assert "multiprocessing process" in guard.violations[0]


def test_a_process_pool_is_refused_when_it_starts_its_workers():
    def submit():
        with concurrent.futures.ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("spawn")) as pool:
            pool.submit(print).result()
    assert refused(submit).violations


def test_mpirun_needs_the_mpi_marker_even_where_processes_are_allowed():
    guard = refused(lambda: run_mpi(["-c", "pass"], np=2), allowed=allowed_by(["processes"]))
    assert "mpirun" in guard.violations[0]
    assert "@pytest.mark.mpi" in guard.violations[0]


def test_mpirun_inside_a_shell_command_needs_the_mpi_marker():
    guard = refused(lambda: subprocess.run("cd /tmp && mpirun -np 2 true", shell=True),
                    allowed=allowed_by(["processes"]))
    assert "@pytest.mark.mpi" in guard.violations[0]


def test_a_swallowed_refusal_is_still_recorded():
    with ProcessGuard(UNMARKED) as guard:
        try:
            subprocess.run(["true"])
        except Exception:  # as library code that tolerates a failed start would
            pass
    assert len(guard.violations) == 1


def test_the_markers_decide_what_is_allowed():
    assert allowed_by([]) == frozenset()
    assert allowed_by(["slow", "processes"]) == {"processes"}
    assert allowed_by(["mpi"]) == {"mpi", "processes"}
    with ProcessGuard(allowed_by(["processes"])) as guard:
        guard.check(["true"])  # allowed: no raise
        guard.check([sys.executable, "-c", "pass"])
    assert guard.violations == []
    assert processes.needed_marker(["/usr/bin/mpirun", "-np", "2"]) == "mpi"
    assert processes.needed_marker("horovodrun -np 2 python x.py") == "mpi"
    assert processes.needed_marker(["python", "mpirun_notes.txt"]) == "processes"


class _RunsCode:
    def __reduce__(self):
        return (os.system, ("true",))


def test_a_pickle_that_names_os_system_can_still_be_written():
    with ProcessGuard(UNMARKED) as guard:
        assert b"system" in pickle.dumps(_RunsCode())
    assert guard.violations == []


def test_the_guard_puts_back_what_it_replaced():
    before = (os.fork, os.system, os.posix_spawn, subprocess.Popen._execute_child,
              multiprocessing.process.BaseProcess.start)
    with ProcessGuard(UNMARKED):
        assert os.fork is not before[0]
    assert (os.fork, os.system, os.posix_spawn, subprocess.Popen._execute_child,
            multiprocessing.process.BaseProcess.start) == before


def test_a_test_marked_mpi_is_left_alone():
    before = (os.fork, subprocess.Popen._execute_child)
    with ProcessGuard(allowed_by(["mpi"])):
        assert (os.fork, subprocess.Popen._execute_child) == before


@pytest.mark.processes
def test_a_child_that_c_code_forked_is_seen_when_the_phase_ends():
    libc = ctypes.PyDLL(None)  # PyDLL keeps the GIL: the child only calls _exit
    with ProcessGuard(UNMARKED) as guard:
        pid = libc.fork()
        if pid == 0:
            libc._exit(0)
    os.waitpid(pid, 0)
    assert len(guard.violations) == 1
    assert "a child process" in guard.violations[0]


@pytest.mark.processes
def test_the_shims_log_mpirun_started_below_the_test(tmp_path, monkeypatch):
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    fake = bin_folder / "mpirun"
    fake.write_text("#!/bin/sh\necho fake mpirun \"$@\"\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_folder}{os.pathsep}{os.environ['PATH']}")
    assert processes.install_mpi_shims(tmp_path / "shims", ["mpirun"]) == ["mpirun"]
    log = tmp_path / "mpi.log"
    monkeypatch.setenv(processes.MPI_LOG_VARIABLE, str(log))
    script = tmp_path / "launch.sh"  # mpirun out of the guard's sight: inside a script
    script.write_text("#!/bin/sh\nmpirun -np 2 hostname\n")
    script.chmod(0o755)
    with ProcessGuard(allowed_by(["processes"]), mpi_log=log) as guard:
        output = subprocess.run([str(script)], capture_output=True, text=True).stdout
    assert output == "fake mpirun -np 2 hostname\n"  # the real program ran, arguments intact
    assert len(guard.violations) == 1
    assert "mpirun -np 2 hostname" in guard.violations[0]
    assert "@pytest.mark.mpi" in guard.violations[0]


CONFTEST = "from tests.conftest import *  # noqa: F401,F403 -- the suite's own hooks\n"
INI = "[pytest]\nmarkers =\n    processes: starts other processes\n"


def test_the_suite_fails_an_unmarked_test_that_starts_a_process(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO))
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)
    pytester.makepyfile(test_inner=textwrap.dedent("""
        import subprocess

        def test_starts_one():
            subprocess.run(["true"])

        def test_hides_the_start():
            try:
                subprocess.run(["true"])
            except Exception:
                pass

        def test_in_process():
            assert 1 + 1 == 2
    """))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "*test_starts_one started a process (true) without the 'processes' marker: "
        "add @pytest.mark.processes*"])


@pytest.mark.processes
def test_the_suite_lets_a_marked_test_start_a_process(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO))
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)
    pytester.makepyfile(test_inner=textwrap.dedent("""
        import subprocess
        import pytest

        @pytest.mark.processes
        def test_starts_one():
            assert subprocess.run(["true"]).returncode == 0
    """))
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


@requires_mpirun
@pytest.mark.mpi
def test_a_marked_mpi_test_runs_mpirun_through_the_shim(tmp_path):
    """The shims on PATH run the real mpirun: one rank per -np, arguments intact."""
    program = "import os, sys; open(os.path.join(sys.argv[1], os.environ['OMPI_COMM_WORLD_RANK']), 'w')"
    run = run_mpi(["-c", program, tmp_path], np=2)
    assert run.returncode == 0, run.output
    assert sorted(path.name for path in tmp_path.iterdir()) == ["0", "1"]
