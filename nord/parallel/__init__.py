"""Parallel execution: the :class:`Environment` of MPI ranks and groups, per-rank seeds,
launcher and host facts, and the signals that end a run cleanly.

    from nord.parallel import Environment
    env = Environment(group_size=2)          # under mpirun; one rank without it
    env.log("ready")                          # one log line, labelled with the rank

docs/parallel.md describes the modules and how a run starts, fails and ends.
"""
from nord.parallel.environment import Environment, Group
from nord.parallel.groups import GroupAssignment, derive_seed, group_assignment, group_layout
from nord.parallel.launcher import (import_mpi, launched_by_mpi, launcher_local_rank,
                                    launcher_rank, launcher_world_size, wait_for_message)
from nord.parallel.signals import interruptible, on_stop_signal

__all__ = ["Environment", "Group", "GroupAssignment", "group_layout", "group_assignment",
           "derive_seed", "launched_by_mpi", "launcher_world_size", "launcher_rank",
           "launcher_local_rank", "import_mpi", "wait_for_message", "interruptible",
           "on_stop_signal"]
