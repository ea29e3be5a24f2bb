"""Shared fixtures: several hosts made of network namespaces, and a single-node SLURM; tests
marked ``gpu`` are skipped, saying why, where torch sees no GPU.

Both need root. Where the tests do not run as root they are skipped with that reason; as root,
a missing program is an error (scripts/setup.sh installs them), so CI cannot skip silently.
Both fixtures remove everything they made, also when a test fails.
"""
import shutil
import tempfile

import pytest

from tests.helpers import hosts as hosts_helper
from tests.helpers import slurm as slurm_helper


def pytest_runtest_setup(item):
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
