"""A tiny network and evaluator for the tests of callbacks and stopping rules."""
from nord import NeuralDescriptor
from nord.evaluators.local import LocalEvaluator


def net(width=4):
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {"out_channels": width, "kernel_size": 3}, "conv")
    d.add_layer_sequential("relu", name="relu")
    d.add_layer_sequential("dropout", {"p": 0.3}, "drop")   # draws random numbers
    return d


def evaluator(digits, callbacks=(), epochs=2, **kwargs):
    return LocalEvaluator(curator=digits, epochs=epochs, seed=1, batch_size=64,
                          data_fraction=0.25, device="cpu", callbacks=list(callbacks), **kwargs)


def figures(result):
    return (result.status, result.accuracy, result.loss, result.reported_accuracy,
            result.metrics["train_loss"])
