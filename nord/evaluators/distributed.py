"""DistributedEvaluator: data-parallel training of one descriptor over a group of MPI ranks.

Every rank of the group calls ``descriptor_evaluate``; the group root's descriptor is
broadcast, each rank trains on its shard with averaged gradients, and every rank returns
the same ``EvaluationResult``::

    with Environment() as env:                        # mpirun -np 4 python script.py
        evaluator = DistributedEvaluator(env, curator=Digits(), epochs=5)
        result = evaluator.descriptor_evaluate(descriptor if env.is_root else None)

When only the root drives the search (a pygmo algorithm calling fitness), the other
ranks wait in ``serve()`` until the root calls ``release()``::

    if env.group.is_root:
        ...search, calling evaluator.descriptor_evaluate(d)...
        evaluator.release()
    else:
        evaluator.serve()

Backends: ``'horovod'`` (``hvd.DistributedOptimizer``, parameters and optimizer state
broadcast from the root) and ``'torch'`` (``torch.distributed``: gloo on the CPU, NCCL on
GPUs, for stacks where Horovod cannot be built); ``'auto'`` takes Horovod when installed.

Sound failure handling: at agreement points (after building the network, at every
training step between the backward pass and the optimizer step, and with the test
counts) the ranks exchange their errors. A rank that failed first completes the gradient
all-reduce its peers started (Horovod starts it during the backward pass), so a network
that fails on any rank is 'failed' on all ranks of the group, with the reason, and no
rank is left waiting in a collective.

Test accuracy is exact: correct predictions and sample counts are summed over the
ranks before dividing. ``batch_size`` is per rank, so the global batch is
``batch_size * ranks``; ``scale_lr=True`` multiplies the learning rate by the number of
ranks (the linear scaling rule of Goyal et al., 2017).
"""
from __future__ import annotations

import logging
import os
import socket
from datetime import timedelta
from typing import Optional

import torch

from nord.descriptors import NeuralDescriptor
from nord.errors import ConfigurationError, DistributedError, MissingDependencyError
from nord.evaluators.local import LocalEvaluator
from nord.evaluators.result import EvaluationResult
from nord.training import resolve_device

logger = logging.getLogger(__name__)

BACKENDS = ("auto", "horovod", "torch")
_EVALUATE, _STOP = "evaluate", "stop"
_horovod_comm = None  # the communicator Horovod was started with in this process


class PeerFailure(DistributedError):
    """Another rank of the group failed; carries that rank's reason."""


