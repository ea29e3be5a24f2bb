"""A finished evaluation frees its network and optimizer by reference counting alone: the
evaluator calls no gc.collect() per candidate (a fixed cost of 0.1 to 0.5 s with torch
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
