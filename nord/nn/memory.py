"""What a network would need before it is allocated: parameters and memory, on the meta device.

    need = estimate_memory(descriptor, (3, 32, 32), 10, batch_size=128, optimizer="adam")
    need.parameters, need.total                  # counted without allocating a byte
    check_fits(need, torch.device("cpu"), max_params=10**7)   # raises CandidateTooLargeError

The network is built on PyTorch's meta device (shapes, no storage), so a candidate of
hundreds of GB is measured in milliseconds and refused as a failed evaluation instead of
being allocated until the process is killed. The first estimate in a process loads torch's
meta kernels once (about 2 s on a small CPU host); later ones take milliseconds.
"""
from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn import init
from torch.utils._device import DeviceContext

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import CandidateTooLargeError
from nord.nn.network import NeuralNet, Probe

__all__ = ["MemoryEstimate", "estimate_memory", "measure_on_meta", "optimizer_state_factor", "available_memory",
           "check_fits", "format_bytes"]


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes that training one network needs on its device, by part.

    Attributes:
        parameters: trainable parameters (the classification head included).
        parameter_bytes, gradient_bytes, optimizer_bytes: weights, their gradients, and the
            optimizer's state (Adam keeps two values per weight, SGD with momentum one).
        activation_bytes: every layer's output for one training batch (what the backward
            pass keeps) and the batch itself.
        batch_size: the batch the activations were counted for.
    """

    parameters: int
    parameter_bytes: int
    gradient_bytes: int
    optimizer_bytes: int
    activation_bytes: int
    batch_size: int

    @property
    def total(self) -> int:
        return (self.parameter_bytes + self.gradient_bytes + self.optimizer_bytes
                + self.activation_bytes)

    def describe(self) -> str:
        """``about 256.4 GB (parameters 64.1 GB, ...)``: the parts, for a message."""
        return (f"about {format_bytes(self.total)} (parameters {format_bytes(self.parameter_bytes)}"
                f" for {self.parameters:,} weights, gradients {format_bytes(self.gradient_bytes)},"
                f" optimizer state {format_bytes(self.optimizer_bytes)}, activations of one "
                f"batch of {self.batch_size} {format_bytes(self.activation_bytes)})")


def optimizer_state_factor(optimizer: Union[str, type], **kwargs) -> int:
    """Values the optimizer keeps per weight: 2 for Adam/AdamW, 1 for SGD with momentum
    (0 without), 1 to 3 for RMSprop (momentum and ``centered`` add one each); 2 for an
    optimizer class it does not know."""
    name = optimizer.lower() if isinstance(optimizer, str) else getattr(optimizer, "__name__", "")
    name = name.lower()
    if name in ("adam", "adamw"):
        return 2
    if name == "sgd":
        return 1 if kwargs.get("momentum", 0) else 0
    if name == "rmsprop":
        return 1 + bool(kwargs.get("momentum", 0)) + bool(kwargs.get("centered", False))
    return 2


def estimate_memory(descriptor: NeuralDescriptor, input_shape: Sequence[int], num_classes: int,
                    batch_size: int, optimizer: Union[str, type] = "adam",
                    **optimizer_kwargs) -> MemoryEstimate:
    """Build ``descriptor`` on the meta device and count what training it would take.

    Raises:
        DescriptorError, ShapeError: as building the network for real would.
    """
    return measure_on_meta(descriptor, input_shape, num_classes, batch_size, optimizer,
                           **optimizer_kwargs)[0]


def measure_on_meta(descriptor: NeuralDescriptor, input_shape: Sequence[int], num_classes: int,
                    batch_size: int, optimizer: Union[str, type] = "adam",
                    **optimizer_kwargs) -> Tuple[MemoryEstimate, NeuralNet]:
    """``estimate_memory``'s figures and the meta network they were counted on, from which
    ``NeuralNet.on_device(..., meta)`` makes the real one without building it again."""
    activations = _Activations()
    try:
        with _QuickMeta():
            model = NeuralNet(descriptor, input_shape, num_classes,
                              Probe(batch=batch_size, training=True, watch=activations.watch,
                                    seen=activations.seen))
    finally:
        activations.stop()
    parameters = parameter_bytes = gradient_bytes = 0
    for weight in model.parameters():      # one walk over the modules
        count = weight.numel()
        parameter_bytes += count * weight.element_size()
        if weight.requires_grad:
            parameters += count
            gradient_bytes += count * weight.element_size()
    optimizer_bytes = gradient_bytes * optimizer_state_factor(optimizer, **optimizer_kwargs)
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())
    batch = batch_size * math.prod(input_shape) * torch.get_default_dtype().itemsize
    need = MemoryEstimate(parameters, parameter_bytes + buffers, gradient_bytes, optimizer_bytes,
                          activations.bytes() + batch, batch_size)
    return need, model


class _QuickMeta(DeviceContext):
    """``with torch.device("meta")``, answering an out-of-place ReLU, a linear layer, a 2-d
    convolution or max pooling of meta tensors with an empty tensor of the result's shape,
    strides and dtype, and leaving out drawing initial weights into meta tensors: torch's
    meta kernels for these are Python code taking tens to hundreds of microseconds a call,
    for nothing but a shape. Anything else (an input the op would refuse included) goes to
    torch. One mode, not a device context under a second mode: every torch call of a meta
    build passes through it."""

    def __init__(self):
        super().__init__("meta")

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _INITIALISERS:
            tensor = args[0] if args else kwargs.get("tensor")
            if _all_meta(tensor) and tensor.dim() >= _INITIALISERS[func]:
                return tensor       # a meta tensor has no values to draw
        elif func is F.relu and len(args) == 1 and not kwargs.get("inplace", False):
            x = args[0]
            if _all_meta(x):        # torch.empty is a C call, empty_like a decomposition
                return (torch.empty(x.shape, dtype=x.dtype, device="meta")
                        if x.is_contiguous() else torch.empty_like(x))
        elif func is F.linear and len(args) in (2, 3) and not kwargs:
            x, weight, bias = (tuple(args) + (None,))[:3]
            if (_all_meta(x, weight) and x.dim() >= 1 and weight.dim() == 2
                    and x.shape[-1] == weight.shape[1] and x.dtype == weight.dtype
                    and (bias is None or (_all_meta(bias) and bias.dtype == x.dtype
                                          and tuple(bias.shape) == (weight.shape[0],)))):
                return torch.empty(tuple(x.shape[:-1]) + (weight.shape[0],), dtype=x.dtype,
                                   device="meta")
        elif func is torch.conv2d and not kwargs:
            shape = _conv2d_shape(*args)
            if shape is not None:
                return torch.empty(shape, dtype=args[0].dtype, device="meta")
        elif func is F.max_pool2d:
            shape = _max_pool2d_shape(*args, **kwargs)
            if shape is not None:
                return torch.empty(shape, dtype=args[0].dtype, device="meta")
        return super().__torch_function__(func, types, args, kwargs)


def _conv2d_shape(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """The output shape of ``torch.conv2d`` for contiguous, batched, floating-point meta
    tensors with numeric padding and arguments torch accepts; else None (torch answers)."""
    if not (_plain_meta(x, weight) and x.dim() == 4 and weight.dim() == 4
            and x.dtype == weight.dtype and type(groups) is int and groups >= 1):
        return None
    out_channels, group_channels = weight.shape[0], weight.shape[1]
    if (bias is not None and not (_all_meta(bias) and bias.dtype == x.dtype
                                  and tuple(bias.shape) == (out_channels,))):
        return None
    if x.shape[1] != group_channels * groups or out_channels % groups or not out_channels:
        return None
    size = _window_output(tuple(x.shape[2:]), tuple(weight.shape[2:]), stride, padding,
                          dilation)
    return None if size is None else (x.shape[0], out_channels) + size


def _max_pool2d_shape(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                      return_indices=False):
    """The output shape of ``F.max_pool2d`` for a contiguous, batched, floating-point meta
    tensor, without ``ceil_mode`` or indices, with padding torch accepts; else None."""
    if ceil_mode or return_indices or not (_plain_meta(x) and x.dim() == 4):
        return None
    kernel = _pair(kernel_size)
    if kernel is None or stride is None or (isinstance(stride, (list, tuple)) and not stride):
        stride = kernel                               # torch's default: the kernel
    pads = _pair(padding)
    if kernel is None or pads is None or any(p > k // 2 for p, k in zip(pads, kernel)):
        return None
    size = _window_output(tuple(x.shape[2:]), kernel, stride, padding, dilation)
    return None if size is None else tuple(x.shape[:2]) + size


def _window_output(lengths, kernel, stride, padding, dilation) -> Optional[Tuple[int, ...]]:
    """Each spatial length after a sliding window, or None where an argument is not a
    number or a pair of numbers torch accepts, or the window does not fit."""
    stride, padding, dilation = _pair(stride), _pair(padding), _pair(dilation)
    if None in (stride, padding, dilation) or min(kernel) < 1 or min(stride) < 1 or (
            min(dilation) < 1 or min(padding) < 0 or min(lengths) < 1):
        return None
    room = [n + 2 * p - d * (k - 1) - 1
            for n, k, p, d in zip(lengths, kernel, padding, dilation)]
    if min(room) < 0:
        return None
    return tuple(r // s + 1 for r, s in zip(room, stride))


def _pair(value) -> Optional[Tuple[int, int]]:
    """``value`` as two ints (an int, or a list or tuple of two), else None."""
    if type(value) is int:
        return value, value
    if (isinstance(value, (list, tuple)) and len(value) == 2
            and all(type(v) is int for v in value)):
        return tuple(value)
    return None


def _plain_meta(*tensors) -> bool:
    """Meta, floating point, contiguous and non-empty: the case whose answer is a plain shape."""
    return all(isinstance(t, torch.Tensor) and t.is_meta and t.dtype.is_floating_point
               and t.is_contiguous() and t.numel() > 0 for t in tensors)


# initialiser -> the fewest dimensions it accepts (fans need two)
_INITIALISERS = {init.uniform_: 0, init.normal_: 0, init.kaiming_uniform_: 2,
                 init.kaiming_normal_: 2, init.xavier_uniform_: 2, init.xavier_normal_: 2}


def _all_meta(*tensors) -> bool:
    return all(isinstance(t, torch.Tensor) and t.is_meta for t in tensors)


class _Activations:
    """The bytes of every leaf module's output for one training batch, seen as the meta
    build's probes run them (its probes are the training forward pass there). A view or an
    in-place result shares its input's storage and is counted once."""

    def __init__(self):
        self.outputs = []
        self.hooks = []

    def watch(self, module: nn.Module) -> None:
        """Before ``module`` runs: the leaves inside it hooked, if it has any (a leaf's own
        output comes to ``seen``, without a hook's cost)."""
        if next(module.children(), None) is None:
            return
        for leaf in module.modules():
            if not next(leaf.children(), None):
                self.hooks.append(leaf.register_forward_hook(self._keep))

    def seen(self, module: nn.Module, output) -> None:
        """After ``module`` ran: a leaf's output kept (a composite's came through hooks)."""
        if next(module.children(), None) is None:
            self._keep(module, None, output)

    def _keep(self, module, inputs, output) -> None:
        if isinstance(output, torch.Tensor):
            self.outputs.append(output)    # its storage read in bytes(), outside the mode

    def stop(self) -> None:
        for hook in self.hooks:
            hook.remove()
        self.hooks = []

    def bytes(self) -> int:
        storages = {}
        for output in self.outputs:        # kept alive here: a storage's id is unique
            storage = output.untyped_storage()
            storages[storage._cdata] = storage.nbytes()
        return sum(storages.values())