class DistributedEvaluator(LocalEvaluator):
    """Train and test a descriptor data-parallel over the ranks of a communicator.

    Args:
        environment: an ``Environment``; its group's communicator is used. Without one,
            ``comm`` is used, else MPI's world when running under mpirun, else this
            process alone (then it behaves exactly like LocalEvaluator).
        comm: an mpi4py communicator (instead of ``environment``).
        backend: 'auto', 'horovod' or 'torch'.
        scale_lr: multiply the learning rate by the number of ranks.
        timeout: seconds a torch.distributed collective may wait before failing.
        **kwargs: LocalEvaluator's arguments (curator, epochs, batch_size, lr, seed, ...).
    """

    def __init__(self, environment=None, curator=None, backend: str = "auto",
                 scale_lr: bool = False, comm=None, timeout: float = 600.0, **kwargs):
        super().__init__(curator=curator, **kwargs)
        if backend not in BACKENDS:
            raise ConfigurationError(f"backend must be one of {BACKENDS}; got {backend!r}")
        if environment is not None and comm is not None:
            raise ConfigurationError("pass either environment or comm, not both")
        if environment is not None:
            if environment.group is None:
                raise ConfigurationError(
                    f"rank {environment.rank} is the dedicated root and belongs to no group, so "
                    "it cannot evaluate; create the evaluator on the group ranks only")
            comm = environment.group.comm
        self._environment_local_rank = environment.local_rank if environment is not None else None
        self.comm = comm if comm is not None else _world_comm()
        self.backend = _choose_backend(backend) if self.comm is not None else "local"
        self.scale_lr = bool(scale_lr)
        self.timeout = float(timeout)
        self._started = False

    # --- who am I ----------------------------------------------------------------------
    def _rank(self) -> int:
        return self.comm.Get_rank() if self.comm is not None else 0

    def _size(self) -> int:
        return self.comm.Get_size() if self.comm is not None else 1

    def _local_rank(self) -> int:
        """The rank on this host (which GPU to take): the environment's, else the launcher's."""
        if self._environment_local_rank is not None:
            return self._environment_local_rank
        from nord.environments import launcher_local_rank
        return launcher_local_rank() or 0

    @property
    def is_root(self) -> bool:
        return self._rank() == 0

    def _learning_rate(self) -> float:
        return self.lr * self._size() if self.scale_lr else self.lr

    def describe(self):
        info = super().describe()
        info.update(backend=self.backend, scale_lr=self.scale_lr)
        return info

    # --- the public protocol ------------------------------------------------------------
    def descriptor_evaluate(self, descriptor: Optional[NeuralDescriptor] = None) -> EvaluationResult:
        """Evaluate the group root's descriptor on every rank; all return the same result."""
        if self._size() == 1:
            return super().descriptor_evaluate(descriptor)
        if self.is_root:
            if descriptor is None:
                raise ConfigurationError("the group root must pass the descriptor to evaluate")
            self.comm.bcast((_EVALUATE, descriptor.to_dict()), root=0)
        else:
            command, payload = self.comm.bcast(None, root=0)
            if command != _EVALUATE:
                raise DistributedError(
                    "the group root released the workers while this rank was still calling "
                    "descriptor_evaluate; non-root ranks should call serve() instead")
            descriptor = NeuralDescriptor.from_dict(payload)
        return self._evaluate_broadcast(descriptor)

    def serve(self) -> int:
        """Non-root ranks: evaluate whatever the root sends until ``release``; returns the count."""
        if self.is_root:
            raise DistributedError("serve() is for the non-root ranks of the group")
        count = 0
        while True:
            command, payload = self.comm.bcast(None, root=0)
            if command == _STOP:
                return count
            self._evaluate_broadcast(NeuralDescriptor.from_dict(payload))
            count += 1

    def release(self) -> None:
        """Root: let the ranks waiting in ``serve()`` return."""
        if self._size() > 1 and self.is_root:
            self.comm.bcast((_STOP, None), root=0)

    def _evaluate_broadcast(self, descriptor: NeuralDescriptor) -> EvaluationResult:
        self._start()
        result = LocalEvaluator.descriptor_evaluate(self, descriptor)
        # identical on every rank: the root's timings, and one shared reason for a failure
        return self.comm.bcast(result, root=0)

    # --- hooks of LocalEvaluator ----------------------------------------------------------
    def _agree(self, error: Optional[BaseException]) -> None:
        """Exchange errors; raise on every rank when any rank failed."""
        if self._size() == 1:
            return super()._agree(error)
        reasons = self.comm.allgather(None if error is None else f"{type(error).__name__}: {error}")
        if error is not None:
            raise error
        failed = [(rank, reason) for rank, reason in enumerate(reasons) if reason is not None]
        if failed:
            rank, reason = failed[0]
            raise PeerFailure(f"rank {rank} of {self._size()} failed: {reason}")

    def _reduce_counts(self, correct, seen, loss_sum, error=None):
        if self._size() == 1:
            return super()._reduce_counts(correct, seen, loss_sum, error)
        self._agree(error)
        totals = self.comm.allreduce(torch.tensor([correct, seen], dtype=torch.int64).numpy())
        loss_total = self.comm.allreduce(float(loss_sum))
        return int(totals[0]), int(totals[1]), loss_total

    def _prepare(self, model, optimizer):
        if self._size() == 1:
            return optimizer
        if self.backend == "horovod":
            import horovod.torch as hvd
            hvd.broadcast_parameters(model.state_dict(), root_rank=0)
            hvd.broadcast_optimizer_state(optimizer, root_rank=0)
            return hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
        import torch.distributed as dist
        for tensor in model.state_dict().values():
            dist.broadcast(tensor, src=0)
        return _GradientAveraging(optimizer, self._size())

    # --- start-up -------------------------------------------------------------------------
    def _start(self) -> None:
        if self._started:
            return
        device = resolve_device(self.device, self._local_rank())
        if device.type == "cuda":
            # NCCL (Horovod's and torch's) works on the current device: make it this rank's
            torch.cuda.set_device(device)
        if self.backend == "horovod":
            _start_horovod(self.comm)
        elif self.backend == "torch":
            self._start_torch_distributed()
        self._started = True

    def _start_torch_distributed(self) -> None:
        import torch.distributed as dist
        if dist.is_initialized():
            if dist.get_world_size() != self._size():
                raise DistributedError(
                    "torch.distributed is already started with a different group of ranks; "
                    "use one DistributedEvaluator per process")
            return
        address = None
        if self.is_root:
            host = os.environ.get("NORD_MASTER_ADDR") or _this_host_address()
            with socket.socket() as probe:
                probe.bind(("", 0))
                address = (host, probe.getsockname()[1])
        host, port = self.comm.bcast(address, root=0)
        device = resolve_device(self.device, self._local_rank())
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                init_method=f"tcp://{host}:{port}", rank=self._rank(),
                                world_size=self._size(), timeout=timedelta(seconds=self.timeout))

    def close(self) -> None:
        """Stop torch.distributed (Horovod shuts down by itself at exit)."""
        if self.backend == "torch" and self._started:
            import torch.distributed as dist
            if dist.is_initialized():
                dist.destroy_process_group()
        self._started = False


