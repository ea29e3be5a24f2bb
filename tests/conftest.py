"""What every test gets: markers that tell the truth, several hosts made of network namespaces,
and a single-node SLURM; tests marked ``gpu`` are skipped, saying why, where torch sees no GPU.

The markers (pytest.ini): a test that starts another process carries ``processes``, one that
starts mpirun carries ``mpi`` (and so counts as ``processes`` too); every test under
tests/parallel counts as ``processes``. A guard (tests/helpers/processes.py) watches the set-up,
call and tear-down of every test and fails one that starts a process its markers do not allow,
naming the marker to add, so ``make test-fast`` (``-m "not processes"``) stays in-process.

The hosts and SLURM need root. Where the tests do not run as root they are skipped with that
reason; as root, a missing program is an error (scripts/setup.sh installs them), so CI cannot
skip silently. Both fixtures remove everything they made, also when a test fails.
"""
import collections
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.helpers import hosts as hosts_helper
from tests.helpers import processes
from tests.helpers import slurm as slurm_helper

PARALLEL = Path(__file__).parent / "parallel"
SHIMS_VARIABLE = "NORD_TEST_MPI_SHIMS"
_made_shims = pytest.StashKey[str]()
_mpi_log = pytest.StashKey[Path]()


def pytest_configure(config):
    # One folder of mpirun shims for the whole run (xdist's workers inherit it with PATH);
    # each process logs to its own file, read by its guard after each test phase.
    folder = os.environ.get(SHIMS_VARIABLE)
    if folder is None or not Path(folder).is_dir():
        folder = tempfile.mkdtemp(prefix="nord-test-mpi-shims-")
        processes.install_mpi_shims(Path(folder))
        os.environ[SHIMS_VARIABLE] = folder
        config.stash[_made_shims] = folder
    log = Path(folder) / f"mpi-starts-{os.getpid()}.log"
    os.environ[processes.MPI_LOG_VARIABLE] = str(log)
    config.stash[_mpi_log] = log


def pytest_unconfigure(config):
    folder = config.stash.get(_made_shims, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(SHIMS_VARIABLE, None)
        os.environ["PATH"] = os.pathsep.join(
            entry for entry in os.environ.get("PATH", "").split(os.pathsep) if entry != folder)



def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("processes") is None and (
                item.get_closest_marker("mpi") is not None or PARALLEL in item.path.parents):
            item.add_marker("processes")
    _longest_modules_first(items)


def _longest_modules_first(items):
    """Modules in order of how many of their tests start processes (seconds each, where an
    in-process test takes milliseconds; GPU tests, skipped without one, do not count), the order of the files otherwise: xdist hands a
    module to a worker whole, so the long ones go out first and both workers end on short
    ones instead of one waiting for the other. A module's tests keep their order."""
    starting = collections.Counter(item.path for item in items
                                   if item.get_closest_marker("processes") is not None
                                   and item.get_closest_marker("gpu") is None)
    place = {}
    for index, item in enumerate(items):
        place.setdefault(item.path, index)
    items.sort(key=lambda item: (-starting[item.path], place[item.path]))


def _guarded(item):
    markers = {marker.name for marker in item.iter_markers()}
    guard = processes.ProcessGuard(processes.allowed_by(markers),
                                   mpi_log=item.config.stash.get(_mpi_log, None))
    error = None
    with guard:
        try:
            result = yield
        except BaseException as caught:  # noqa: B036 -- re-raised below unless the guard fails the test
            error = caught
    if guard.violations:
        pytest.fail(f"{item.nodeid} " + "\n".join(guard.violations), pytrace=False)
    if error is not None:
        raise error
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    _skip_gpu_tests_without_a_gpu(item)
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    return (yield from _guarded(item))


def _skip_gpu_tests_without_a_gpu(item):
    if item.get_closest_marker("gpu") is not None:
        import torch  # here, not at the top: only a gpu test pays for it before it runs
        if not torch.cuda.is_available():
            pytest.skip(f"needs CUDA: torch {torch.__version__} sees no GPU on this machine "
                        "(README, 'On a GPU', says how to run these tests on one)")


@pytest.fixture(scope="module")
def virtual_hosts(tmp_path_factory):
    """Three hosts, h1 .. h3, on a private bridge (tests.helpers.hosts.VirtualHosts)."""
    reason = hosts_helper.can_make_namespaces()
    if reason is not None:
        pytest.skip(reason)
    with hosts_helper.VirtualHosts(3, tmp_path_factory.mktemp("hosts")) as hosts:
        yield hosts


@pytest.fixture(scope="module")
def slurm_cluster():
    """munged, slurmctld and slurmd of a one-node SLURM (tests.helpers.slurm.SlurmCluster)."""
    reason = slurm_helper.cannot_run()
    if reason is not None:
        pytest.skip(reason)
    missing = slurm_helper.missing_programs()
    if missing:
        pytest.fail(f"SLURM programs {missing} are missing; scripts/setup.sh installs them "
                    "(apt-get install slurmctld slurmd slurm-client munge)", pytrace=False)
    work = tempfile.mkdtemp(prefix=slurm_helper.workdir_prefix())
    try:
        with slurm_helper.SlurmCluster(work) as cluster:
            yield cluster
    finally:
        shutil.rmtree(work, ignore_errors=True)
