"""nord over several hosts: mpirun --hostfile across Linux network namespaces on one machine.

The ``virtual_hosts`` fixture (tests/conftest.py) makes hosts h1 .. h3, each a network
namespace with its own address on a private bridge and its own host name; Open MPI's ssh is an
agent that enters the namespace (tests/helpers/hosts.py). The ranks on a host start in the
fresh environment of a login, so what they need is passed with ``-x`` as on a cluster.
"""
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import hosts as hosts_helper
from tests.helpers import searches
from tests.mpirun import MPI_ENV, REPO, MPIRun, requires_mpirun
from tests.parallel.cluster_programs import records

pytestmark = [requires_mpirun, pytest.mark.mpi, pytest.mark.slow, pytest.mark.timeout(400)]

PASS_ON = ["--bind-to", "none", "-x", "PATH", "-x", "PYTHONPATH", "-x", "OMP_NUM_THREADS"]
LOST_HOST_BOUND = 10.0
"""Seconds from killing a host to the end of the job; measured 1.2 s here (2 cores, load 10)."""
LOST_HOST_BUDGET = 10
PROGRAM = [sys.executable, "-m"]


def on_hosts(hosts, argv, np, slots, names=None, timeout=240, more=()):
    """Run the command ``argv`` under ``mpirun -np NP --hostfile`` over ``names`` with ``slots``."""
    hostfile = hosts.hostfile(slots, names)
    command = ["mpirun", "-np", str(np), "--hostfile", str(hostfile), *PASS_ON, *more, *argv]
    env = dict(os.environ, **MPI_ENV, **hosts.mpi_env())
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    started = time.monotonic()
    try:
        output, _ = process.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        timed_out = True
    return MPIRun(process.returncode, output, time.monotonic() - started, timed_out)


def finished(run):
    assert not run.timed_out, f"hung for {run.seconds:.0f} s:\n{run.output[-4000:]}"
    assert run.returncode == 0, run.output[-6000:]
    return run


# --- where the ranks are ------------------------------------------------------------------------
@pytest.mark.parametrize("np, slots, expected_hosts, expected_local", [
    (4, [2, 1, 1], ["h1", "h1", "h2", "h3"], [0, 1, 0, 0]),
    (3, [1, 1, 1], ["h1", "h2", "h3"], [0, 0, 0]),  # the README's layout in the tests
], ids=["2-1-1", "1-1-1"])
def test_ranks_see_their_own_hosts_and_local_ranks(virtual_hosts, tmp_path, np, slots,
                                                   expected_hosts, expected_local):
    program = [*PROGRAM, "tests.parallel.cluster_programs", "where", str(tmp_path)]
    finished(on_hosts(virtual_hosts, program, np, slots))
    ranks = records(tmp_path)
    assert [r["rank"] for r in ranks] == list(range(np))
    assert [virtual_hosts.host_of(r["hostname"]) for r in ranks] == expected_hosts
    assert [r["processor"] for r in ranks] == [r["hostname"] for r in ranks]
    assert all(r["hosts_seen"] == sorted({x["hostname"] for x in ranks}) for r in ranks)
    # nord's local rank is the rank among those on the same host, as MPI itself counts it
    assert [r["local_rank"] for r in ranks] == expected_local
    assert [r["node_rank"] for r in ranks] == expected_local


# --- training across hosts ----------------------------------------------------------------------
def horovod_built():
    try:
        import horovod.torch  # noqa: F401
        return True
    except ImportError:
        return False


NO_HOROVOD = "Horovod is not built (NORD_SKIP_HOROVOD=1 at set-up)"


@pytest.mark.skipif(not horovod_built(), reason=NO_HOROVOD)
def test_horovod_trains_across_two_hosts(virtual_hosts):
    # the program checks that the parameters are identical on both ranks after training
    program = [*PROGRAM, "tests.parallel.distributed_programs", "horovod", "trained_identical"]
    run = finished(on_hosts(virtual_hosts, program, 2, [1, 1], ["h2", "h3"]))
    assert run.output.count("checks passed: trained_identical") == 2, run.output[-3000:]


