"""Groups and seeds: where each rank sits, computed from its rank and the job's size alone.

Pure functions, testable without MPI; the Environment uses them to split its communicator::

    from nord.parallel import derive_seed, group_assignment, group_layout

    group_layout(3, 2)                    # ((0, 1), (2,)): the last group is smaller
    group_assignment(2, 3, 2)             # GroupAssignment(index=1, rank=0, size=1, members=(2,))
    seed = derive_seed(0, rank)           # a different random stream per rank
"""
from __future__ import annotations

import hashlib
from typing import NamedTuple, Optional, Tuple

from nord.checks import check_int
from nord.errors import ConfigurationError

__all__ = ["GroupAssignment", "group_layout", "group_assignment", "derive_seed"]

_SEED_RANGE = 2**32  # numpy, torch and random all accept seeds in [0, 2**32)


class GroupAssignment(NamedTuple):
    """Where one rank sits in the group layout.

    Attributes:
        index: the group's number, from 0.
        rank: the rank's position inside its group (0 is the group root).
        size: the number of ranks in the group.
        members: the world ranks of the group, in order; ``members[0]`` is the group root.
    """

    index: int
    rank: int
    size: int
    members: Tuple[int, ...]


def group_layout(size: int, group_size: Optional[int] = None,
                 dedicated_root: bool = False) -> Tuple[Tuple[int, ...], ...]:
    """Split the world ranks into groups of ``group_size`` consecutive ranks.

    Args:
        size: the number of ranks in the job.
        group_size: ranks per group; ``None`` puts every evaluating rank in one group. When the
            evaluating ranks are not a multiple of it, the last group is smaller.
        dedicated_root: keep rank 0 out of every group (it runs the search) and split ranks
            ``1 .. size-1``.

    Returns:
        One tuple of world ranks per group, in order; the first rank of each is its root.

    Raises:
        ConfigurationError: ``size`` < 1, ``group_size`` < 1 or larger than the ranks there are to
            split, or ``dedicated_root`` with a single rank.

    >>> group_layout(3, 2)
    ((0, 1), (2,))
    >>> group_layout(4, 1, dedicated_root=True)
    ((1,), (2,), (3,))
    """
    size = check_int(size, "size")
    if size < 1:
        raise ConfigurationError(f"size must be at least 1, got {size}")
    if dedicated_root and size < 2:
        raise ConfigurationError(
            "dedicated_root=True keeps rank 0 out of every group, so it needs at least 2 ranks; "
            f"got size={size}. Launch with `mpirun -np 2` or more, or set dedicated_root=False.")
    workers = list(range(1 if dedicated_root else 0, size))
    if group_size is None:
        k = len(workers)
    else:
        k = check_int(group_size, "group_size")
        if k < 1:
            raise ConfigurationError(
                f"group_size must be at least 1 (1 = each rank trains alone), got {k}; "
                "use None for one group of all ranks")
        if k > len(workers):
            who = (f"the {len(workers)} ranks besides the dedicated root" if dedicated_root
                   else f"the {size} ranks of the job")
            raise ConfigurationError(
                f"a group size of {k} (--group-size, group_size=) is larger than {who}; "
                f"launch more ranks, use a group size of at most {len(workers)}, or leave it "
                "unset for one group of all of them")
    return tuple(tuple(workers[start:start + k]) for start in range(0, len(workers), k))


def group_assignment(rank: int, size: int, group_size: Optional[int] = None,
                     dedicated_root: bool = False) -> Optional[GroupAssignment]:
    """The group of world rank ``rank`` in ``group_layout(size, group_size, dedicated_root)``.

    Returns:
        Its :class:`GroupAssignment`, or None for rank 0 when ``dedicated_root`` is set.

    Raises:
        ConfigurationError: ``rank`` outside ``0 .. size-1``, or invalid group arguments.
    """
    rank = check_int(rank, "rank")
    layout = group_layout(size, group_size, dedicated_root)
    if not 0 <= rank < size:
        raise ConfigurationError(f"rank must be in 0..{size - 1} for size={size}, got {rank}")
    for index, members in enumerate(layout):
        if rank in members:
            return GroupAssignment(index, members.index(rank), len(members), members)
    return None


def derive_seed(base_seed: Optional[int], rank: int, *keys: int) -> Optional[int]:
    """The seed for one rank (and optional further keys), derived from the run's seed.

    All per-rank seeds come from here so that a run is reproducible from one number, and no two
    ranks (or groups, or evaluations, given as ``keys``) share a random stream. A hash is used
    instead of ``base_seed + rank`` so that run 0's rank 1 does not replay run 1's rank 0.

    Args:
        base_seed: the run's seed, a non-negative integer; None (unseeded) gives None.
        rank: usually the world rank; any non-negative integer such as a group index.
        *keys: further non-negative integers that select independent streams.

    Returns:
        An integer in ``[0, 2**32)``, which numpy, torch and ``random`` all accept; equal
        arguments give equal seeds on every machine and Python version.

    Raises:
        ConfigurationError: a negative or non-integer argument.
    """
    if base_seed is None:
        return None
    parts = [check_int(base_seed, "base_seed"), check_int(rank, "rank")]
    parts += [check_int(key, "key") for key in keys]
    if min(parts) < 0:
        raise ConfigurationError(f"seeds, ranks and keys must be non-negative, got {tuple(parts)}")
    digest = hashlib.blake2b(":".join(map(str, parts)).encode("ascii"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % _SEED_RANGE
