"""The launcher's facts, read before MPI starts: who started this process, and how ranks wait.

MPI launchers (mpirun, mpiexec, ``srun --mpi=pmix``) set variables in every rank they start;
reading them lets code decide whether to start MPI at all, and lets one rank speak before it
has::

    from nord.parallel import launched_by_mpi, launcher_rank

    if launched_by_mpi() and launcher_rank() != 0:
        ...                                   # stay quiet: rank 0 reports

The host facts here (:func:`cores_are_shared`, :func:`yield_where_cores_are_shared`) are
about ranks that Open MPI placed on one host waiting by polling on cores that training needs.
"""
from __future__ import annotations

import os
import time
from typing import Mapping, Optional, Tuple

from nord.errors import ConfigurationError, MissingDependencyError

__all__ = ["launched_by_mpi", "launcher_world_size", "launcher_rank", "launcher_local_rank",
           "launcher_local_size", "refuse_srun_without_mpi", "import_mpi", "wait_for_message",
           "cores_of_this_process", "cores_are_shared", "mpi_yields_when_idle",
           "yield_where_cores_are_shared"]

# Variables that MPI launchers set in every rank they start; none is set by a plain `python`.
_LAUNCHER_VARIABLES = (
    "OMPI_COMM_WORLD_SIZE",  # Open MPI mpirun / orterun / prterun
    "PMIX_RANK",  # any PMIx launcher (Open MPI 4/5, srun --mpi=pmix)
    "PMI_SIZE",  # MPICH / Hydra, Intel MPI, srun --mpi=pmi2
    "PMI_RANK",
    "MV2_COMM_WORLD_SIZE",  # MVAPICH2
    "MPI_LOCALNRANKS",  # MPICH / Hydra
)
# SLURM's come last: a launcher started inside a SLURM job (mpirun in an sbatch script) sets
# its own, while the job's SLURM_* variables stay in the environment of every rank.
_WORLD_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE",
                         "SLURM_STEP_NUM_TASKS")
_RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK",
                   "SLURM_PROCID")
_LOCAL_RANK_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                         "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")
_LOCAL_SIZE_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_SIZE",)

_FIRST_SLEEP = 5e-5
_TRUE = ("1", "true", "yes", "on")


