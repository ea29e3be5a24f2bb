"""CUDA MPS for nord's own worker processes: find a daemon, start one, stop only that one.

Several processes training small networks on one GPU take turns by time-slicing; under the
Multi-Process Service (MPS) their kernels run side by side. Measured on one H100 with a
6-convolution network, 4 processes gave 2.52x the candidates per hour of one (8: 2.75x),
time-slicing 1.28-1.31x. ``nord run --workers N --mps auto|on|off`` decides::

    mode, start = sharing_mode("auto", device_type="cuda", workers_per_gpu=4,
                               daemon_running=False, control_found=True)   # ('mps', True)
    with MPSDaemon() as daemon:               # a private daemon: its own pipe directory
        environment = daemon.environment      # given to the workers before CUDA starts
        ...

A daemon nord starts listens in a directory of its own (``CUDA_MPS_PIPE_DIRECTORY``), so
only nord's workers become its clients and other users' CUDA processes are untouched; it
runs in the foreground as nord's child, is told to quit when the run ends (normally, on an
error or a signal), and is sent SIGTERM by the kernel if nord itself is killed. The decision
logic and the "not available" path are tested on the CPU; starting and stopping a daemon
need a GPU machine (docs/executors.md says what was checked there).
"""
from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Dict, Mapping, Optional, Tuple

from nord.checks import check_choice
from nord.errors import ConfigurationError, NordError

__all__ = ["MPS_SETTINGS", "SHARING_MODES", "CONTROL", "DEFAULT_PIPE_DIRECTORY",
           "check_mps_setting", "sharing_mode", "control_program", "daemon_running", "MPSDaemon"]

logger = logging.getLogger(__name__)

MPS_SETTINGS = ("auto", "on", "off")
"""``--mps``: auto (use a running daemon, else start one when workers share a GPU and MPS is
installed), on (the same, but refuse to run without MPS), off (plain time-slicing)."""
SHARING_MODES = ("cpu", "time-slicing", "mps")
"""How the workers shared their device, as the journal and the closing line say."""
CONTROL = "nvidia-cuda-mps-control"
DEFAULT_PIPE_DIRECTORY = "/tmp/nvidia-mps"


def check_mps_setting(setting: str) -> str:
    return check_choice(setting, "--mps", MPS_SETTINGS)


def sharing_mode(setting: str, device_type: str, workers_per_gpu: int, daemon_running: bool,
                 control_found: bool) -> Tuple[str, bool]:
    """How the workers will share their device, and whether nord must start a daemon.

    Args:
        setting: 'auto', 'on' or 'off' (:data:`MPS_SETTINGS`).
        device_type: 'cpu' or 'cuda'.
        workers_per_gpu: the most workers on one GPU.
        daemon_running: an MPS daemon already serves this process's pipe directory (the
            workers are then its clients whatever the setting: 'off' cannot opt out).
        control_found: ``nvidia-cuda-mps-control`` is installed.

    Returns:
        (mode, start): mode one of :data:`SHARING_MODES`; start True when nord starts a daemon.

    Raises:
        ConfigurationError: ``--mps on`` where MPS cannot run (the CPU, or no MPS installed).
    """
    check_mps_setting(setting)
    if device_type != "cuda":
        if setting == "on":
            raise ConfigurationError(
                "--mps on shares GPUs between worker processes, but the workers train on the "
                "CPU; use --device cuda, or leave --mps at auto")
        return "cpu", False
    if daemon_running:   # its clients are every CUDA process of this pipe directory
        return "mps", False
    if setting == "off":
        return "time-slicing", False
    if setting == "on" and not control_found:
        raise ConfigurationError(
            f"--mps on needs CUDA MPS, but {CONTROL} is not on the PATH and no daemon is "
            "running; install the CUDA driver's MPS tools, start a daemon "
            f"({CONTROL} -d), or use --mps auto or off")
    if control_found and (setting == "on" or workers_per_gpu > 1):
        return "mps", True
    return "time-slicing", False


def control_program() -> Optional[str]:
    """The path of ``nvidia-cuda-mps-control``, or None."""
    return shutil.which(CONTROL)


def daemon_running(environ: Optional[Mapping[str, str]] = None,
                   control: Optional[str] = None) -> bool:
    """Whether an MPS control daemon serves the pipe directory CUDA clients would use here
    (``CUDA_MPS_PIPE_DIRECTORY``, else /tmp/nvidia-mps): its control pipe exists and it
    answers ``get_server_list``."""
    environ = os.environ if environ is None else environ
    folder = environ.get("CUDA_MPS_PIPE_DIRECTORY") or DEFAULT_PIPE_DIRECTORY
    if not os.path.exists(os.path.join(folder, "control")):
        return False
    control = control or control_program()
    if control is None:
        return False
    try:
        answer = subprocess.run([control], input="get_server_list\n", capture_output=True,
                                text=True, timeout=10, env={**environ,
                                                            "CUDA_MPS_PIPE_DIRECTORY": folder})
    except (OSError, subprocess.SubprocessError):
        return False
    return answer.returncode == 0


def _die_with_parent() -> None:  # pragma: no cover - runs in the daemon's child, on Linux
    """In a child before exec: SIGTERM when nord's process ends, however it ends."""
    if sys.platform.startswith("linux"):
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG


class MPSDaemon:
    """An MPS control daemon of nord's own, in a private pipe and log directory.

    Args:
        control: the ``nvidia-cuda-mps-control`` program (None: found on the PATH).

    ``environment`` is what a worker process sets before CUDA starts to be its client.
    """

    def __init__(self, control: Optional[str] = None):
        self.control = control
        self.folder: Optional[str] = None
        self.process: Optional[subprocess.Popen] = None

    @property
    def environment(self) -> Dict[str, str]:
        if self.folder is None:
            return {}
        return {"CUDA_MPS_PIPE_DIRECTORY": self.folder, "CUDA_MPS_LOG_DIRECTORY": self.folder}

    def start(self) -> "MPSDaemon":
        """Start the daemon in the foreground, as this process's child.

        Raises:
            NordError: the program is missing or exits at once (its log says why).
        """
        control = self.control or control_program()
        if control is None:
            raise NordError(f"{CONTROL} is not on the PATH: CUDA MPS cannot be started")
        self.folder = tempfile.mkdtemp(prefix="nord-mps-")
        self.process = subprocess.Popen(
            [control, "-f"], env={**os.environ, **self.environment}, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        try:
            code = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            logger.info("started an MPS daemon (pid %d) in %s", self.process.pid, self.folder)
            return self
        folder, self.process = self.folder, None
        self.stop()
        raise NordError(f"{control} -f exited at once with code {code}; see its log in {folder}")

    def stop(self) -> None:
        """Tell the daemon to quit (its servers end with it) and remove its directory."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            control = self.control or control_program() or CONTROL
            try:
                subprocess.run([control], input="quit\n", text=True, timeout=10,
                               env={**os.environ, **self.environment},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                process.wait(timeout=10)
            except (OSError, subprocess.SubprocessError):
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> "MPSDaemon":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