def test_torch_backend_trains_across_hosts_when_told_the_interface(virtual_hosts):
    """Host names that resolve to 127.0.1.1 (Debian's default): a clear error at once, and
    with GLOO_SOCKET_IFNAME identical parameters on both hosts after training."""
    program = [*PROGRAM, "tests.parallel.distributed_programs", "torch", "trained_identical"]
    virtual_hosts.resolve_own_name(loopback=True)
    try:
        refused = on_hosts(virtual_hosts, program, 2, [1, 1], ["h2", "h3"], timeout=120)
        chosen = on_hosts(virtual_hosts, program, 2, [1, 1], ["h2", "h3"],
                          more=["-x", "GLOO_SOCKET_IFNAME=eth0"])
    finally:
        virtual_hosts.resolve_own_name(loopback=False)
    assert not refused.timed_out and refused.returncode != 0, refused.output[-3000:]
    assert "which the other hosts cannot reach" in refused.output, refused.output[-3000:]
    assert "GLOO_SOCKET_IFNAME" in refused.output
    finished(chosen)
    assert chosen.output.count("checks passed: trained_identical") == 2, chosen.output[-3000:]


# --- the README's lines -------------------------------------------------------------------------
def readme_several_machines():
    """The command lines of the README's "Several machines" block, as argument lists."""
    text = (REPO / "README.md").read_text()
    section = text.split("### Several machines", 1)[1].split("\n##", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [shlex.split(line) for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def in_the_tests(argv, hostfile, journal, np=3):
    """A README line with the hostfile, the number of ranks and a smoke size put in."""
    argv = [str(hostfile) if arg == "hostfiles/cluster" else arg for arg in argv]
    argv[argv.index("-np") + 1] = str(np)
    return searches.smoke_size(argv, journal)


README_LINES = readme_several_machines()


@pytest.fixture(scope="module")
def readme_run(virtual_hosts, tmp_path_factory):
    """Runs README line ``number`` over h1, h2, h3 (one slot each), once.

    Returns ``(argv, outcome, journal)`` of that line.
    """
    tmp = tmp_path_factory.mktemp("readme")
    hostfile = virtual_hosts.hostfile([1, 1, 1])
    env = dict(os.environ, **MPI_ENV, **virtual_hosts.mpi_env())
    done = {}

    def run(number):
        if number not in done:
            journal = tmp / f"line{number}.db"
            argv = in_the_tests(README_LINES[number], hostfile, journal)
            outcome = subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, timeout=300)
            done[number] = (argv, outcome, journal)
        return done[number]

    return run


def test_the_readme_shows_mpirun_and_horovodrun_over_a_hostfile():
    assert [Path(argv[0]).name for argv in README_LINES] == ["mpirun", "mpirun", "horovodrun"]
    assert all("hostfiles/cluster" in argv for argv in README_LINES)


@pytest.mark.parametrize("number", range(len(README_LINES)))
def test_each_readme_line_runs_over_three_hosts(readme_run, number):
    if Path(README_LINES[number][0]).name == "horovodrun" and not horovod_built():
        pytest.skip(NO_HOROVOD)
    argv, done, journal = readme_run(number)
    assert done.returncode == 0, f"{shlex.join(argv)}\n{done.stdout[-5000:]}"
    info = searches.run_info(journal)
    assert info["status"] == "finished" and info["ranks"] == 3, info


def test_groups_spanning_hosts_give_the_results_of_one_host(readme_run, tmp_path):
    number = next(n for n, line in enumerate(README_LINES) if "--group-size" in line)
    argv, done, journal = readme_run(number)
    assert done.returncode == 0, done.stdout[-5000:]
    # one slot per host: rank 0 dispatches on h1, the group of ranks 1 and 2 spans h2 and h3
    assert searches.run_info(journal)["worker_ranks"] == [1]
    one_host = tmp_path / "one-host.db"
    here = [arg for number, arg in enumerate(argv)
            if arg != "--hostfile" and argv[number - 1] != "--hostfile"]
    here[here.index("--journal") + 1] = str(one_host)
    done_here = subprocess.run(here, cwd=REPO, env=dict(os.environ, **MPI_ENV), text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=240)
    assert done_here.returncode == 0, done_here.stdout[-5000:]
    assert searches.evaluations(journal) == searches.evaluations(one_host)


# --- a lost host --------------------------------------------------------------------------------
def test_a_lost_host_ends_the_job_and_the_remaining_host_resumes(virtual_hosts, tmp_path):
    hosts, journal = virtual_hosts, tmp_path / "lost.db"
    hostfile = hosts.hostfile([2, 1], ["h1", "h2"])  # ranks 0 (dispatcher) and 1 on h1, 2 on h2
    command = ["mpirun", "-np", "3", "--hostfile", str(hostfile), *PASS_ON,
               *searches.search_command(journal, LOST_HOST_BUDGET, mode="async")]
    job = subprocess.Popen(command, cwd=REPO, env=dict(os.environ, **MPI_ENV, **hosts.mpi_env()),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while searches.count(journal) < 3:
            assert job.poll() is None, job.communicate()[0][-5000:]
            assert time.monotonic() < deadline, "the search recorded nothing in time"
            time.sleep(0.02)
        assert hosts.pids("h2"), "h2 runs no rank"
        killed = time.monotonic()
        hosts.kill("h2")
        try:
            output, _ = job.communicate(timeout=LOST_HOST_BOUND)
            while hosts.pids("h1"):  # the job has ended when its ranks on h1 are gone too
                assert time.monotonic() - killed < LOST_HOST_BOUND, "ranks on h1 outlived the job"
                time.sleep(0.02)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the job still ran {LOST_HOST_BOUND:.0f} s after its host h2 was lost")
        ended_after = time.monotonic() - killed
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.communicate()
    print(f"job ended {ended_after:.2f} s after the host was lost (bound {LOST_HOST_BOUND:.0f} s)")
    assert job.returncode != 0, output[-5000:]

    before = searches.evaluations(journal)
    told = [int(n) for n in re.findall(rf"(\d+)/{LOST_HOST_BUDGET} evaluations", output)]
    assert len(before) < LOST_HOST_BUDGET
    # Open MPI ends the remaining ranks with SIGTERM (rank 0 then records 'interrupted') or,
    # when it acts first, SIGKILL (the run is left 'running' by a writer that is gone). Only
    # the writer's own host can tell a dead writer at once; elsewhere a recent heartbeat
    # reads as alive, so the state is asked on h1
    state = ("from nord.journal import Journal, Writer\n"
             f"with Journal({str(journal)!r}) as record:\n"
             "    print('state', record.state())\n"
             "    print('writer', record.metadata().get('writer'), 'here', Writer.this_process())")
    asked = finished(on_hosts(hosts, [sys.executable, "-c", state], 1, [1], ["h1"]))
    assert re.search(r"^state (interrupted|killed)$", asked.output, re.M), asked.output
    assert len(before) >= max(told, default=0), "an evaluation rank 0 reported is not journaled"
    assert [row["sequence"] for row in before] == list(range(len(before)))

    finished(on_hosts(hosts, searches.resume_command(journal), 2, [2], ["h1"]))
    after = searches.evaluations(journal)
    assert after[:len(before)] == before, "the resumed run changed what was journaled"
    assert len(after) == LOST_HOST_BUDGET and searches.run_info(journal)["status"] == "finished"
    assert searches.retrained(before, after) == []


# --- the fixture itself -------------------------------------------------------------------------
def test_hosts_leave_nothing_behind_when_a_test_fails(tmp_path):
    reason = hosts_helper.can_make_namespaces()
    if reason is not None:
        pytest.skip(reason)
    with pytest.raises(RuntimeError, match="a failing test"):
        with hosts_helper.VirtualHosts(2, tmp_path) as hosts:
            made = list(hosts.namespaces.values())
            links = [hosts.bridge, *(hosts._veth(name) for name in hosts.names)]
            sleeper = subprocess.Popen([str(hosts.bin / "ssh"), hosts.addresses["h1"], "sleep",
                                        "600"], start_new_session=True)
            while not hosts.pids("h1"):
                assert sleeper.poll() is None, "the agent did not start the process"
                time.sleep(0.02)
            raise RuntimeError("a failing test")
    assert sleeper.wait(timeout=10) != 0  # killed with its host
    assert not any((hosts_helper.NETNS_DIR / name).exists() for name in made)
    assert not any((hosts_helper.ETC_NETNS / name).exists() for name in made)
    shown = subprocess.run([hosts_helper.IP, "-o", "link", "show"], capture_output=True,
                           text=True).stdout
    assert not [link for link in links if f" {link}:" in shown or f" {link}@" in shown]
