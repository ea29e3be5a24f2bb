"""Evaluators: what a candidate network scores, and how it is trained to get there.

    from nord.evaluators import LocalEvaluator
    result = LocalEvaluator(curator=Digits(), epochs=2).descriptor_evaluate(descriptor)

:class:`Evaluator` is the base class to extend (its docstring shows a minimal subclass);
:class:`EvaluationResult` is the one result record. The torch-based evaluators load on first
use, so importing this package stays light.
"""
import importlib

from nord.evaluators.base import Evaluator, Leg
from nord.evaluators.result import EpochRecord, EvaluationResult

_LAZY = {
    "LocalEvaluator": "nord.evaluators.local",
    "NeuralEvaluator": "nord.evaluators.local",
    "DistributedEvaluator": "nord.evaluators.distributed",
    "TrainingCallback": "nord.evaluators.callbacks",
    "CALLBACKS": "nord.evaluators.callbacks",
}

__all__ = ["Evaluator", "Leg", "EvaluationResult", "EpochRecord", *_LAZY]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__():
    return sorted(__all__)
