"""A real single-node SLURM for the tests: munged, slurmctld and slurmd on this machine.

    with SlurmCluster(workdir) as slurm:             # root only; everything stopped on exit
        job = slurm.sbatch(["slurm/srun.sbatch", ".venv/bin/nord", "run", ...], "-n", "3")
        state = slurm.wait(job)                      # {"JobState": "COMPLETED", ...}
        slurm.run(["srun", "-n", "2", "hostname"])   # a client command against this cluster

Nothing outside ``workdir`` is touched: the daemons read ``workdir/slurm.conf`` (given to
every command as ``SLURM_CONF``), munged has its own key and socket there (``AuthInfo``),
and the ports are free ones picked at start, so this cluster cannot collide with a system
SLURM nor with a run that crashed. Every process that carries this ``SLURM_CONF`` in its
environment (the daemons, ``slurmstepd``, the job's tasks) belongs to this cluster, which is
how :meth:`close` finds and ends them all.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "scancel", "scontrol", "sinfo", "squeue")
TERMINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                   "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}

CONFIG = """\
# A single-node test cluster; every path is inside {work}.
ClusterName=nordtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={work}/munge/socket
CredType=cred/munge
StateSaveLocation={work}/state
SlurmdSpoolDir={work}/spool
SlurmctldPidFile={work}/slurmctld.pid
SlurmdPidFile={work}/slurmd.pid
SlurmctldLogFile={work}/slurmctld.log
SlurmdLogFile={work}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
MpiDefault=pmix
ReturnToService=2
KillWait=5
# this machine's cores may be fewer than the ranks a test starts: take the CPUs below as given
SlurmdParameters=config_overrides
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=nordtest Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""


def cannot_run() -> Optional[str]:
    """None when a SLURM can be started here, else why not (a reason to skip)."""
    if os.geteuid() != 0:
        return "a test SLURM runs its daemons as root (run the tests as root)"
    return None


SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
"""The daemons live in /usr/sbin, which a non-login PATH may lack."""


def program(name: str) -> Optional[str]:
    return shutil.which(name, path=SEARCH_PATH)


def missing_programs() -> List[str]:
    return [name for name in (*DAEMONS, *CLIENTS) if program(name) is None]


def workdir_prefix() -> str:
    """The prefix of a test cluster's folder: it carries the pid of the process that owns it."""
    return f"nord-slurm-{os.getpid()}-"


def remove_stale() -> List[int]:
    """End what a test cluster of a process that no longer runs left behind; the pids ended.

    Its processes are found by their ``SLURM_CONF``, which names the owner's pid.
    """
    pattern = re.compile(rb"^SLURM_CONF=.*/nord-slurm-(\d+)-[^/]*/slurm\.conf$")
    ended = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            variables = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for variable in variables:
            match = pattern.match(variable)
            if match and not _alive(int(match.group(1))):
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                    ended.append(int(entry.name))
                except ProcessLookupError:
                    pass
                break
    return ended


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environ_has(pid: int, entry: bytes) -> bool:
    try:
        return entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


class SlurmError(RuntimeError):
    pass


