"""Which GPU each rank takes, and the placements that data-parallel training must refuse.

Pure functions of the ranks' facts (no torch, no MPI), so every rule is tested without a GPU::

    index = gpu_for_rank(local_rank=3, count=2)              # 1: cuda:1 of the GPUs it sees
    gpu = physical_gpu(index, visible_gpus())                # '5' with CUDA_VISIBLE_DEVICES=4,5
    problem = shared_gpu_refusal([Placement(0, 'h1', '0', 0, 1),
                                  Placement(1, 'h1', '0', 0, 1)], backend='torch')
    worker_devices(4, 'cuda', gpus=2)    # ['cuda:0', 'cuda:1', 'cuda:0', 'cuda:1']

Each rank on a host takes GPU ``local_rank % count`` of the GPUs ``CUDA_VISIBLE_DEVICES``
lets it see (CUDA numbers them from 0 in the variable's order). NCCL, which the torch backend
and a Horovod built with NCCL use on GPUs, cannot put two ranks of one communicator on the
same GPU: such a group is refused before any candidate, naming the ranks and the fixes.
Worker processes on one machine (``nord run --workers N``) take GPUs by the same rule, their
worker number in place of the local rank, so N workers on G GPUs share them round robin.
"""
from __future__ import annotations

import os
from typing import Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from nord.errors import ConfigurationError

__all__ = ["Placement", "visible_gpus", "gpu_for_rank", "physical_gpu", "shared_gpus",
           "shared_gpu_refusal", "worker_devices", "check_worker_count", "MAX_WORKERS_PER_GPU"]

MAX_WORKERS_PER_GPU = 16
"""The most worker processes ``--workers`` puts on one GPU. Each holds its own CUDA context
(about 0.5 GB) and, under MPS, is one of the daemon's clients (48 at most per GPU since
Volta); measured on an H100, 8 small-network trainers gained little over 4 (2.75x against
2.52x one process), so more than 16 only costs memory."""


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


def worker_devices(workers: int, device: str, gpus: int) -> List[str]:
    """The device of each of ``workers`` worker processes on this machine, in worker order.

    Args:
        workers: how many worker processes.
        device: the run's device setting: 'cpu', 'auto', 'cuda' or 'cuda:N'.
        gpus: how many GPUs this process sees (``torch.cuda.device_count()``, which
            CUDA_VISIBLE_DEVICES limits).

    'auto' and 'cuda' deal the workers out round robin (worker ``i`` takes
    ``cuda:{gpu_for_rank(i, gpus)}``, as an MPI rank with local rank ``i`` would); 'cuda:N'
    puts every worker on that GPU; 'cpu', and 'auto' without a GPU, puts them on the CPU.

    Raises:
        ConfigurationError: a GPU was asked for and none is visible.
    """
    name = str(device).lower()
    if name == "cpu" or (name == "auto" and gpus < 1):
        return ["cpu"] * workers
    if name.startswith("cuda:"):
        return [name] * workers
    return [f"cuda:{gpu_for_rank(index, gpus)}" for index in range(workers)]


def check_worker_count(workers: int, cpus: int, gpus: int = 0) -> None:
    """Refuse a number of worker processes this machine cannot host.

    The rule: at least 1; at most one per usable CPU (each worker's Python drives its
    training, on a GPU too, so two workers on one core only take turns); and, on GPUs, at
    most :data:`MAX_WORKERS_PER_GPU` per GPU.

    Args:
        workers: the number asked for.
        cpus: the CPUs this process may use.
        gpus: the GPUs the workers share (0: they train on the CPU).

    Raises:
        ConfigurationError: naming the limit that was broken and the largest allowed value.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigurationError(
            f"--workers (worker processes) must be an integer >= 1; got {workers!r}")
    if workers > cpus:
        raise ConfigurationError(
            f"--workers {workers} asks for more worker processes than the {cpus} CPUs this "
            f"process may use; each worker needs a core to drive its training (on a GPU too), "
            f"so more only take turns. Use --workers {cpus} or fewer")
    if gpus > 0 and workers > MAX_WORKERS_PER_GPU * gpus:
        raise ConfigurationError(
            f"--workers {workers} would put more than {MAX_WORKERS_PER_GPU} worker processes "
            f"on each of the {gpus} GPU(s); each holds a CUDA context and gains little beyond "
            f"8. Use --workers {MAX_WORKERS_PER_GPU * gpus} or fewer")
