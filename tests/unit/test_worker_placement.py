"""Which device each worker process takes, how many workers a machine hosts, admission by
memory and the MPS decision: pure rules, tested without a GPU."""
import os

import pytest

from nord.errors import ConfigurationError, NordError
from nord.parallel import mps
from nord.parallel.admission import admits, check_headroom
from nord.parallel.placement import (MAX_WORKERS_PER_GPU, check_worker_count, gpu_for_rank,
                                     worker_devices)

GB = 10 ** 9


# --- devices --------------------------------------------------------------------------------
@pytest.mark.parametrize("workers,gpus", [(1, 1), (4, 2), (5, 2), (3, 4), (8, 1)])
def test_workers_take_the_gpus_round_robin_as_mpi_ranks_do(workers, gpus):
    devices = worker_devices(workers, "cuda", gpus)
    assert devices == [f"cuda:{gpu_for_rank(index, gpus)}" for index in range(workers)]
    counts = [devices.count(f"cuda:{gpu}") for gpu in range(gpus)]
    assert max(counts) - min(counts) <= 1 and sum(counts) == workers


def test_auto_takes_the_gpus_when_there_are_some_and_the_cpu_otherwise():
    assert worker_devices(3, "auto", 2) == ["cuda:0", "cuda:1", "cuda:0"]
    assert worker_devices(3, "auto", 0) == ["cpu"] * 3


def test_a_named_gpu_or_the_cpu_holds_every_worker():
    assert worker_devices(3, "cuda:1", 2) == ["cuda:1"] * 3
    assert worker_devices(2, "cpu", 4) == ["cpu", "cpu"]


def test_cuda_without_a_visible_gpu_is_refused():
    with pytest.raises(ConfigurationError, match="none is visible"):
        worker_devices(2, "cuda", 0)


# --- how many workers -------------------------------------------------------------------------
@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_a_worker_count_that_is_not_a_positive_integer_is_refused(workers):
    with pytest.raises(ConfigurationError, match="integer >= 1"):
        check_worker_count(workers, cpus=4)


def test_more_workers_than_cpus_is_refused_with_the_largest_allowed():
    check_worker_count(4, cpus=4)
    with pytest.raises(ConfigurationError, match="--workers 4 or fewer"):
        check_worker_count(5, cpus=4)


def test_more_workers_per_gpu_than_the_limit_is_refused():
    check_worker_count(MAX_WORKERS_PER_GPU * 2, cpus=1000, gpus=2)
    with pytest.raises(ConfigurationError, match=f"--workers {MAX_WORKERS_PER_GPU * 2} or fewer"):
        check_worker_count(MAX_WORKERS_PER_GPU * 2 + 1, cpus=1000, gpus=2)


# --- admission ----------------------------------------------------------------------------------
def test_a_candidate_starts_when_the_running_estimates_leave_room():
    assert admits(3 * GB, [2 * GB, 4 * GB], capacity=10 * GB, headroom=0.1)    # 9 <= 9
    assert not admits(3 * GB, [2 * GB, 5 * GB], capacity=10 * GB, headroom=0.1)


def test_the_headroom_is_kept_out_of_the_capacity():
    assert admits(4 * GB, [4 * GB], capacity=10 * GB, headroom=0.2)            # 8 <= 8
    assert not admits(4 * GB, [4 * GB], capacity=10 * GB, headroom=0.25)


def test_a_candidate_alone_on_its_device_always_starts():
    assert admits(50 * GB, [], capacity=10 * GB)


def test_unknown_estimates_or_capacity_hold_nothing_back():
    assert admits(None, [9 * GB], capacity=10 * GB)
    assert admits(3 * GB, [None, None], capacity=4 * GB)
    assert not admits(3 * GB, [None, 2 * GB], capacity=4 * GB)
    assert admits(100 * GB, [100 * GB], capacity=None)


@pytest.mark.parametrize("headroom", [-0.1, 1.0, "0.1", True])
def test_a_headroom_outside_zero_to_one_is_refused(headroom):
    with pytest.raises(ConfigurationError, match=r"\[0, 1\)"):
        check_headroom(headroom)