class SlurmCluster:
    """munged + slurmctld + slurmd in ``workdir``, one node (this machine), one partition.

    Args:
        workdir: an empty folder that every user may traverse (munged requires it of its
            socket's folder; pytest's ``tmp_path`` is mode 700), made with
            ``tempfile.mkdtemp(prefix=workdir_prefix())`` so that :func:`remove_stale` can
            tell whose it is.
        cpus: CPUs declared for the node (default: this machine's, and at least 4).
    """

    def __init__(self, workdir: os.PathLike, cpus: Optional[int] = None):
        self.work = Path(workdir)
        self.cpus = cpus or max(4, os.cpu_count() or 1)
        self.host = socket.gethostname().split(".")[0]  # slurmd knows itself by its short name
        self.conf = self.work / "slurm.conf"
        self.processes: Dict[str, subprocess.Popen] = {}

    # --- life cycle ------------------------------------------------------------------------
    def __enter__(self) -> "SlurmCluster":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def env(self, **extra: str) -> Dict[str, str]:
        """The environment for client commands (and for what jobs inherit from sbatch)."""
        return dict(os.environ, SLURM_CONF=str(self.conf), **extra)

    def start(self, timeout: float = 60.0) -> "SlurmCluster":
        remove_stale()
        self.work.chmod(0o755)
        for folder in ("munge", "state", "spool", "jobs"):
            (self.work / folder).mkdir(exist_ok=True)
        key = self.work / "munge" / "key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.conf.write_text(CONFIG.format(work=self.work, host=self.host, cpus=self.cpus,
                                           ctld_port=_free_port(), slurmd_port=_free_port()))
        munge = self.work / "munge"
        self._daemon("munged", [program("munged"), "--foreground", f"--key-file={key}",
                                f"--socket={munge}/socket", f"--pid-file={munge}/pid",
                                f"--log-file={munge}/log", f"--seed-file={munge}/seed"])
        self._wait_for(lambda: (munge / "socket").exists(), "munged's socket", timeout)
        self._daemon("slurmctld", [program("slurmctld"), "-D", "-i"])
        self._daemon("slurmd", [program("slurmd"), "-D"])
        self._wait_for(self._node_idle, "the node to be idle in sinfo", timeout)
        return self

    def _daemon(self, name: str, command: Sequence[str]) -> None:
        log = open(self.work / f"{name}.out", "wb")
        try:
            self.processes[name] = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=self.env(),
                cwd=self.work, start_new_session=True)
        finally:
            log.close()

    def _wait_for(self, ready, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise SlurmError(f"{name} exited with {process.returncode} while waiting for "
                                     f"{what}:\n{self.logs()}")
            if time.monotonic() > deadline:
                raise SlurmError(f"no {what} after {timeout:.0f} s:\n{self.logs()}")
            time.sleep(0.1)

    def _node_idle(self) -> bool:
        done = self.run(["sinfo", "-h", "-N", "-o", "%T"], check=False)
        return done.returncode == 0 and done.stdout.strip() == "idle"

    def logs(self) -> str:
        parts = []
        for name in ("munged.out", "slurmctld.out", "slurmd.out", "slurmctld.log", "slurmd.log"):
            path = self.work / name
            if path.exists():
                parts.append(f"--- {name} (end)\n{path.read_text(errors='replace')[-3000:]}")
        return "\n".join(parts)

    def processes_of_cluster(self) -> List[int]:
        """Every process started with this cluster's SLURM_CONF (daemons, steps, tasks)."""
        entry = f"SLURM_CONF={self.conf}".encode()
        pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
        return [pid for pid in pids if pid != os.getpid() and _environ_has(pid, entry)]

    def close(self) -> None:
        """Cancel every job, stop the daemons, then end anything else left of this cluster."""
        if "slurmctld" in self.processes and self.processes["slurmctld"].poll() is None:
            self.run(["scancel", "--quiet", "--partition=nordtest"], check=False)
            deadline = time.monotonic() + 30
            while self.run(["squeue", "-h"], check=False).stdout.strip():
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)
        for name in reversed(DAEMONS):
            process = self.processes.get(name)
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
        deadline = time.monotonic() + 10
        while True:
            left = self.processes_of_cluster()
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if time.monotonic() > deadline:
                raise SlurmError(f"processes {left} of the test SLURM survived SIGKILL")
            time.sleep(0.05)
        self.processes.clear()

    # --- clients ---------------------------------------------------------------------------
    def run(self, command: Sequence[str], check: bool = True, timeout: float = 120,
            **kwargs) -> subprocess.CompletedProcess:
        """A client command (sbatch, srun, scontrol ...) against this cluster."""
        env = kwargs.pop("env", None) or self.env()
        done = subprocess.run([str(part) for part in command], capture_output=True, text=True,
                              env=env, timeout=timeout, **kwargs)
        if check and done.returncode != 0:
            raise SlurmError(f"{' '.join(map(str, command))} exited with {done.returncode}:\n"
                             f"{done.stdout}{done.stderr}")
        return done

    def sbatch(self, script: Sequence[str], *options: str, env: Optional[Dict[str, str]] = None,
               cwd: Optional[os.PathLike] = None) -> str:
        """Submit ``script`` (the script and its arguments) with sbatch ``options``; the job id."""
        done = self.run(["sbatch", "--parsable", *options, *script], env=env, cwd=cwd)
        return done.stdout.strip().split(";")[0]

    def job(self, job_id: str) -> Dict[str, str]:
        """The job's fields from ``scontrol show job`` (JobState, ExitCode, StdOut ...)."""
        done = self.run(["scontrol", "show", "job", "-o", job_id])
        fields = {}
        for token in done.stdout.split():
            key, _, value = token.partition("=")
            fields.setdefault(key, value)
        return fields

    def wait(self, job_id: str, timeout: float = 300) -> Dict[str, str]:
        """Wait until the job has ended; its fields. Raises SlurmError after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            fields = self.job(job_id)
            if fields.get("JobState") in TERMINAL_STATES and not self._job_processes(job_id):
                return fields
            if time.monotonic() > deadline:
                raise SlurmError(f"job {job_id} still {fields.get('JobState')} after "
                                 f"{timeout:.0f} s")
            time.sleep(0.2)

    def _job_processes(self, job_id: str) -> List[int]:
        entry = f"SLURM_JOB_ID={job_id}".encode()
        return [pid for pid in self.processes_of_cluster() if _environ_has(pid, entry)]
