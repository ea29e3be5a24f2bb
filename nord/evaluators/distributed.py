"""DistributedEvaluator: data-parallel training of one descriptor over a group of MPI ranks.

Every rank of the group calls ``descriptor_evaluate``; the group root's descriptor is
broadcast, each rank trains on its shard with averaged gradients, and every rank returns
the same ``EvaluationResult``::

    with Environment() as env:                        # mpirun -np 4 python script.py
        evaluator = DistributedEvaluator(env, curator=Digits(), epochs=5)
        result = evaluator.descriptor_evaluate(descriptor if env.is_root else None)

When only the root drives the search, the other ranks wait in ``serve()`` until the root
calls ``release()``. Backends: ``'horovod'``, ``'torch'`` (torch.distributed), ``'auto'``.

Details (serve and release, backends, failure handling, exact test accuracy): docs/evaluators.md.
"""
from __future__ import annotations

import hashlib
import logging
import os
import socket
from datetime import timedelta
from typing import Optional, Tuple

import torch

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import ConfigurationError, DistributedError, MissingDependencyError
from nord.evaluators.base import Leg
from nord.evaluators.group import Alone
from nord.evaluators.local import LocalEvaluator
from nord.evaluators.result import EvaluationResult
from nord.nn.training import resolve_device
from nord.parallel import import_mpi, launched_by_mpi, launcher_local_rank, wait_for_message
from nord.parallel.hosts import master_address
from nord.parallel.placement import Placement, physical_gpu, shared_gpu_refusal, visible_gpus
from nord.parallel.launcher import (cores_are_shared, cores_of_this_process, launcher_local_size,
                                    mpi_yields_when_idle)

logger = logging.getLogger(__name__)

BACKENDS = ("auto", "horovod", "torch")
_EVALUATE, _STOP = "evaluate", "stop"
_GROUP_TAG = 74   # the root's messages to its group's other ranks
_horovod_comm = None  # the communicator Horovod was started with in this process


class PeerFailure(DistributedError):
    """Another rank of the group failed; carries that rank's reason and ``kind``, the name
    of its exception's class."""

    def __init__(self, message: str, kind: str = ""):
        super().__init__(message)
        self.kind = kind


