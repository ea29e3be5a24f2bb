"""Training callbacks: look inside a candidate's training while it runs.

A callback is called at the end of every epoch (optionally every ``every_steps`` steps); the
scalars ``on_epoch_end`` returns are stored with the epoch in the run's journal, those
``on_step`` returns as per-step series, and the report draws both. Every candidate gets fresh
instances, and a callback that raises is recorded as a diagnostic of the candidate, never as
its failure. A callback names its scalars ``name`` or ``name/...``: one named as nord's own
figures (``lr``, ``valid_accuracy``, ...) is left out, with a diagnostic::

    from nord.evaluators.callbacks import DeadReLUs, GradientNorms, TrainingCallback

    class LearningRate(TrainingCallback):
        name = "epoch_lr"

        def on_epoch_end(self, state):
            return {"epoch_lr": state.optimizer.param_groups[0]["lr"]}

    evaluator = LocalEvaluator(epochs=5, callbacks=[GradientNorms, DeadReLUs, LearningRate])

Details (failures, the built-in callbacks, registering by name): docs/evaluators.md.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from nord.errors import ConfigurationError
from nord.evaluators.bus import layers as _layers
from nord.evaluators.bus import probe_outputs
from nord.registry import Registry

__all__ = ["TrainingCallback", "TrainingState", "GradientNorms", "WeightNorms", "DeadReLUs",
           "CallbackError", "CALLBACKS", "register_callback", "list_callbacks", "make_callbacks",
           "callback_classes", "fresh_callback"]


class CallbackError(RuntimeError):
    """A training callback failed, with ``strict_callbacks`` (the candidate is recorded as
    failed with this reason); otherwise its message is the candidate's diagnostic."""


@dataclass
class TrainingState:
    """What a callback sees.

    Attributes:
        epoch: the epoch under way (``on_step``; 1 in the first), the epoch just completed
            (``on_epoch_end``), or the epochs already trained (``on_candidate_start``).
        step: training steps taken in this epoch (for ``on_step``).
        model: the network (a ``NeuralNet``; ``model.layer_modules`` by layer name).
        optimizer: its optimizer.
        metrics: the epoch's figures so far (train_loss, valid_accuracy, valid_loss, ...;
            ``loss`` and ``lr`` in ``on_step``).
        probe: a fixed batch of validation inputs, on the model's device (None without one).
        topics: in ``on_step``, what the bus publishes for the callback's ``topics``:
            ``topics[topic][layer]`` (``nord.evaluators.bus``); empty without topics.
    """

    epoch: int
    step: int
    model: Any
    optimizer: Any
    metrics: Dict[str, float] = field(default_factory=dict)
    probe: Any = None
    topics: Dict[str, Dict[str, Any]] = field(default_factory=dict)


class TrainingCallback:
    """Base class: override ``on_epoch_end`` (and ``on_step`` with ``every_steps``).

    Each candidate gets its own instance: a class (or a factory, any callable without
    arguments returning a callback) is called, an instance is deep-copied, so what one
    candidate leaves in ``self`` never reaches the next.

    Registered, a callback is known by name to :func:`make_callbacks` and ``nord run
    --callbacks``::

        from nord.evaluators.callbacks import TrainingCallback, make_callbacks, register_callback

        @register_callback("epoch_lr", description="the learning rate of each epoch")
        class LearningRate(TrainingCallback):
            name = "epoch_lr"

            def on_epoch_end(self, state):
                return {"epoch_lr": state.optimizer.param_groups[0]["lr"]}

        callbacks = make_callbacks(["grad_norm", "epoch_lr"])
    """

    name = "callback"
    every_steps: Optional[int] = None
    """Call ``on_step`` every this many steps (None: never)."""
    topics: Sequence[str] = ()
    """Bus topics ``on_step`` reads from ``state.topics`` (``nord.evaluators.bus.TOPICS``):
    hooks are installed for them only, on the steps the callback is due."""
    produces: Optional[Sequence[str]] = None
    """The scalars it records, as names or ``fnmatch`` patterns (what a stopping rule may
    name); None: ``name`` and ``name/*``."""

    def on_candidate_start(self, state: TrainingState) -> None:
        """Before the candidate's first step of this evaluation (after a resume, ``state.epoch``
        says how many epochs were trained before)."""

    def on_step(self, state: TrainingState) -> Optional[Dict[str, float]]:
        """After a training step (gradients of that step are still in place): every
        ``every_steps`` steps, and at the last step of an epoch shorter than that; the named
        scalars it returns are stored as per-step series (``Journal.series()``)."""

    def on_epoch_end(self, state: TrainingState) -> Dict[str, float]:
        """At the end of an epoch; returns named scalars to store with the epoch."""
        return {}

    def on_candidate_end(self, state: TrainingState) -> None:
        """After the candidate's last epoch of this evaluation (also when it failed)."""

    def outputs(self) -> List[str]:
        """``produces``, or ``name`` and ``name/*`` where it is None."""
        return list(self.produces) if self.produces is not None else [self.name,
                                                                       f"{self.name}/*"]

    def describe(self) -> Dict[str, Any]:
        return {"callback": type(self).__name__, "every_steps": self.every_steps}


def _norm(tensors) -> float:
    total = 0.0
    for tensor in tensors:
        total += float(tensor.detach().double().pow(2).sum())
    return math.sqrt(total)