# --- MPS ------------------------------------------------------------------------------------------
def test_workers_on_the_cpu_share_nothing_and_mps_on_is_refused_there():
    assert mps.sharing_mode("auto", "cpu", 4, False, True) == ("cpu", False)
    assert mps.sharing_mode("off", "cpu", 4, False, True) == ("cpu", False)
    with pytest.raises(ConfigurationError, match="train on the CPU"):
        mps.sharing_mode("on", "cpu", 4, False, True)


def test_a_running_daemon_is_used_and_never_started_again():
    for setting in mps.MPS_SETTINGS:
        assert mps.sharing_mode(setting, "cuda", 4, True, True) == ("mps", False)


def test_auto_starts_a_daemon_only_for_workers_that_share_a_gpu():
    assert mps.sharing_mode("auto", "cuda", 4, False, True) == ("mps", True)
    assert mps.sharing_mode("auto", "cuda", 1, False, True) == ("time-slicing", False)
    assert mps.sharing_mode("auto", "cuda", 4, False, False) == ("time-slicing", False)


def test_on_without_mps_installed_is_refused_and_off_time_slices():
    with pytest.raises(ConfigurationError, match="--mps on needs CUDA MPS"):
        mps.sharing_mode("on", "cuda", 4, False, False)
    assert mps.sharing_mode("on", "cuda", 1, False, True) == ("mps", True)
    assert mps.sharing_mode("off", "cuda", 4, False, True) == ("time-slicing", False)


def test_an_unknown_mps_setting_is_refused():
    with pytest.raises(ConfigurationError, match="auto, on, off"):
        mps.sharing_mode("yes", "cuda", 2, False, True)


def test_no_daemon_is_found_without_a_control_pipe(tmp_path):
    assert not mps.daemon_running({"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path)})


@pytest.mark.processes
def test_a_control_pipe_that_does_not_answer_is_no_daemon(tmp_path):
    (tmp_path / "control").write_text("")
    program = tmp_path / "control-program"
    program.write_text("#!/bin/sh\nexit 1\n")
    program.chmod(0o755)
    assert not mps.daemon_running({"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path)}, str(program))
    program.write_text("#!/bin/sh\ncat > /dev/null\nexit 0\n")
    assert mps.daemon_running({"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path)}, str(program))


def test_starting_a_daemon_without_the_program_says_so(monkeypatch):
    monkeypatch.setenv("PATH", "")
    with pytest.raises(NordError, match="not on the PATH"):
        mps.MPSDaemon().start()


@pytest.mark.processes
def test_a_daemon_that_exits_at_once_is_reported_and_leaves_no_folder(tmp_path):
    program = tmp_path / "fake-control"
    program.write_text("#!/bin/sh\nexit 3\n")
    program.chmod(0o755)
    daemon = mps.MPSDaemon(str(program))
    with pytest.raises(NordError, match="exited at once with code 3"):
        daemon.start()
    assert daemon.folder is None and daemon.environment == {}


@pytest.mark.processes
def test_a_daemon_is_started_in_its_own_folder_and_told_to_quit(tmp_path):
    """A stand-in program that behaves as the control daemon does: it runs in the
    foreground until a second invocation sends it 'quit' (through a file, here)."""
    program = tmp_path / "fake-control"
    program.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-f" ]; then\n'
        '  while [ ! -f "$CUDA_MPS_PIPE_DIRECTORY/quit" ]; do sleep 0.05; done; exit 0\n'
        "fi\n"
        'cat > "$CUDA_MPS_PIPE_DIRECTORY/quit"\n')
    program.chmod(0o755)
    with mps.MPSDaemon(str(program)) as daemon:
        folder = daemon.folder
        assert daemon.environment["CUDA_MPS_PIPE_DIRECTORY"] == folder
        assert os.path.isdir(folder) and daemon.process.poll() is None
        process = daemon.process
    assert process.poll() == 0            # it quit when told, not killed
    assert not os.path.exists(folder)
