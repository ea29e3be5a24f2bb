"""Environment: the MPI ranks of a run, their groups, rank-0 logging and a clean abort.

One script runs unchanged on a laptop (one process, no MPI) and under ``mpirun``::

    from nord.parallel import Environment

    with Environment(group_size=1) as env:          # each rank trains alone
        env.log("%d ranks in %d groups", env.size, env.n_groups)   # written once, by rank 0
        ranks = env.gather(env.rank)                # [0, 1, ...] on rank 0, None elsewhere

An exception on any rank of a multi-rank job aborts the whole job instead of hanging it.
docs/parallel.md says when MPI starts, how ranks are grouped, and how a run fails and ends.
"""
from __future__ import annotations

import logging
import os
import socket
import sys
import time
import traceback
from typing import Any, Callable, List, Optional, Tuple

from nord.checks import check_int
from nord.errors import (ConfigurationError, DistributedError, MissingDependencyError, NordError,
                         RunInterrupted)
from nord.parallel.groups import GroupAssignment, group_assignment, group_layout
from nord.parallel.launcher import (launched_by_mpi, launcher_local_rank, launcher_world_size,
                                    refuse_srun_without_mpi, yield_where_cores_are_shared)
from nord.parallel.signals import reclaim_signals

__all__ = ["Environment", "Group", "report_failure"]

logger = logging.getLogger(__name__)

_QUIET_GRACE = 2.0
_FORWARD_DELAY = 0.2
_HANDLER_NAME = "nord.parallel.environment"
_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


# --- collectives: thin wrappers that are the identity on a single process ----------------------
def _check_root(root: int, size: int) -> int:
    root = check_int(root, "root")
    if not 0 <= root < size:
        raise ConfigurationError(f"root must be a rank in 0..{size - 1}, got {root}")
    return root


class _Collectives:
    """Collectives of Python objects over a communicator, or their one-process meaning without."""

    def _comm_and_size(self) -> Tuple[Any, int]:
        """The mpi4py communicator (None without MPI) and its size."""
        raise NotImplementedError

    def barrier(self) -> None:
        """Wait until every rank of the communicator gets here."""
        comm, _ = self._comm_and_size()
        if comm is not None:
            comm.barrier()

    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        """``root``'s ``obj`` (any picklable object), returned on every rank."""
        comm, size = self._comm_and_size()
        root = _check_root(root, size)
        return obj if comm is None else comm.bcast(obj, root=root)

    def from_root(self, compute: Callable[[], Any],
                  errors: Tuple[type, ...] = ()) -> Tuple[Any, Optional[str]]:
        """``compute()`` run on rank 0 alone and sent to every rank: ``(value, None)``, or
        ``(None, message)`` on every rank when it raised one of ``errors`` (so that every rank
        refuses alike, and only rank 0 reads a file the others may not see)."""
        value = message = None
        if self.rank == 0:
            try:
                value = compute()
            except errors as failure:
                message = str(failure)
        return self.bcast((value, message))

    def on_every_rank(self, compute: Callable[[], Any],
                      errors: Tuple[type, ...] = ()) -> Tuple[Any, Optional[Exception]]:
        """``compute()`` run on every rank: ``(value, None)``, or ``(None, error)`` on every
        rank when any rank raised one of ``errors``: the rank's own error, or on a rank that
        did not fail, a NordError with the first failure's message. Every rank thus refuses
        alike, and none is left waiting in a collective for a rank that gave up."""
        value = error = None
        try:
            value = compute()
        except errors as failure:
            error = failure
        first = next((message for message in self.allgather(
            None if error is None else str(error)) if message is not None), None)
        if first is None:
            return value, None
        return None, error if error is not None else NordError(first)

    def gather(self, obj: Any, root: int = 0) -> Optional[List[Any]]:
        """Every rank's ``obj`` as a list in rank order on ``root``; None on the other ranks."""
        comm, size = self._comm_and_size()
        root = _check_root(root, size)
        return [obj] if comm is None else comm.gather(obj, root=root)

    def allgather(self, obj: Any) -> List[Any]:
        """Every rank's ``obj`` as a list in rank order, on every rank."""
        comm, _ = self._comm_and_size()
        return [obj] if comm is None else comm.allgather(obj)