class DataParallelGroup(Alone):
    """The ranks of a communicator training one candidate together: failures are agreed by an
    allgather, counts summed by an allreduce, the root's values broadcast, and the optimizer
    wrapped so that each step all-reduces the gradients (Horovod or torch.distributed)."""

    data_parallel = True

    def __init__(self, comm, backend: str, local_rank: int = 0, scale_lr: bool = False):
        self.comm = comm
        self.backend = backend
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.local_rank = local_rank
        self.lr_factor = self.size if scale_lr else 1
        self._started = False

    def agree(self, error: Optional[BaseException]) -> None:
        """Exchange errors; raise on every rank when any rank failed."""
        reasons = self.comm.allgather(   # collective: every rank's failure, or None
            None if error is None else (type(error).__name__, f"{type(error).__name__}: {error}"))
        if error is not None:
            raise error
        failed = [(rank, reason) for rank, reason in enumerate(reasons) if reason is not None]
        if failed:
            rank, (kind, reason) = failed[0]
            raise PeerFailure(f"rank {rank} of {self.size} failed: {reason}", kind)

    def reduce_counts(self, correct, seen, loss_sum, error=None):
        self.agree(error)
        correct, seen = self._summed_counts(correct, seen)
        loss_total = self.comm.allreduce(float(loss_sum))
        return correct, seen, loss_total

    def _summed_counts(self, correct: int, seen: int) -> Tuple[int, int]:
        totals = self.comm.allreduce(torch.tensor([correct, seen], dtype=torch.int64).numpy())
        return int(totals[0]), int(totals[1])

    def root_decides(self, value):
        return self.comm.bcast(value, root=0)   # collective

    def diverged(self, error: BaseException) -> bool:
        """A NaN loss on this rank or, learnt by the agreement, on another."""
        return super().diverged(error) or (isinstance(error, PeerFailure)
                                           and error.kind == "NonFiniteLossError")

    def share_root_buffers(self, model) -> None:
        buffers = list(model.named_buffers())
        if self.backend == "horovod":
            import horovod.torch as hvd
            hvd.broadcast_parameters(buffers, root_rank=0)   # collective
            return
        import torch.distributed as dist
        kinds: dict = {}     # one broadcast per dtype and device, not one per buffer
        for _, tensor in buffers:
            kinds.setdefault((tensor.dtype, tensor.device), []).append(tensor)
        for tensors in kinds.values():
            flat = torch.cat([tensor.reshape(-1) for tensor in tensors])
            dist.broadcast(flat, src=0)   # collective
            offset = 0
            for tensor in tensors:
                tensor.copy_(flat[offset:offset + tensor.numel()].view_as(tensor))
                offset += tensor.numel()

    def start(self, device: torch.device, timeout: float = 600.0) -> None:
        """Start the backend on every rank of the group, once (collective): refuse two ranks
        of the group on one GPU where NCCL would place them, take this rank's GPU, start
        Horovod or torch.distributed (``timeout``: seconds a collective may wait)."""
        if self._started:
            return
        mine = rank_placement(self.rank, self.backend, device, group=0)
        refusal = shared_gpu_refusal(self.comm.allgather(mine), self.backend)   # collective
        if refusal is not None:
            raise ConfigurationError(refusal)
        if device.type == "cuda":
            # NCCL (Horovod's and torch's) works on the current device: make it this rank's
            torch.cuda.set_device(device)
        if self.backend == "horovod":
            _start_horovod(self.comm)
        elif self.backend == "torch":
            self._start_torch_distributed(device, timeout)
        self._started = True

    def _start_torch_distributed(self, device: torch.device, timeout: float) -> None:
        import torch.distributed as dist
        if dist.is_initialized():
            if dist.get_world_size() != self.size:
                raise DistributedError(
                    "torch.distributed is already started with a different group of ranks; "
                    "use one DistributedEvaluator per process")
            return
        address = None
        hosts = self.comm.allgather(socket.gethostname())
        if self.is_root:
            address = master_address(spans_hosts=len(set(hosts)) > 1)
        host, port = self.comm.bcast(address, root=0)
        if port is None:  # the root found no address the other hosts can reach: fail together
            raise DistributedError(host)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                init_method=f"tcp://{host}:{port}", rank=self.rank,
                                world_size=self.size, timeout=timedelta(seconds=timeout))

    def close(self) -> None:
        """Stop torch.distributed (Horovod shuts down by itself at exit)."""
        if self.backend == "torch" and self._started:
            import torch.distributed as dist
            if dist.is_initialized():
                dist.destroy_process_group()
        self._started = False

    def average_gradients(self, parameters, loss=None):
        """One all-reduce of the gradients and the loss in a flat buffer (see ``Alone``)."""
        present = [p for p in parameters if p.grad is not None]
        parts = [p.grad.reshape(-1) for p in present]
        if loss is not None:
            parts.append(loss.detach().reshape(1).to(parts[0] if parts else loss))
        if not parts:
            return None
        buffer = torch.cat(parts)
        if self.backend == "horovod":
            import horovod.torch as hvd
            buffer = hvd.allreduce(buffer, op=hvd.Average,   # collective
                                   name=f"nord.average.{buffer.numel()}")
        else:
            import torch.distributed as dist
            dist.all_reduce(buffer)   # collective: summed
            buffer.div_(self.size)
        offset = 0
        for p in present:
            p.grad.copy_(buffer[offset:offset + p.numel()].view_as(p.grad))
            offset += p.numel()
        return None if loss is None else float(buffer[-1])

    def mean(self, hits):
        correct, seen = self._summed_counts(int(hits.sum()), hits.numel())   # collective
        return correct / seen if seen else float("nan")

    def check_same(self, what, tensors):
        """An allgather of a digest of the tensors' bytes on every rank."""
        digest = hashlib.sha256()
        for tensor in tensors:
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        digests = self.comm.allgather(digest.hexdigest())   # collective
        differing = [rank for rank, other in enumerate(digests) if other != digests[0]]
        if differing:
            raise DistributedError(
                f"the ranks' {what} differ (ranks {', '.join(map(str, differing))} against "
                f"rank 0, out of {self.size}): a data-parallel search must decide every draw on "
                "the root and average every gradient; the search stops rather than go on with "
                "ranks that no longer search one architecture")

    def prepare(self, model, optimizer):
        """Every rank starts from the root's weights (and optimizer state); the optimizer
        returned all-reduces each step's gradients, with the state ``optimizer`` holds (a
        checkpoint's: momentum, Adam's moments)."""
        if self.backend == "horovod":
            import horovod.torch as hvd
            hvd.broadcast_parameters(model.state_dict(), root_rank=0)
            distributed = hvd.DistributedOptimizer(optimizer,
                                                   named_parameters=model.named_parameters())
            # Horovod's optimizer is a new one over the same parameter groups (so the
            # learning-rate schedule still steps it) but with empty state: it takes over the
            # state, which is keyed by the same parameters
            distributed.state = optimizer.state
            if optimizer.state:   # a fresh optimizer is equal everywhere, and broadcasting
                # one would step it with zero gradients (a step of weight decay)
                hvd.broadcast_optimizer_state(distributed, root_rank=0)
            return _HorovodStep(distributed, model)
        import torch.distributed as dist
        for tensor in model.state_dict().values():
            dist.broadcast(tensor, src=0)
        return _GradientAveraging(optimizer, self.size)


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
        **kwargs: LocalEvaluator's arguments (curator, epochs, recipe, batch_size, lr, seed, ...).
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
        local_rank = (environment.local_rank if environment is not None
                      else launcher_local_rank() or 0)   # which GPU this rank takes
        self.comm = comm if comm is not None else _world_comm()
        self.backend = (choose_backend(backend, resolve_device(self.device).type == "cuda")
                        if self.comm is not None else "local")
        self.scale_lr = bool(scale_lr)
        self.timeout = float(timeout)
        if self.comm is not None and self.comm.Get_size() > 1:
            self.group = DataParallelGroup(self.comm, self.backend, local_rank, self.scale_lr)
        else:   # one process: exactly a LocalEvaluator
            self.group.local_rank = local_rank

    @property
    def is_root(self) -> bool:
        return self.group.is_root

    def describe(self):
        info = super().describe()
        info.update(backend=self.backend, scale_lr=self.scale_lr)
        return info

    # --- the public protocol ------------------------------------------------------------
    def descriptor_evaluate(self, descriptor: Optional[NeuralDescriptor] = None,
                            leg: Leg = Leg()) -> EvaluationResult:
        """Evaluate the group root's descriptor on every rank; all return the same result.

        The root sends the descriptor (and the leg of training a search engine's task asked
        for) to the other ranks, once; they wait for it in ``serve()``, or here.
        """
        if self.group.size == 1:
            return super().descriptor_evaluate(descriptor, leg)
        if self.is_root:
            if not isinstance(descriptor, NeuralDescriptor):
                return super().descriptor_evaluate(descriptor)   # the base class says why
            # the leg without its report: only the root reports epochs
            message = (_EVALUATE, (descriptor.to_dict(), leg.settings()))
            for member in range(1, self.group.size):
                self.comm.send(message, dest=member, tag=_GROUP_TAG)
            return self._evaluate_broadcast(descriptor, leg)
        command, payload = self._receive()
        if command != _EVALUATE:
            raise DistributedError(
                "the group root released the workers while this rank was still calling "
                "descriptor_evaluate; non-root ranks should call serve() instead")
        return self._follow(payload)

    def serve(self) -> int:
        """Non-root ranks: evaluate whatever the root sends until ``release``; returns the count."""
        if self.is_root:
            raise DistributedError("serve() is for the non-root ranks of the group")
        count = 0
        while True:
            command, payload = self._receive()
            if command == _STOP:
                return count
            self._follow(payload)
            count += 1

    def release(self) -> None:
        """Root: let the ranks waiting in ``serve()`` return."""
        if self.group.size > 1 and self.is_root:
            for member in range(1, self.group.size):
                self.comm.send((_STOP, None), dest=member, tag=_GROUP_TAG)

    def _receive(self):
        """The root's next message, waited for without spinning a core (between networks
        the root may wait long for its own next task)."""
        status = import_mpi().Status()
        wait_for_message(self.comm, 0, _GROUP_TAG, status)
        return self.comm.recv(source=0, tag=_GROUP_TAG)

    def _follow(self, payload) -> EvaluationResult:
        descriptor_dict, leg = payload
        return self._evaluate_broadcast(NeuralDescriptor.from_dict(descriptor_dict),
                                        Leg.from_settings(leg))

    def _evaluate_broadcast(self, descriptor: NeuralDescriptor, leg: Leg) -> EvaluationResult:
        self._start()
        result = LocalEvaluator.descriptor_evaluate(self, descriptor, leg)
        # identical on every rank: the root's timings, and one shared reason for a failure
        return self.comm.bcast(result, root=0)

    # --- start-up -------------------------------------------------------------------------
    def _start(self) -> None:
        self.group.start(resolve_device(self.device, self.group.local_rank), self.timeout)

    def close(self) -> None:
        """Stop torch.distributed (Horovod shuts down by itself at exit)."""
        self.group.close()


