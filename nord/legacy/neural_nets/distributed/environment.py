"""The 2018 ``Environment``: MPI ranks, a status line per rank, and a log file written by rank 0.

    with Environment() as e:                  # or Environment(logger='experiment2')
        if e.master():
            ...
        e.log('0;[12. 3.];-0.41')             # appended to ./NORD.log by rank 0 only
        e.print('once, from rank 0')
        e.comm.send(obj, dest=1)              # mpi4py's COMM_WORLD, as in 2018

The log file is ``<logger>.log`` in the working directory (``NORD.log`` by default), opened
for appending when the environment starts, with 2018's line format
``2018-08-12 10:00:00;NORD;INFO;message``. On entry rank 0 prints 2018's lines
``Master initialized.`` and ``Worker 2 of 3 (local 1)`` for the other ranks. This is nord's
:class:`~nord.parallel.Environment` (one group of all ranks) with 2018's names added:
``world_rank``, ``world_size``, ``master()``, ``print_statuses()``, and ``comm``, which is
``MPI.COMM_WORLD`` also without mpirun (MPI then starts, alone, when ``comm`` is first read).
Differences from 2018: MPI stays initialised after the block (mpi4py finalises it at exit,
or :func:`close_workers` does), Horovod starts when a network is first trained, and an error
on one rank ends the whole job instead of leaving the others waiting.
"""
from __future__ import annotations

import logging
import sys
from typing import Any, Optional

from nord.parallel import Environment as _NordEnvironment
from nord.legacy.logs import get_logger
from nord.legacy.neural_nets.distributed.neural_evaluator import close_evaluators

__all__ = ["Environment", "env", "close_workers"]

env = None
"""The environment that is active in this process, as in 2018 (None outside ``with``)."""


class Environment(_NordEnvironment):
    """The ranks of a 2018 program.

    Args:
        logger: name of the logger and of its file ``<logger>.log``; default 'NORD'.
    """

    def __init__(self, logger: Optional[str] = None):
        # nord's own log records stay off the terminal, as 2018 printed none
        super().__init__(group_size=None, log_handler=False)
        self.logger_name = "NORD" if logger is None else str(logger)
        self.logger = logging.getLogger(self.logger_name)

    def start(self) -> "Environment":
        global env
        super().start()
        if self.is_root:
            self.logger = get_logger(self.logger_name)
        self.print_statuses()
        env = self
        return self

    def close(self) -> None:
        super().close()
        self._forget()

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            return super().__exit__(exc_type, exc, tb)
        finally:
            self._forget()  # also when an exception leaves a single process's block

    def _forget(self) -> None:
        global env
        if env is self:
            env = None

    @property
    def comm(self):
        """mpi4py's ``MPI.COMM_WORLD``, as in 2018; None only where mpi4py is not installed.

        Without mpirun nord's Environment runs no MPI, so MPI starts (a single rank) when
        this is first read, as 2018 started it in every program.
        """
        comm = super().comm
        if comm is not None:
            return comm
        try:
            from mpi4py import MPI
        except ImportError:
            return None
        return MPI.COMM_WORLD

    @property
    def world_rank(self) -> int:
        return self.rank

    @property
    def world_size(self) -> int:
        return self.size

    def master(self) -> bool:
        """Whether this is rank 0."""
        return self.is_root

    def print_statuses(self) -> None:
        """Rank 0 prints 2018's lines: ``Master initialized.``, then ``Worker <rank + 1> of
        <ranks> (local <local rank>)`` for each other rank, in rank order (collective)."""
        if self.is_root:
            line = "Master initialized."
        else:
            line = "Worker %d of %d (local %d)" % (self.rank + 1, self.size, self.local_rank)
        lines = self.gather(line)
        if lines is not None:
            sys.stdout.write("".join(f"{line}\n" for line in lines))
            sys.stdout.flush()

    def log(self, msg: Any, *args: Any, level: int = logging.INFO) -> None:
        """Append ``msg`` to the log file; only rank 0 writes."""
        if self.is_root:
            self.logger.log(level, str(msg), *args)


def close_workers() -> None:
    """End the distributed run, as 2018's ``close_workers``: leave the active Environment
    (a barrier on every rank), stop torch.distributed and Horovod, and finalise MPI.

    Every rank must call it, and no MPI call may follow (as in 2018). Calling it again, or
    where MPI never started, does nothing more.
    """
    active = env
    if active is not None:
        active.close()
    close_evaluators()
    horovod = sys.modules.get("horovod.torch")
    if horovod is not None:
        try:
            if horovod.is_initialized():
                horovod.shutdown()
        except (AttributeError, ValueError):  # a Horovod without is_initialized, or not started
            pass
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        mpi.Finalize()