class Group(_Collectives):
    """The ranks that train one network together, with their own communicator.

    Attributes:
        index: the group's number, from 0 (networks can be dealt out by it).
        rank: this rank's position in the group; 0 is the group root.
        size: the number of ranks in the group.
        members: the world ranks of the group, in order.
        comm: the group's mpi4py communicator (give it to ``hvd.init(comm=...)``, which keeps a
            duplicate, or use it for collectives inside the group); None in a single process
            without MPI. The Environment frees it when it closes.
    """

    def __init__(self, index: int, rank: int, size: int, members: Tuple[int, ...],
                 comm: Any = None):
        self.index = index
        self.rank = rank
        self.size = size
        self.members = tuple(members)
        self.comm = comm

    @property
    def is_root(self) -> bool:
        """Whether this rank is the group's root (its rank 0)."""
        return self.rank == 0

    @property
    def root(self) -> int:
        """The world rank of the group's root."""
        return self.members[0]

    def _comm_and_size(self):
        return self.comm, self.size

    def __repr__(self) -> str:
        return (f"Group(index={self.index}, rank={self.rank}, size={self.size}, "
                f"members={self.members})")


def report_failure(rank: int, size: int, exc_type, exc, tb) -> int:
    """Write an exception to stderr, each line prefixed ``[rank R]``, before the job is aborted.

    Returns the exit status the job should end with: 1, or the code of a ``sys.exit``, or
    130 for ``KeyboardInterrupt``. The caller aborts (``MPI_Abort``).
    """
    if issubclass(exc_type, SystemExit):
        code = exc.code if isinstance(exc.code, int) else 1
        text = f"sys.exit({exc.code!r}) inside the environment\n"
    elif issubclass(exc_type, KeyboardInterrupt):
        code = 130
        text = "interrupted (KeyboardInterrupt)\n"
    else:
        code = 1
        text = "".join(traceback.format_exception(exc_type, exc, tb))
    prefix = f"[rank {rank}] "
    lines = [prefix + line for line in text.rstrip("\n").split("\n")]
    lines.append(f"{prefix}error on host {socket.gethostname()} (pid {os.getpid()}): aborting "
                 f"all {size} ranks with MPI_Abort({code})")
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    try:
        sys.stderr.write("\n".join(lines) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return code


# --- the environment ---------------------------------------------------------------------------
class Environment(_Collectives):
    """The ranks of a run: world rank and size, groups, rank-0 output and a clean abort.

    Args:
        group_size: ranks per group; None (default) = one group of all evaluating ranks,
            1 = each rank alone. The last group is smaller when the ranks are not a multiple.
        dedicated_root: keep rank 0 out of every group (its ``group`` is None); it needs 2 ranks
            or more.
        use_mpi: None (default) starts MPI only under an MPI launcher; True always does (a
            single process outside mpirun is then an MPI singleton) and fails without mpi4py;
            False never does.
        log_level: the level given to the ``nord`` logger on rank 0 when it has none.
        log_handler: on rank 0, attach a stderr handler to the ``nord`` logger (never to the root
            logger) while active, unless one is already there. Set False when the application
            configures logging itself.

    The constructor only stores its arguments; :meth:`start` (or ``with``) starts MPI, makes the
    groups and installs the abort hook, and :meth:`close` undoes it. World attributes (``rank``,
    ``size``, ``local_rank``, ``is_root``, ``comm``, ``group``, ``n_groups``, ``group_roots``,
    ``group_layout``) are readable once started, and still after closing.
    """

    def __init__(self, group_size: Optional[int] = None, dedicated_root: bool = False,
                 use_mpi: Optional[bool] = None, log_level: int = logging.INFO,
                 log_handler: bool = True):
        self.group_size = group_size
        self.dedicated_root = dedicated_root
        self.use_mpi = use_mpi
        self.log_level = log_level
        self.log_handler = log_handler
        self._started = False
        self._active = False
        self._comm = None
        self._rank = 0
        self._size = 1
        self._local_rank = 0
        self._group: Optional[Group] = None
        self._layout: Tuple[Tuple[int, ...], ...] = ()
        self._previous_excepthook = None
        self._handler: Optional[logging.Handler] = None
        self._previous_level: Optional[int] = None

    # --- life cycle ---------------------------------------------------------------------------
    def start(self) -> "Environment":
        """Start MPI (when launched by mpirun or asked to), make the groups, install the abort hook.

        Every rank must call it (it splits communicators). Returns self.

        Raises:
            ConfigurationError: invalid group arguments for this number of ranks (raised on every
                rank alike, so the job ends without hanging).
            MissingDependencyError: ``use_mpi=True`` without mpi4py installed.
            DistributedError: the environment is already active.
        """
        if self._active:
            raise DistributedError(
                "this Environment is already active; close it before starting it again")
        if self.use_mpi not in (None, True, False):
            raise ConfigurationError(
                f"use_mpi must be None (automatic), True or False, got {self.use_mpi!r}")
        comm = self._connect()
        rank, size = (0, 1) if comm is None else (comm.Get_rank(), comm.Get_size())
        layout = group_layout(size, self.group_size, self.dedicated_root)
        assignment = group_assignment(rank, size, self.group_size, self.dedicated_root)
        self._comm, self._rank, self._size, self._layout = comm, rank, size, layout
        self._local_rank = 0 if comm is None else self._find_local_rank(comm)
        self._group = self._make_group(comm, assignment)
        self._started = self._active = True
        self._previous_excepthook = sys.excepthook
        sys.excepthook = self._excepthook
        self._attach_log_handler()
        logger.debug("rank %d of %d started (MPI: %s), groups %s",
                     rank, size, comm is not None, layout)
        return self

    def close(self) -> None:
        """Leave the environment: a barrier on every rank, then free the group communicators.

        Hooks and the log handler are removed. MPI itself stays initialised until the
        interpreter exits (mpi4py finalises it then). Closing twice does nothing.
        """
        if not self._active:
            return
        self._active = False
        try:
            if self._comm is not None:
                self._comm.barrier()
        finally:
            self._release()

    def _release(self) -> None:
        if self._group is not None and self._group.comm is not None:
            self._group.comm.Free()  # Horovod duplicates the communicator it is given
        if sys.excepthook == self._excepthook:
            sys.excepthook = self._previous_excepthook
        self._detach_log_handler()

    def __enter__(self) -> "Environment":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None or (issubclass(exc_type, SystemExit) and exc.code in (None, 0)):
            self.close()
            return False
        if issubclass(exc_type, RunInterrupted) and self._aborts_on_error():
            self._leave_quietly(exc.exit_code)  # every rank was signalled; the run said how it ended
        if self._aborts_on_error():
            self._fail(exc_type, exc, tb)  # does not return
        self._active = False  # a single process: the exception propagates as in plain Python
        self._release()
        return False

    def _connect(self):
        """COMM_WORLD when MPI should run in this process, else None."""
        if self.use_mpi is False:
            return None
        loaded = sys.modules.get("mpi4py.MPI")
        already_running = (loaded is not None and loaded.Is_initialized()
                           and not loaded.Is_finalized())
        if self.use_mpi is None and not (launched_by_mpi() or already_running):
            refuse_srun_without_mpi()
            return None
        yield_where_cores_are_shared()
        try:
            from mpi4py import MPI
        except ImportError as error:
            if self.use_mpi:
                raise MissingDependencyError(
                    "Environment(use_mpi=True) needs mpi4py; install it with "
                    "`pip install mpi4py` (or `pip install nord[mpi]`) next to an MPI library "
                    "such as Open MPI (`apt-get install openmpi-bin libopenmpi-dev`)") from error
            launched = launcher_world_size()
            if launched is not None and launched > 1:
                logger.warning(
                    "this process was launched by mpirun with %d ranks but mpi4py is not "
                    "installed, so every rank runs alone as rank 0 of 1 and repeats the whole job; "
                    "install mpi4py (`pip install mpi4py`) to share the work", launched)
            return None
        if MPI.Is_finalized():
            raise DistributedError("MPI was already finalised in this process; an Environment "
                                   "cannot start it again. Make all Environments before exit.")
        if not MPI.Is_initialized():  # mpi4py.rc.initialize was turned off by the application
            MPI.Init_thread()
        reclaim_signals()
        return MPI.COMM_WORLD

    @staticmethod
    def _find_local_rank(comm) -> int:
        local_rank = launcher_local_rank()
        if local_rank is not None:
            return local_rank
        from mpi4py import MPI

        shared = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
        try:
            return shared.Get_rank()
        finally:
            shared.Free()

    @staticmethod
    def _make_group(comm, assignment: Optional[GroupAssignment]) -> Optional[Group]:
        if comm is None:
            return None if assignment is None else Group(*assignment, comm=None)
        from mpi4py import MPI

        color = MPI.UNDEFINED if assignment is None else assignment.index
        sub = comm.Split(color, key=comm.Get_rank())  # collective: every rank takes part
        if assignment is None:
            return None
        return Group(*assignment, comm=sub)

    # --- failure ------------------------------------------------------------------------------
    def _aborts_on_error(self) -> bool:
        return self._comm is not None and self._size > 1

    def _excepthook(self, exc_type, exc, tb) -> None:
        if self._active and self._aborts_on_error():
            self._fail(exc_type, exc, tb)
        (self._previous_excepthook or sys.__excepthook__)(exc_type, exc, tb)

    def _fail(self, exc_type, exc, tb) -> None:
        """Print this rank's traceback, prefixed with its rank, then abort the whole job."""
        code = report_failure(self._rank, self._size, exc_type, exc, tb)
        self.abort(code)

    def _leave_quietly(self, code: int) -> None:
        """End this rank with ``code``, printing nothing (no MPI_Abort banner either).

        mpirun and srun end the job when one of its ranks leaves with a non-zero status, so
        the other ranks give rank 0, which records how the run ended and says so, up to
        ``_QUIET_GRACE`` seconds to leave first (the job ends when it does).
        """
        if self._rank != 0:
            time.sleep(_QUIET_GRACE)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        time.sleep(_FORWARD_DELAY)  # mpirun drops output it has not read when the job ends
        os._exit(code)

    def abort(self, code: int = 1) -> None:
        """End the whole job now with exit status ``code``: ``MPI_Abort`` on ``COMM_WORLD``.

        No clean-up runs (no ``finally``, no ``atexit``), on any rank. Without MPI the process
        exits at once with ``code``.
        """
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        if self._comm is not None:
            self._comm.Abort(code)
        os._exit(code)

    # --- world --------------------------------------------------------------------------------
    def _require_started(self) -> None:
        if not self._started:
            raise DistributedError(
                "the Environment has not been started; use `with Environment(...) as env:` "
                "or call env.start() first")

    def _comm_and_size(self):
        self._require_started()
        return self._comm, self._size

    @property
    def rank(self) -> int:
        """This process's rank in COMM_WORLD (0 in a single process)."""
        self._require_started()
        return self._rank

    @property
    def size(self) -> int:
        """The number of ranks in the job (1 in a single process)."""
        self._require_started()
        return self._size

    @property
    def local_rank(self) -> int:
        """This rank's number among the ranks on the same host (selects its GPU)."""
        self._require_started()
        return self._local_rank

    @property
    def is_root(self) -> bool:
        """Whether this is world rank 0, the rank that logs and runs the search."""
        return self.rank == 0

    @property
    def comm(self):
        """mpi4py's COMM_WORLD, or None when MPI is not running in this process."""
        self._require_started()
        return self._comm

    @property
    def group(self) -> Optional[Group]:
        """This rank's :class:`Group`; None on rank 0 with ``dedicated_root=True``."""
        self._require_started()
        return self._group

    @property
    def group_layout(self) -> Tuple[Tuple[int, ...], ...]:
        """The world ranks of every group, in group order."""
        self._require_started()
        return self._layout

    @property
    def n_groups(self) -> int:
        """The number of groups."""
        return len(self.group_layout)

    @property
    def group_roots(self) -> Tuple[int, ...]:
        """The world rank of each group's root, in group order (where to send each group work)."""
        return tuple(members[0] for members in self.group_layout)

    @property
    def active(self) -> bool:
        """Whether the environment is started and not yet closed."""
        return self._active

    # --- output -------------------------------------------------------------------------------
    def log(self, msg: str, *args: Any, level: int = logging.INFO) -> None:
        """Log ``msg % args`` through the ``nord`` logger, on rank 0 only (written once per job)."""
        if self.is_root:
            logging.getLogger("nord").log(level, msg, *args)

    def print(self, *args: Any, sep: str = " ", end: str = "\n", file: Any = None) -> None:
        """``print`` on rank 0 only, flushed at once.

        The line is written in one call, so that under ``mpirun`` (which forwards every rank's
        stdout and stderr to one terminal) no other output lands inside it, even when Python
        runs unbuffered.
        """
        if self.is_root:
            stream = sys.stdout if file is None else file
            stream.write(sep.join(str(arg) for arg in args) + end)
            stream.flush()

    def print_ordered(self, msg: Any) -> None:
        """Print one line per rank, ``[rank R] msg``, in rank order; every rank must call it.

        The lines are gathered to rank 0, which prints them all, so they never interleave.
        """
        lines = self.gather(f"[rank {self._rank}] {msg}")
        self._print_lines(lines)

    def status(self, msg: Any = "") -> None:
        """Print each rank's host, local rank and group with ``msg``, in rank order (collective)."""
        group = self._group
        where = ("no group (dedicated root)" if group is None
                 else f"group {group.index} rank {group.rank}/{group.size}")
        line = (f"[rank {self._rank}/{self._size}] host {socket.gethostname()} "
                f"local rank {self._local_rank}, {where}: {msg}")
        self._print_lines(self.gather(line))

    @staticmethod
    def _print_lines(lines: Optional[List[str]]) -> None:
        if lines is not None:
            sys.stdout.write("".join(f"{line}\n" for line in lines))
            sys.stdout.flush()

    def _attach_log_handler(self) -> None:
        nord_logger = logging.getLogger("nord")
        if not (self.log_handler and self._rank == 0):
            return
        if nord_logger.level == logging.NOTSET:
            self._previous_level = nord_logger.level
            nord_logger.setLevel(self.log_level)
        if any(handler.get_name() == _HANDLER_NAME for handler in nord_logger.handlers):
            return  # an enclosing Environment already writes nord's records
        handler = logging.StreamHandler(sys.stderr)
        handler.set_name(_HANDLER_NAME)
        handler.setFormatter(logging.Formatter(_LOG_FORMAT, datefmt="%H:%M:%S"))
        nord_logger.addHandler(handler)
        self._handler = handler

    def _detach_log_handler(self) -> None:
        nord_logger = logging.getLogger("nord")
        if self._handler is not None:
            nord_logger.removeHandler(self._handler)
            self._handler = None
        if self._previous_level is not None:
            nord_logger.setLevel(self._previous_level)
            self._previous_level = None

    def __repr__(self) -> str:
        if not self._started:
            return (f"Environment(group_size={self.group_size!r}, "
                    f"dedicated_root={self.dedicated_root!r}) [not started]")
        return (f"Environment(rank={self._rank}, size={self._size}, mpi={self._comm is not None}, "
                f"groups={self._layout}, active={self._active})")
