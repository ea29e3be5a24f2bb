"""NeuralNet: turns a NeuralDescriptor into a ``torch.nn.Module``.

    net = NeuralNet(descriptor, input_shape=(3, 32, 32), num_classes=10)
    logits = net(images)                       # (batch, num_classes)

Shape parameters are inferred when omitted, a layer's several inputs are aligned before
they merge, and the outputs feed a classification head; what cannot be built for
``input_shape`` raises ``ShapeError``. Building never modifies the descriptor.
Details (how a descriptor becomes a network): docs/nn.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from nord.architecture.descriptor import NeuralDescriptor, architecture_form, form_hash
from nord.errors import LayerParameterError, ShapeError
from nord.nn.modules import Merge

_PROBE_BATCH = 2  # > 1 so that batch-norm layers can run in a shape probe

# Layers whose construction draws its initial weights (and sets its buffers) in
# ``reset_parameters`` alone, after allocating them: allocated anew on a device and reset, they
# hold what constructing them there would give. Exact classes: a subclass may initialise
# otherwise.
_RESET_BY_RESET_PARAMETERS = frozenset({
    nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear, nn.BatchNorm1d, nn.BatchNorm2d,
    nn.BatchNorm3d, nn.LayerNorm, nn.GroupNorm})


@dataclass(frozen=True)
class Probe:
    """How the shape probes that build a network run.

    The default (a batch of 2, layers in eval mode) is what a real device needs: small, and
    no batch-norm statistics touched. On the meta device a probe costs nothing per sample,
    so a memory estimate runs it at the training batch in train mode, has ``watch`` see
    every module (the head's layers included) before it runs and ``seen`` see each with its
    output after: the probes are then the training forward pass, and no second pass is
    needed.
    """

    batch: int = _PROBE_BATCH
    training: bool = False
    watch: Optional[Callable[[nn.Module], None]] = None
    seen: Optional[Callable[[nn.Module, torch.Tensor], None]] = None


class NeuralNet(nn.Module):
    """The torch module of a descriptor, with a classification head.

    Args:
        descriptor: the network description; validated, never modified.
        input_shape: shape of one input sample, (C, H, W) or (F,).
        num_classes: outputs of the classification head.
        probe: how the shape probes run (see ``Probe``); the default suits every device.
        like: a network built from the same descriptor, input shape and classes (on the meta
            device, say): its layers' inferred parameters are reused and no probe runs again.
            The weights are drawn from the generator in the same order as a probing build
            draws them, so they are the same; a network whose layers may draw random numbers
            in their forward pass, or are lazy, is probed anyway.

    Raises:
        DescriptorError: the descriptor breaks a graph rule.
        ShapeError: the descriptor cannot be realised for ``input_shape``.
    """

    def __init__(self, descriptor: NeuralDescriptor, input_shape: Sequence[int] = (3, 32, 32),
                 num_classes: int = 10, probe: Probe = Probe(),
                 like: Optional["NeuralNet"] = None):
        super().__init__()
        descriptor.validate()
        self.input_shape = tuple(int(v) for v in input_shape)
        self.num_classes = int(num_classes)
        self._descriptor_hash: Optional[str] = None
        self.layer_modules = nn.ModuleDict()
        self.merges = nn.ModuleDict()
        self.flattens = set()
        order = descriptor.topological_order()
        self._order = order
        self._sources = {name: descriptor.inputs_of(name) for name in order}
        self._input_layer = descriptor.input_layer
        self._outputs = descriptor.output_layers
        self._layers = descriptor.layers  # copies, taken once
        self.output_shapes: Dict[str, Tuple[int, ...]] = {}
        self._kwargs: Dict[str, dict] = {}

        if like is not None and like._replayable(self):
            self._build_like(like)
        else:
            self._build_probing(probe)
        # Not a registered submodule: it holds the same layers, and a second registration
        # would duplicate every parameter in state_dict (and in Horovod's broadcasts).
        object.__setattr__(self, "_chain", self._as_chain())
        self._release = self._release_plan()

    def _build_probing(self, probe: Probe) -> None:
        watch, seen = probe.watch or _ignore, probe.seen or _ignore
        with torch.no_grad():
            probes = self._build(self._order, probe)
            outputs = [probes[name] for name in self._outputs]
            self.output_merge = Merge("sum")
            watch(self.output_merge)
            merged = _probe_merge(self.output_merge, outputs,
                                  f"the network outputs {self._outputs}")
            seen(self.output_merge, merged)
        self._features = int(merged[0].numel())
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(self._features, self.num_classes))
        if probe.watch is not None or probe.seen is not None:   # the head runs for them only
            with torch.no_grad():
                for module in self.head:          # its leaves, one by one: no hooks needed
                    watch(module)
                    merged = module(merged)
                    seen(module, merged)

    def _replayable(self, other: "NeuralNet") -> bool:
        """Whether ``other`` may be built from this network's plan without probing: the
        same layers and shapes, and no layer that could draw random numbers or materialise
        weights while probed (only torch's and nord's own, never lazy, qualify)."""
        if (self.input_shape, self.num_classes, self._layers, self._sources, self._outputs) != (
                other.input_shape, other.num_classes, other._layers, other._sources,
                other._outputs):
            return False
        for module in self.layer_modules.modules():
            if (isinstance(module, nn.modules.lazy.LazyModuleMixin)
                    or not type(module).__module__.startswith(("torch.nn.", "nord."))):
                return False
        return True

    def _build_like(self, other: "NeuralNet") -> None:
        """The modules of ``other``, created anew in the order a probing build creates them."""
        for name in self._order:
            layer = self._layers[name]
            if len(self._sources[name]) > 1:
                self.merges[name] = Merge(layer.merge)
            module = layer.spec.resolve()(**other._kwargs[name])
            module.train()
            self.layer_modules[name] = module
            self._kwargs[name] = other._kwargs[name]
        self.flattens = set(other.flattens)
        self.output_shapes = dict(other.output_shapes)
        self.output_merge = Merge("sum")
        self._features = other._features
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(self._features, self.num_classes))

    @classmethod
    def on_device(cls, descriptor: NeuralDescriptor, input_shape: Sequence[int],
                  num_classes: int, device: torch.device,
                  meta: Optional["NeuralNet"] = None) -> "NeuralNet":
        """The network built on ``device``, with the initial weights a build there draws.

        ``meta``, this descriptor's build on the meta device (``nord.nn.memory`` measures
        one), becomes the network itself where every layer holding weights is one whose
        weights ``reset_parameters`` draws: its tensors are allocated on ``device`` and reset
        in the order a build creates them, so no module is constructed twice. Otherwise the
        network is built on ``device`` like ``meta`` (or, without one, probing its shapes).
        ``meta`` may become the network: it is not to be used afterwards.
        """
        if meta is not None and meta._materialisable(descriptor, input_shape, num_classes):
            return meta._materialise(device)
        with device:
            return cls(descriptor, input_shape, num_classes, like=meta)

    def _materialisable(self, descriptor, input_shape, num_classes) -> bool:
        """Whether this meta network is ``descriptor``'s for these shapes, and every module
        holding tensors of its own is reset by ``reset_parameters`` alone (no module of
        another kind may draw random numbers when constructed: torch's and nord's only)."""
        if (self.input_shape, self.num_classes, self._outputs) != (
                tuple(int(v) for v in input_shape), int(num_classes), descriptor.output_layers):
            return False
        if self._layers != descriptor.layers or any(
                self._sources[name] != descriptor.inputs_of(name) for name in self._order):
            return False
        for module in self.modules():
            kind = type(module)
            if kind in _RESET_BY_RESET_PARAMETERS:
                tensors = (*module._parameters.values(), *module._buffers.values())
                if not all(t is None or t.is_meta for t in tensors):
                    return False
            elif module._parameters or module._buffers or not (    # a lazy one has tensors
                    kind is NeuralNet or kind.__module__.startswith(("torch.nn.", "nord."))):
                return False
        return True

    def _materialise(self, device: torch.device) -> "NeuralNet":
        """This meta network's tensors allocated on ``device`` and reset, module by module in
        the order a build constructs them (``modules()`` visits them so)."""
        for module in self.modules():
            if type(module) not in _RESET_BY_RESET_PARAMETERS:
                continue
            for key, weight in module._parameters.items():
                if weight is not None:
                    module._parameters[key] = nn.Parameter(
                        torch.empty(weight.shape, dtype=weight.dtype, device=device),
                        weight.requires_grad)
            for key, buffer in module._buffers.items():
                if buffer is not None:
                    module._buffers[key] = torch.empty(buffer.shape, dtype=buffer.dtype,
                                                       device=device)
            module.reset_parameters()
        return self

    @property
    def descriptor_hash(self) -> str:
        """The descriptor's ``hash``, computed on first use: building does not need it."""
        if self._descriptor_hash is None:
            self._descriptor_hash = form_hash(architecture_form(
                self._layers, self._sources, self._input_layer, self._outputs))
        return self._descriptor_hash

    # --- building ---------------------------------------------------------------------
    def _build(self, order: List[str], probe: Probe) -> Dict[str, torch.Tensor]:
        probes: Dict[str, torch.Tensor] = {}
        network_input = torch.zeros((probe.batch,) + self.input_shape)
        watch, seen = probe.watch or _ignore, probe.seen or _ignore
        layers = self._layers
        for name in order:
            layer = layers[name]
            spec = layer.spec
            sources = self._sources[name]
            if sources:
                if len(sources) > 1:
                    self.merges[name] = Merge(layer.merge)
                    watch(self.merges[name])
                    x = _probe_merge(self.merges[name], [probes[s] for s in sources],
                                     f"the inputs {sources} of layer '{name}'")
                    seen(self.merges[name], x)
                    shape = tuple(x.shape)
                else:
                    x, shape = probes[sources[0]], (probe.batch,) + self.output_shapes[sources[0]]
            else:
                x, shape = network_input, (probe.batch,) + self.input_shape
            where = f"layer '{name}' ({spec.name})"
            # shapes read once as tuples and passed on: on the meta device every read of a
            # tensor's shape passes through the estimate's torch-function mode
            if spec.input_kind == "flat" and len(shape) > 2:
                self.flattens.add(name)
                x = x.flatten(1)
                shape = tuple(x.shape)
            elif spec.input_kind == "spatial" and len(shape) != 4:
                raise ShapeError(
                    f"{where} needs a spatial input (channels, height, width) but receives "
                    f"shape {_shape(x)} from {sources or 'the network input'}; put spatial layers "
                    "before flat ones (linear), or use input_shape=(C, H, W)")
            kwargs = dict(layer.params)
            if spec.shape_param is not None:
                actual = int(shape[1])
                given = kwargs.get(spec.shape_param)
                if given is not None and given != actual:
                    raise ShapeError(
                        f"{where} was given {spec.shape_param}={given}, but its input has shape "
                        f"{_shape(x)} ({actual} {'channels' if len(shape) == 4 else 'features'}); "
                        f"omit {spec.shape_param} to have it inferred, or set it to {actual}")
                kwargs[spec.shape_param] = actual
            kwargs.update(dict(spec.forced))
            kwargs = {key: tuple(v) if isinstance(v, list) else v for key, v in kwargs.items()}
            self._kwargs[name] = kwargs
            try:
                module = spec.resolve()(**kwargs)
            except (TypeError, ValueError, RuntimeError) as error:
                # RuntimeError: torch rejects some values only when allocating the weights
                # (a negative kernel size, say).
                raise LayerParameterError(f"{where} cannot be built with {kwargs}: {error}") from error
            module.train(probe.training)
            watch(module)
            try:
                out = module(x)
            except (RuntimeError, ValueError, IndexError) as error:
                # IndexError: a dimension argument out of range for the tensor (flatten).
                raise ShapeError(
                    f"{where} cannot take its input of shape {_shape(x)} "
                    f"(network input {self.input_shape}) with parameters {layer.params}: "
                    f"{_first_line(error)}") from error
            out_shape = tuple(out.shape) if isinstance(out, torch.Tensor) else None
            if out_shape is None or 0 in out_shape:
                raise ShapeError(
                    f"{where} turns its input of shape {_shape(x)} into an empty tensor "
                    f"{_shape(out) if isinstance(out, torch.Tensor) else type(out).__name__}; "
                    "reduce its kernel, stride or padding, or use a larger input")
            if len(out_shape) < 2 or out_shape[0] != shape[0]:
                raise ShapeError(
                    f"{where} turns a batch of shape {shape} into shape "
                    f"{out_shape}, which no longer keeps the batch in dimension 0; "
                    "every layer must map (batch, ...) to (batch, ...) (for flatten, keep "
                    "start_dim >= 1)")
            seen(module, out)
            module.train()
            self.layer_modules[name] = module
            probes[name] = out
            self.output_shapes[name] = out_shape[1:]
        return probes

    def _as_chain(self) -> Optional[Tuple[nn.Module, ...]]:
        """The modules in order when the graph is a chain, so that it runs as hand-written code
        does: one module call each (not a Sequential, whose own call would be one more)."""
        if len(self._outputs) != 1 or self._merges_used():
            return None
        for previous, name in zip(self._order, self._order[1:]):
            if self._sources[name] != [previous]:
                return None
        steps = []
        for name in self._order:
            if name in self.flattens:
                steps.append(nn.Flatten())
            steps.append(self.layer_modules[name])
        return tuple(steps)

    def _merges_used(self) -> bool:
        return len(self.merges) > 0

    def _release_plan(self) -> Dict[str, List[str]]:
        """For each layer, the tensors no longer needed once it has run (saves memory)."""
        last_use = {}
        for name in self._order:
            for source in self._sources[name]:
                last_use[source] = name
        plan: Dict[str, List[str]] = {name: [] for name in self._order}
        for source, user in last_use.items():
            if source not in self._outputs:
                plan[user].append(source)
        return plan

    # --- running ----------------------------------------------------------------------
    def forward(self, x):
        if self._chain is not None:
            for module in self._chain:
                x = module(x)
            return self.head(x)
        values = {}
        for name in self._order:
            sources = self._sources[name]
            if not sources:
                h = x
            elif len(sources) == 1:
                h = values[sources[0]]
            else:
                h = self.merges[name](*[values[s] for s in sources])
            if name in self.flattens:
                h = h.flatten(1)
            values[name] = self.layer_modules[name](h)
            for done in self._release[name]:
                del values[done]
        return self.head(self.output_merge(*[values[name] for name in self._outputs]))

    def count_parameters(self) -> int:
        """Trainable parameters, the head included."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


def _ignore(*_module_and_output) -> None:
    """No watcher: the probes of a real build are seen by nobody."""


def _probe_merge(merge: Merge, tensors: List[torch.Tensor], what: str) -> torch.Tensor:
    """Run a merge on probe tensors, turning a failure into a ShapeError that names them."""
    try:
        return merge(*tensors)
    except (RuntimeError, ValueError, IndexError) as error:
        raise ShapeError(
            f"{what} cannot be merged by {merge.rule!r}: their shapes "
            f"{[_shape(t) for t in tensors]} cannot be aligned ({_first_line(error)}); "
            "merge only (batch, features) and (batch, channels, height, width) tensors") from error


def _shape(tensor) -> Tuple[int, ...]:
    """The shape of one sample (the probe's batch dimension left out)."""
    return tuple(tensor.shape[1:])


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