class _GradientAveraging:
    """Wraps an optimizer for torch.distributed: one all-reduce per step.

    The gradients live in one flat buffer, each parameter's ``grad`` a view of it, with
    one more element for the failure flag: the backward pass writes straight into what is
    all-reduced, and the flag costs no collective of its own (see DataParallelOptimizer).
    """

    def __init__(self, optimizer: torch.optim.Optimizer, size: int):
        self.optimizer = optimizer
        self.size = size
        self._params = [p for group in optimizer.param_groups for p in group["params"]
                        if p.requires_grad]
        kinds = {(p.dtype, p.device) for p in self._params}
        if len(kinds) > 1:
            raise ConfigurationError(
                "data-parallel training with the torch backend keeps the gradients in one "
                f"buffer, so all parameters need one dtype and device; got {sorted(map(str, kinds))}")
        dtype, device = kinds.pop() if kinds else (torch.float32, torch.device("cpu"))
        self._buffer = torch.zeros(sum(p.numel() for p in self._params) + 1, dtype=dtype,
                                   device=device)
        self._gradients, self._flag = self._buffer[:-1], self._buffer[-1]
        self._views, offset = [], 0
        for p in self._params:
            self._views.append(self._buffer[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
        self._adopt_gradients()

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def state_dict(self):
        return self.optimizer.state_dict()

    def zero_grad(self) -> None:
        self._adopt_gradients()
        self._buffer.zero_()

    def backward(self, loss: torch.Tensor) -> torch.Tensor:
        self._flag.copy_(~torch.isfinite(loss.detach()))
        loss.backward()
        return self._flag.clone()

    def reduce(self, failed: bool = False) -> torch.Tensor:
        import torch.distributed as dist
        self._adopt_gradients()
        if failed:
            self._buffer.zero_()
            self._flag.fill_(1)
        dist.all_reduce(self._buffer)  # collective: gradients and flag, summed
        self._gradients.div_(self.size)
        return self._flag.clone()

    def step(self) -> None:
        self.optimizer.step()

    def _adopt_gradients(self) -> None:
        """Point every ``grad`` back at the buffer (where something replaced it)."""
        for p, view in zip(self._params, self._views):
            if p.grad is not view:
                if p.grad is None:
                    view.zero_()
                else:
                    view.copy_(p.grad)
                p.grad = view


class _HorovodStep:
    """Wraps ``hvd.DistributedOptimizer``: the failure flag joins the last gradients' cycle.

    The backward pass submits each gradient as it is produced; a hook after Horovod's own
    submits the flag as soon as the last gradient is submitted, with the same operation
    and type, so Horovod fuses it into the same cycle's buffer. ``reduce`` submits what
    the backward pass did not reach (zero gradients, the flag), so a rank that failed
    before or during it still completes every all-reduce, then waits for them.
    """

    def __init__(self, optimizer, model: torch.nn.Module):
        self.optimizer = optimizer
        params = [p for p in model.parameters() if p.requires_grad]
        first = params[0] if params else torch.zeros(())
        self._flag = torch.zeros(1, dtype=first.dtype, device=first.device)
        self._one = torch.ones(1, dtype=first.dtype, device=first.device)  # ready before a failure
        self._handle = None
        self._expected, self._seen = len(params), 0
        self._accumulators = []  # hooks live as long as their gradient accumulators
        for p in params:
            accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
            accumulator.register_hook(self._gradient_submitted)
            self._accumulators.append(accumulator)

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def state_dict(self):
        return self.optimizer.state_dict()

    def zero_grad(self) -> None:
        self.optimizer.zero_grad()

    def backward(self, loss: torch.Tensor) -> torch.Tensor:
        self._flag.copy_(~torch.isfinite(loss.detach()).reshape(1))
        self._seen = 0
        loss.backward()
        return self._flag[0].clone()

    def reduce(self, failed: bool = False) -> torch.Tensor:
        import horovod.torch as hvd
        if self._handle is None:  # the backward pass did not reach every gradient
            self._submit(self._one if failed else self._flag)
        self.optimizer.synchronize()  # collective: the gradients it did not reach, zeros
        handle, self._handle, self._seen = self._handle, None, 0
        return hvd.synchronize(handle).reshape(())

    def step(self) -> None:
        with self.optimizer.skip_synchronize():
            self.optimizer.step()

    def _gradient_submitted(self, *_) -> None:
        self._seen += 1
        if self._seen == self._expected:
            self._submit(self._flag)

    def _submit(self, flag: torch.Tensor) -> None:
        import horovod.torch as hvd
        # collective: fused with the gradients' (same operation, type and device)
        self._handle = hvd.allreduce_async(flag, op=hvd.Average, name="nord.failed")


def _world_comm():
    """MPI's world communicator when this process was launched with several ranks, else None."""
    if not launched_by_mpi():
        return None
    world = import_mpi().COMM_WORLD
    return world if world.Get_size() > 1 else None


def choose_backend(backend: str, on_gpu: bool = False) -> str:
    """'horovod' or 'torch' for the backend asked for (``auto_backend`` decides 'auto')."""
    if backend == "torch":
        return "torch"
    try:
        import horovod.torch as hvd
    except ImportError as error:
        if backend == "horovod":
            raise MissingDependencyError(
                "backend='horovod' needs Horovod built with PyTorch and MPI; run "
                "scripts/build_horovod.sh, or use backend='torch'") from error
        return "torch"
    if backend == "horovod":
        return "horovod"
    return auto_backend(True, bool(hvd.nccl_built()), on_gpu)


def auto_backend(horovod_installed: bool, horovod_has_nccl: bool, on_gpu: bool) -> str:
    """What backend='auto' trains with: Horovod where it is installed, except on GPUs
    when it was built without NCCL (its operations would then stage every gradient through
    the host), where torch.distributed's NCCL is used."""
    if not horovod_installed or (on_gpu and not horovod_has_nccl):
        return "torch"
    return "horovod"


def uses_nccl(backend: str, device: torch.device) -> bool:
    """Whether data-parallel training on ``device`` goes through NCCL: torch.distributed on
    a GPU does; Horovod does where it was built with NCCL."""
    if device.type != "cuda":
        return False
    if backend == "torch":
        return True
    if backend == "horovod":
        import horovod.torch as hvd
        return bool(hvd.nccl_built())
    return False


def rank_placement(rank: int, backend: str, device: torch.device,
                   group: Optional[int]) -> Placement:
    """This rank's :class:`Placement`: its physical GPU only where NCCL will use it. Opens
    no CUDA context (it reads the GPU count and CUDA_VISIBLE_DEVICES)."""
    gpu = None
    if uses_nccl(backend, device):
        gpu = physical_gpu(device.index or 0, visible_gpus())
    seen = torch.cuda.device_count() if device.type == "cuda" else 1
    return Placement(rank, socket.gethostname(), gpu, group, seen)


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
    _warn_if_mpi_polls_shared_cores(comm)
    hvd.init(comm=comm)
    if hvd.size() != comm.Get_size():
        # e.g. HOROVOD_CONTROLLER=gloo under mpirun without horovodrun's rendezvous: each
        # rank would silently train alone
        raise DistributedError(
            f"Horovod started with {hvd.size()} rank(s) but the group has {comm.Get_size()}; "
            "under mpirun leave HOROVOD_CONTROLLER and HOROVOD_CPU_OPERATIONS unset (Horovod's "
            "Gloo controller needs horovodrun --gloo)")
    _horovod_comm = comm


def _warn_if_mpi_polls_shared_cores(comm) -> None:
    """Say how to stop MPI's busy polling from taking the cores that training needs.

    Horovod's background thread waits for its peers inside MPI every cycle (1 ms), and
    Open MPI waits by polling: where the ranks' threads outnumber the cores, that polling
    takes CPU time from training (measured: 2 ranks on 2 cores train 4x slower). Yielding
    must be chosen before MPI starts, so it is the launcher's to set, not the evaluator's.
    """
    if "OMPI_COMM_WORLD_SIZE" not in os.environ or mpi_yields_when_idle():
        return
    ranks = launcher_local_size() or comm.Get_size()
    cores = os.cpu_count() or 1
    threads = torch.get_num_threads()
    if comm.Get_rank() == 0 and cores_are_shared(ranks, threads, cores_of_this_process(), cores):
        logger.warning(
            "%d ranks with %d torch thread(s) and Horovod's background thread each share %d "
            "core(s) on this host, and Open MPI polls busily while it waits, taking the cores "
            "from training; start mpirun with --mca mpi_yield_when_idle 1 (or set "
            "OMPI_MCA_mpi_yield_when_idle=1), or use backend='torch'", ranks, threads, cores)