class GradientNorms(TrainingCallback):
    """Mean L2 norm of each layer's gradient over the epoch, sampled every ``every_steps``
    steps: ``grad_norm/<layer>``. Layers without parameters are left out."""

    name = "grad_norm"

    def __init__(self, every_steps: int = 10):
        self.every_steps = int(every_steps)
        self._sums: Dict[str, float] = {}
        self._count = 0

    def on_step(self, state: TrainingState) -> None:
        for name, module in _layers(state.model):
            grads = [p.grad for p in module.parameters() if p.grad is not None]
            if grads:
                self._sums[name] = self._sums.get(name, 0.0) + _norm(grads)
        self._count += 1

    def on_epoch_end(self, state: TrainingState) -> Dict[str, float]:
        if not self._count:
            self.on_step(state)    # at least the last step's gradients
        values = {f"{self.name}/{name}": total / self._count for name, total in self._sums.items()}
        self._sums, self._count = {}, 0
        return values


class WeightNorms(TrainingCallback):
    """L2 norm of each layer's parameters at the end of the epoch: ``weight_norm/<layer>``."""

    name = "weight_norm"

    def on_epoch_end(self, state: TrainingState) -> Dict[str, float]:
        return {f"{self.name}/{name}": _norm(module.parameters())
                for name, module in _layers(state.model) if any(True for _ in module.parameters())}


class DeadReLUs(TrainingCallback):
    """Fraction of the units after each ReLU layer that output zero for every sample of the
    probe batch (units that no longer learn): ``dead_relu/<layer>``, and their mean over
    the ReLU layers, ``dead_relu``."""

    name = "dead_relu"

    def on_epoch_end(self, state: TrainingState) -> Dict[str, float]:
        import torch

        if state.probe is None:
            return {}
        outputs = probe_outputs(state.model, state.probe, (torch.nn.ReLU, torch.nn.ReLU6))
        values = {}
        for name, output in outputs.items():
            alive = (output.reshape(output.shape[0], -1) > 0).any(dim=0)
            values[f"{self.name}/{name}"] = 1.0 - float(alive.float().mean())
        if values:
            values[self.name] = sum(values.values()) / len(values)
        return values


def fresh_callback(spec) -> TrainingCallback:
    """A new callback from ``spec``: a TrainingCallback class or factory is called, an instance
    deep-copied (a candidate never sees what another left in it).

    Raises:
        ConfigurationError: ``spec`` is none of these, or a factory returned something else.
    """
    if isinstance(spec, TrainingCallback):
        return copy.deepcopy(spec)
    if callable(spec):
        made = spec()
        if isinstance(made, TrainingCallback):
            return made
        raise ConfigurationError(
            f"the callback factory {getattr(spec, '__name__', spec)!r} returned "
            f"{type(made).__name__}, not a TrainingCallback; return an instance of a "
            "TrainingCallback subclass")
    raise ConfigurationError(
        f"callbacks are TrainingCallback classes, instances or factories (callables without "
        f"arguments returning one); got {type(spec).__name__}: {spec!r:.60}")


CALLBACKS: Registry[type] = Registry(
    "training callback",
    hint="Register yours with nord.evaluators.callbacks.register_callback(name, cls)",
    plugins="nord.callbacks", base=TrainingCallback)
"""Training callback name -> its TrainingCallback subclass (``nord run --callbacks
grad_norm,dead_relu``)."""


def register_callback(name: str, cls: Optional[type] = None, *, aliases: Sequence[str] = (),
                      description: str = "", overwrite: bool = False):
    """Make the TrainingCallback subclass ``cls`` available to :func:`make_callbacks` as
    ``name`` (it is made without arguments); without ``cls``, a class decorator. Returns
    ``cls``; arguments and errors as :meth:`nord.registry.Registry.add`."""
    return CALLBACKS.add(name, cls, aliases=aliases, description=description,
                         overwrite=overwrite)



def list_callbacks() -> List[str]:
    """Names of every registered training callback, sorted (aliases not included)."""
    return CALLBACKS.names()


def make_callbacks(names: List[str]) -> List[TrainingCallback]:
    """New instances of the callbacks registered as ``names``.

    Raises:
        ConfigurationError: an unknown name; the message lists the valid ones.
    """
    return [CALLBACKS.load(name)() for name in names]


def callback_classes(names: List[str]) -> List[type]:
    """The classes registered as ``names``: what an evaluator makes fresh for each candidate.

    Raises:
        ConfigurationError: an unknown name; the message lists the valid ones.
    """
    return [CALLBACKS.load(name) for name in names]


register_callback("grad_norm", GradientNorms, aliases=("gradient_norms",),
                  description="mean L2 norm of each layer's gradient over the epoch")
register_callback("weight_norm", WeightNorms, aliases=("weight_norms",),
                  description="L2 norm of each layer's weights at the epoch's end")
register_callback("dead_relu", DeadReLUs, aliases=("dead_relus",),
                  description="share of ReLU units that output zero for a whole validation batch")
for _name, _path, _text in (
        ("update_ratio", "UpdateRatio", "norm of each step's update of a layer over its weights' norm"),
        ("grad_norm_step", "GradientNormSteps", "L2 norm of each layer's gradient at sampled steps"),
        ("spectral_norm", "SpectralNorms", "largest singular value of each layer's weight"),
        ("saturated", "Saturation", "share of tanh/sigmoid outputs within 0.01 of their bounds"),
        ("histograms", "Histograms", "activations and gradients in fixed bins, per layer"),
        ("nonfinite", "NonFiniteWatch", "1 where a step's loss or gradient is NaN or infinite")):
    register_callback(_name, f"nord.evaluators.subscribers.{_path}", description=_text)