def available_memory(device: torch.device) -> Tuple[Optional[int], str]:
    """Bytes free for a new network on ``device``, and where the figure comes from.

    On a GPU: the device's free memory plus what this process's allocator holds unused. On
    the CPU: the kernel's MemAvailable, or the room left under the process's cgroup limit
    when that is smaller. (None, reason) where nothing can be read.
    """
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return free + cached, f"free memory of {device}"
    if device.type != "cpu":
        return None, f"free memory of {device} cannot be read"
    figures = []
    host = _meminfo_available()
    if host is not None:
        figures.append((host, "the host's available memory (MemAvailable)"))
    room = _cgroup_room()
    if room is not None:
        figures.append((room, "the room left under this process's cgroup memory limit"))
    if not figures:
        return None, "the host's free memory cannot be read"
    return min(figures)


def _meminfo_available(path: str = "/proc/meminfo") -> Optional[int]:
    try:
        text = _read(path)
        start = text.index(b"MemAvailable:") + len(b"MemAvailable:")
        return int(text[start:text.index(b"\n", start)].split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_room(root: str = "/sys/fs/cgroup") -> Optional[int]:
    """The cgroup (v2, else v1) limit less the usage; None without a limit."""
    files = _cgroup_files(root)
    if files is None:
        return None
    try:
        limit = _read(files[0]).strip()
        usage = int(_read(files[1]).strip())
    except (OSError, ValueError):
        return None
    if limit == b"max" or not limit.isdigit() or int(limit) >= 1 << 60:
        return None
    return max(0, int(limit) - usage)


@functools.lru_cache(maxsize=None)
def _cgroup_files(root: str) -> Optional[Tuple[str, str]]:
    """The (limit, usage) files of ``root``'s cgroup version, looked for once: a process's
    cgroup layout does not change while it runs, and each failed open costs an exception."""
    for limit_file, usage_file in (("memory.max", "memory.current"),
                                   ("memory/memory.limit_in_bytes",
                                    "memory/memory.usage_in_bytes")):
        files = (os.path.join(root, limit_file), os.path.join(root, usage_file))
        if all(os.path.isfile(path) for path in files):
            return files
    return None


def _read(path: str, size: int = 1 << 16) -> bytes:
    """A small /proc or /sys file's bytes, without the text layer of ``open``: the free
    memory is read before every candidate."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        return os.read(descriptor, size)
    finally:
        os.close(descriptor)


def check_fits(need: MemoryEstimate, device: torch.device,
               max_params: Optional[int] = None) -> None:
    """Refuse a network above ``max_params`` or larger than what ``device`` has free.

    Raises:
        CandidateTooLargeError: saying what it would need and what the limit is.
    """
    if max_params is not None and need.parameters > max_params:
        raise CandidateTooLargeError(
            f"the network has {need.parameters:,} parameters, above the limit of "
            f"{max_params:,} (max_params, --max-params); training it would need "
            f"{need.describe()}. It was refused before anything was allocated")
    available, source = available_memory(device)
    if available is not None and need.total > available:
        raise CandidateTooLargeError(
            f"the network would need {need.describe()} on {device}, but {source} is "
            f"{format_bytes(available)}; it was refused before anything was allocated. "
            "Search smaller networks, train with a smaller --batch-size, or use a device "
            "with more memory")


def format_bytes(count: int) -> str:
    """``1.5 GB``, ``320.0 MB``, ``12.0 kB`` (powers of 1000)."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{int(count)} B"
