"""The bus: what happens inside each layer at a training step, for the callbacks that ask.

A callback names the topics it reads (``topics = ("activations",)``); on the steps it is due,
``state.topics[topic][layer]`` holds them. Nothing is hooked or copied for a topic no due
callback reads, so a run without such callbacks pays nothing::

    bus = Bus(model)
    bus.prepare(["activations", "updates"])   # before the step: hooks, a copy of the weights
    ...                                       # forward, backward, optimizer step
    topics = bus.publish()                    # topics["updates"]["conv1"]: (dW, db)

Topics, per layer of ``model.layer_modules``:

- ``activations``: the layer's output in the step's forward pass (detached; an in-place layer
  after it may have changed it).
- ``gradients``: its parameters' gradients (a tuple, one tensor per parameter).
- ``weights``: its parameters after the step.
- ``updates``: what the step changed in them (after minus before).

The loss and the learning rate reach every ``on_step`` in ``state.metrics``.
"""
from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from nord.errors import ConfigurationError

__all__ = ["Bus", "TOPICS", "check_topics", "layers", "probe_outputs"]

TOPICS = ("activations", "gradients", "weights", "updates")


def layers(model) -> List[Tuple[str, Any]]:
    """The named layers of a network: ``layer_modules`` of a NeuralNet, else its children."""
    modules = getattr(model, "layer_modules", None)
    return list(modules.items() if modules is not None else model.named_children())


def probe_outputs(model, probe, kinds: tuple) -> Dict[str, Any]:
    """The outputs of the layers that are instances of ``kinds`` when the probe batch goes
    through the network in eval mode, without gradients (its mode is put back)."""
    import torch   # here: importing the registry of callbacks must not load torch

    chosen = [(name, module) for name, module in layers(model) if isinstance(module, kinds)]
    outputs: Dict[str, Any] = {}
    hooks = [module.register_forward_hook(
        lambda _module, _inputs, output, name=name: outputs.__setitem__(name, output))
        for name, module in chosen]
    training = model.training
    try:
        model.eval()
        with torch.no_grad():
            model(probe)
    finally:
        for hook in hooks:
            hook.remove()
        model.train(training)
    return outputs


def check_topics(topics: Sequence[str], owner: str) -> None:
    """Raise ConfigurationError for a topic the bus does not publish."""
    unknown = [topic for topic in topics if topic not in TOPICS]
    if unknown:
        raise ConfigurationError(
            f"{owner} subscribes to the topic {unknown[0]!r}, which the bus does not publish; "
            f"the topics are {', '.join(TOPICS)}")


class Bus:
    """Per-layer topics of one network (see the module docstring)."""

    def __init__(self, model):
        self.model = model
        self._topics: Tuple[str, ...] = ()
        self._hooks: List[Any] = []
        self._activations: Dict[str, Any] = {}
        self._before: Dict[str, Tuple[Any, ...]] = {}

    def prepare(self, topics: Sequence[str]) -> None:
        """Before a step: hook and copy what ``topics`` need (nothing for none)."""
        if self._hooks or self._before or self._activations:
            self._clear()
        self._topics = tuple(topics)
        if not self._topics:
            return
        if "activations" in self._topics:
            for name, module in layers(self.model):
                self._hooks.append(module.register_forward_hook(self._keeper(name)))
        if "updates" in self._topics:
            self._before = {name: tuple(p.detach().clone() for p in module.parameters())
                            for name, module in layers(self.model)}

    def publish(self) -> Dict[str, Dict[str, Any]]:
        """After the step: the topics prepared for it, then nothing stays hooked."""
        topics = self._topics
        published: Dict[str, Dict[str, Any]] = {}
        if not topics:
            return published
        if "activations" in topics:
            published["activations"] = dict(self._activations)
        if "gradients" in topics:
            published["gradients"] = {
                name: tuple(p.grad.detach() for p in module.parameters() if p.grad is not None)
                for name, module in layers(self.model)}
        if "weights" in topics:
            published["weights"] = {name: tuple(p.detach() for p in module.parameters())
                                    for name, module in layers(self.model)}
        if "updates" in topics:
            published["updates"] = {
                name: tuple(p.detach() - old for p, old in zip(module.parameters(),
                                                               self._before.get(name, ())))
                for name, module in layers(self.model)}
        self._clear()
        self._topics = ()
        return published

    def _keeper(self, name: str):
        def keep(_module, _inputs, output) -> None:
            if hasattr(output, "detach"):
                self._activations[name] = output.detach()
        return keep

    def _clear(self) -> None:
        for hook in self._hooks:
            hook.remove()
        self._hooks, self._activations, self._before = [], {}, {}
