"""Which GPU each rank takes, and the placements that data-parallel training must refuse.

Pure functions of the ranks' facts (no torch, no MPI), so every rule is tested without a GPU::

    index = gpu_for_rank(local_rank=3, count=2)              # 1: cuda:1 of the GPUs it sees
    gpu = physical_gpu(index, visible_gpus())                # '5' with CUDA_VISIBLE_DEVICES=4,5
    problem = shared_gpu_refusal([Placement(0, 'h1', '0', 0, 1),
                                  Placement(1, 'h1', '0', 0, 1)], backend='torch')

Each rank on a host takes GPU ``local_rank % count`` of the GPUs ``CUDA_VISIBLE_DEVICES``
lets it see (CUDA numbers them from 0 in the variable's order). NCCL, which the torch backend
and a Horovod built with NCCL use on GPUs, cannot put two ranks of one communicator on the
same GPU: such a group is refused before any candidate, naming the ranks and the fixes.
"""
from __future__ import annotations

import os
from typing import Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from nord.errors import ConfigurationError

__all__ = ["Placement", "visible_gpus", "gpu_for_rank", "physical_gpu", "shared_gpus",
           "shared_gpu_refusal"]


class Placement(NamedTuple):
    """Where one rank trains: its world rank, host, physical GPU (None off a GPU), group
    (None for a rank that only dispatches) and the number of GPUs it sees."""

    rank: int
    host: str
    gpu: Optional[str]
    group: Optional[int]
    gpus_seen: int = 1


def visible_gpus(environ: Optional[Mapping[str, str]] = None) -> Optional[Tuple[str, ...]]:
    """The physical GPUs ``CUDA_VISIBLE_DEVICES`` exposes, in the order CUDA numbers them
    (``cuda:0`` is the first); None when it is unset (every GPU, in the driver's order).

    As in CUDA, the list ends at the first entry that is empty or negative: ``'2,-1,3'``
    exposes GPU 2 only, and ``''`` or ``'-1'`` none.
    """
    environ = os.environ if environ is None else environ
    value = environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    exposed = []
    for entry in value.split(","):
        entry = entry.strip()
        if not entry or (entry.lstrip("-").isdigit() and entry.startswith("-")):
            break
        exposed.append(entry)
    return tuple(exposed)


def gpu_for_rank(local_rank: int, count: int) -> int:
    """The index (``cuda:N``) that rank ``local_rank`` on a host takes among ``count`` GPUs.

    Raises:
        ConfigurationError: no GPU to take.
    """
    if count < 1:
        raise ConfigurationError(
            "a GPU was asked for but none is visible to this process (check "
            "CUDA_VISIBLE_DEVICES and nvidia-smi), or use the CPU (--device cpu)")
    return int(local_rank) % int(count)


def physical_gpu(index: int, visible: Optional[Sequence[str]]) -> str:
    """The physical GPU behind ``cuda:index``: its entry in CUDA_VISIBLE_DEVICES, else the
    index itself. Two ranks with different CUDA_VISIBLE_DEVICES may both train on ``cuda:0``
    of different GPUs; this is what tells them apart."""
    if visible is not None and 0 <= index < len(visible):
        return str(visible[index])
    return str(index)


def shared_gpus(placements: Iterable[Placement]) -> List[Tuple[str, str, int, List[int]]]:
    """(host, GPU, group, ranks) for every GPU that two or more ranks of one group share."""
    users: Dict[Tuple[str, str, int], List[int]] = {}
    for placement in placements:
        if placement.gpu is None or placement.group is None:
            continue
        users.setdefault((placement.host, placement.gpu, placement.group), []).append(
            placement.rank)
    return [(host, gpu, group, sorted(ranks))
            for (host, gpu, group), ranks in sorted(users.items()) if len(ranks) > 1]


def shared_gpu_refusal(placements: Sequence[Placement], backend: str) -> Optional[str]:
    """Why data-parallel training with NCCL cannot start on these placements, or None.

    Args:
        placements: every rank's, with ``gpu`` None where the rank trains without NCCL.
        backend: 'torch' or 'horovod', for the message.
    """
    conflicts = shared_gpus(placements)
    if not conflicts:
        return None
    where = "; ".join(
        f"on host {host}, ranks {', '.join(map(str, ranks))} of group {group} would share "
        f"GPU {gpu}" for host, gpu, group, ranks in conflicts)
    per_host = min((p.gpus_seen for p in placements if p.gpu is not None), default=1)
    other = ("--backend horovod with a Horovod built without NCCL (its MPI operations let "
             "ranks share a GPU)" if backend == "torch" else
             "a Horovod built without NCCL, or --backend torch on a host with a GPU per rank")
    return (f"data-parallel training with the {backend} backend uses NCCL on GPUs, and NCCL "
            f"cannot put two ranks of one group on the same GPU: {where}. Nothing was trained. "
            f"Fixes: start at most {per_host} rank(s) of a group per host, one per GPU (e.g. "
            f"mpirun --map-by ppr:{per_host}:node, or set CUDA_VISIBLE_DEVICES per rank); or "
            f"{other}; or train on the CPU (--device cpu)")