# --- who started this process -------------------------------------------------------------------
def launched_by_mpi(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether this process was started by an MPI launcher (mpirun, mpiexec, srun with PMI/PMIx)."""
    environ = os.environ if environ is None else environ
    return any(name in environ for name in _LAUNCHER_VARIABLES)


def _first_int(environ: Mapping[str, str], names: Tuple[str, ...]) -> Optional[int]:
    for name in names:
        try:
            return int(environ[name])
        except (KeyError, ValueError):
            continue
    return None


def launcher_world_size(environ: Optional[Mapping[str, str]] = None) -> Optional[int]:
    """The number of ranks the launcher started, read from its variables; None if unknown."""
    return _first_int(os.environ if environ is None else environ, _WORLD_SIZE_VARIABLES)


def launcher_rank(environ: Optional[Mapping[str, str]] = None) -> Optional[int]:
    """This process's world rank as its launcher set it, read without starting MPI; None
    outside a launcher (so that code running before MPI starts can let one rank speak)."""
    return _first_int(os.environ if environ is None else environ, _RANK_VARIABLES)


def launcher_local_rank(environ: Optional[Mapping[str, str]] = None) -> Optional[int]:
    """This rank's number on its host, read from the launcher's variables; None if unknown."""
    return _first_int(os.environ if environ is None else environ, _LOCAL_RANK_VARIABLES)


def launcher_local_size(environ: Optional[Mapping[str, str]] = None) -> Optional[int]:
    """The number of ranks Open MPI started on this host; None if unknown."""
    return _first_int(os.environ if environ is None else environ, _LOCAL_SIZE_VARIABLES)


def refuse_srun_without_mpi(environ: Optional[Mapping[str, str]] = None) -> None:
    """Raise when srun started several tasks without an MPI plugin.

    Each of those tasks would be a job of one rank that repeats the whole run (and writes
    the same journal), which is never what was meant.

    Raises:
        ConfigurationError: ``SLURM_STEP_NUM_TASKS`` is more than 1.
    """
    environ = os.environ if environ is None else environ
    tasks = _first_int(environ, ("SLURM_STEP_NUM_TASKS",))
    if tasks is not None and tasks > 1:
        raise ConfigurationError(
            f"srun started {tasks} tasks without an MPI plugin, so each task would run the whole "
            f"job alone as rank 0 of 1 (this is task {environ.get('SLURM_PROCID', '?')}); launch "
            "with `srun --mpi=pmix ...` (Open MPI; `srun --mpi=list` shows the plugins), or ask "
            "for MpiDefault=pmix in slurm.conf. To run the tasks as independent processes, "
            "use Environment(use_mpi=False).")


# --- MPI itself ---------------------------------------------------------------------------------
def import_mpi():
    """mpi4py's MPI module, or a MissingDependencyError that says how to install it."""
    try:
        from mpi4py import MPI  # optional: `import nord` works without mpi4py
    except ImportError as error:
        raise MissingDependencyError(
            "this needs mpi4py; install it with `pip install mpi4py` (or `pip install nord[mpi]`) "
            "next to an MPI library such as Open MPI") from error
    return MPI


def wait_for_message(comm, source: int, tag: int, status, poll_interval: float = 0.00025) -> None:
    """Wait until a message from ``source`` with ``tag`` can be received, without spinning a core.

    Open MPI's blocking receive spins on the CPU, which on a machine with more ranks than cores
    slows the ranks that compute. This polls with ``Iprobe`` and sleeps between polls, from 50
    microseconds doubling up to ``poll_interval``: a quick message is seen within about 0.1 ms,
    a long wait costs about one poll per interval. (Spinning first, even with
    ``sched_yield``, measured worse on an oversubscribed machine: the spinning rank delays the
    very rank it waits for.) ``poll_interval=0`` blocks in ``Probe`` instead.
    """
    if poll_interval <= 0:
        comm.Probe(source=source, tag=tag, status=status)
        return
    sleep = _FIRST_SLEEP
    while not comm.Iprobe(source=source, tag=tag, status=status):
        time.sleep(sleep)
        sleep = min(sleep * 2, poll_interval)


# --- ranks that share a host's cores ------------------------------------------------------------
def cores_of_this_process() -> int:
    """The cores this process may run on: those it is bound to, else all of the host's."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def cores_are_shared(ranks_on_host: int, threads: int, cores_of_rank: int,
                     cores_on_host: int) -> bool:
    """Whether the ranks on a host want more cores than they have.

    Each rank runs ``threads`` compute threads and one communication thread (Horovod's
    background thread). A rank bound to some of the cores (mpirun's ``--bind-to``) has those
    to itself; unbound ranks share all of the host's.
    """
    share = cores_of_rank if cores_of_rank < cores_on_host else cores_on_host / ranks_on_host
    return threads + 1 > share


def mpi_yields_when_idle(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether Open MPI was told to yield the core while it waits (or found it oversubscribed)."""
    environ = os.environ if environ is None else environ
    return (environ.get("OMPI_MCA_mpi_yield_when_idle", "").lower() in _TRUE
            or environ.get("OMPI_MCA_mpi_oversubscribe", "").lower() in _TRUE)


def yield_where_cores_are_shared(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Before MPI starts: tell Open MPI to yield the core while it waits, when the ranks on
    this host (each with its torch threads and a communication thread) want more cores than
    the host has. Open MPI waits by polling, which would take those cores from training. A
    setting of the user's is kept. Returns whether yielding was asked for here."""
    environ = os.environ if environ is None else environ
    if "OMPI_COMM_WORLD_SIZE" not in environ or "OMPI_MCA_mpi_yield_when_idle" in environ:
        return False
    ranks = launcher_local_size(environ) or 1
    host_cores = os.cpu_count() or cores_of_this_process()
    threads = _first_int(environ, ("OMP_NUM_THREADS",)) or host_cores
    # every rank counted as sharing the whole host, whether or not it is bound to some cores
    if not cores_are_shared(ranks, threads, host_cores, host_cores):
        return False
    environ["OMPI_MCA_mpi_yield_when_idle"] = "1"
    return True
