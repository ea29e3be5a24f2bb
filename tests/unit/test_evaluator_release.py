"""A finished evaluation, failed or not, frees its network and optimizer by reference counting
alone: on the CPU the evaluator calls no gc.collect() per candidate (a fixed cost of 0.1 to 0.5 s with torch
loaded), so a reference cycle would keep every network's memory until Python's collector
runs."""
import gc
import weakref

from nord import NeuralDescriptor
from nord.data import Digits
from nord.evaluators.callbacks import TrainingCallback
from nord.evaluators.local import LocalEvaluator


class Watch(TrainingCallback):
    """Keeps weak references to the model, its parameters and the optimizer."""

    name = "watch"

    def __init__(self):
        self.refs = []

    def on_epoch_end(self, state):
        self.refs = [weakref.ref(state.model), weakref.ref(state.optimizer),
                     *(weakref.ref(p) for p in state.model.parameters())]
        return {}


def test_the_network_and_optimizer_are_freed_when_the_evaluation_ends():
    descriptor = NeuralDescriptor()
    descriptor.add_layer_sequential("conv2d", {"out_channels": 4, "kernel_size": 3})
    descriptor.add_layer_sequential("relu")
    watch = Watch()
    evaluator = LocalEvaluator(curator=Digits(seed=0), epochs=1, device="cpu", threads=1,
                               callbacks=[lambda: watch])
    # the first estimate in a process imports torch's meta kernels, whose import keeps that
    # call's frames (and so its first network) until the collector runs: warm up first
    assert evaluator.descriptor_evaluate(descriptor).ok
    enabled = gc.isenabled()
    gc.disable()
    try:
        result = evaluator.descriptor_evaluate(descriptor)
        assert result.ok, result.error
        assert watch.refs and all(ref() is None for ref in watch.refs)
    finally:
        if enabled:
            gc.enable()


class Failing(Watch):
    """Keeps the weak references, then fails the candidate (under strict_callbacks)."""

    name = "failing"

    def on_epoch_end(self, state):
        super().on_epoch_end(state)
        raise RuntimeError("a bug in a metric")


def test_a_failed_candidates_network_is_freed_without_the_collector():
    """The traceback of a failure holds the training's frames; clearing them frees the
    network at once, so no gc.collect() (0.1 s a failure) is needed on the CPU."""
    descriptor = NeuralDescriptor()
    descriptor.add_layer_sequential("conv2d", {"out_channels": 4, "kernel_size": 3})
    descriptor.add_layer_sequential("relu")
    failing = Failing()
    evaluator = LocalEvaluator(curator=Digits(seed=0), epochs=1, device="cpu", threads=1,
                               callbacks=[lambda: failing], strict_callbacks=True)
    assert not evaluator.descriptor_evaluate(descriptor).ok   # warm up, as above
    collections = []

    def count(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    enabled = gc.isenabled()
    gc.disable()
    gc.callbacks.append(count)
    try:
        result = evaluator.descriptor_evaluate(descriptor)
        assert result.status == "failed" and "a bug in a metric" in result.error
        assert failing.refs and all(ref() is None for ref in failing.refs)
        assert collections == []   # freed by reference counting: the collector never ran
    finally:
        gc.callbacks.remove(count)
        if enabled:
            gc.enable()