class _GradientAveraging:
    """Wraps an optimizer: ``step`` first averages the gradients over the ranks (one bucket)."""

    def __init__(self, optimizer: torch.optim.Optimizer, size: int):
        self.optimizer = optimizer
        self.size = size

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def zero_grad(self) -> None:
        self.optimizer.zero_grad()

    def step(self) -> None:
        import torch.distributed as dist
        grads = [p.grad for group in self.optimizer.param_groups for p in group["params"]
                 if p.grad is not None]
        if grads:
            flat = torch.cat([g.reshape(-1) for g in grads])
            dist.all_reduce(flat)
            flat /= self.size
            offset = 0
            for g in grads:
                g.copy_(flat[offset:offset + g.numel()].view_as(g))
                offset += g.numel()
        self.optimizer.step()

    def state_dict(self):
        return self.optimizer.state_dict()


def _world_comm():
    """MPI's world communicator when this process runs under mpirun, else None."""
    from nord.environments import launched_by_mpi
    if not launched_by_mpi():
        return None
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise MissingDependencyError(
            "running under mpirun needs mpi4py: pip install mpi4py (or nord[mpi])") from error
    return MPI.COMM_WORLD if MPI.COMM_WORLD.Get_size() > 1 else None


def _choose_backend(backend: str) -> str:
    if backend in ("auto", "horovod"):
        try:
            import horovod.torch  # noqa: F401
            return "horovod"
        except ImportError as error:
            if backend == "horovod":
                raise MissingDependencyError(
                    "backend='horovod' needs Horovod built with PyTorch and MPI; run "
                    "scripts/build_horovod.sh, or use backend='torch'") from error
    return "torch"


def _start_horovod(comm) -> None:
    global _horovod_comm
    import horovod.torch as hvd
    if _horovod_comm is not None:
        from mpi4py import MPI
        if _horovod_comm is not comm and MPI.Comm.Compare(_horovod_comm, comm) not in (
                MPI.IDENT, MPI.CONGRUENT):
            raise DistributedError(
                "Horovod is already started with another communicator in this process; "
                "a process can train in one group only")
        return
    hvd.init(comm=comm)
    _horovod_comm = comm


def _this_host_address() -> str:
    name = socket.gethostname()
    try:
        return socket.gethostbyname(name)
    except OSError:
        return "127.0.0.1"
