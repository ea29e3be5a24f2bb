"""The 2018 ``Environment``: MPI ranks, a status line per rank, and a log file written by rank 0.

    with Environment() as e:                  # or Environment(logger='experiment2')
        if e.master():
            ...
        e.log('0;[12. 3.];-0.41')             # appended to ./NORD.log by rank 0 only
        e.print('once, from rank 0')

The log file is ``<logger>.log`` in the working directory (``NORD.log`` by default), opened
for appending when the environment starts, with 2018's line format
``2018-08-12 10:00:00;NORD;INFO;message``. On entry every rank announces itself (rank 0
prints the lines). This is nord's :class:`~nord.parallel.Environment` (one group of
all ranks) with 2018's names added: ``world_rank``, ``world_size``, ``master()``,
``print_statuses()``. Differences from 2018: MPI stays initialised after the block (mpi4py
finalises it at exit), Horovod starts when a network is first trained, and an error on one
rank ends the whole job instead of leaving the others waiting.
"""
from __future__ import annotations

import logging
from typing import Any, Optional

from nord.parallel import Environment as _NordEnvironment
from nord.legacy.logs import get_logger

__all__ = ["Environment", "env"]

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
    def world_rank(self) -> int:
        return self.rank

    @property
    def world_size(self) -> int:
        return self.size

    def master(self) -> bool:
        """Whether this is rank 0."""
        return self.is_root

    def print_statuses(self) -> None:
        """Rank 0 prints one line per rank: host, local rank and group (collective)."""
        self.status("ready")

    def log(self, msg: Any, *args: Any, level: int = logging.INFO) -> None:
        """Append ``msg`` to the log file; only rank 0 writes."""
        if self.is_root:
            self.logger.log(level, str(msg), *args)
