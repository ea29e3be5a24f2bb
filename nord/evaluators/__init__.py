"""Evaluators: what a candidate network scores, and how it is trained to get there.

    from nord.evaluators import LocalEvaluator
    result = LocalEvaluator(curator=Digits(), epochs=2).descriptor_evaluate(descriptor)

:class:`Evaluator` is the base class to extend (its docstring shows a minimal subclass);
:class:`EvaluationResult` is the one result record. The torch-based evaluators load on first
use, so importing this package stays light.
"""
from nord.evaluators.base import Evaluator, Leg
from nord.evaluators.result import EpochRecord, EvaluationResult
from nord.lazy import lazy_exports

_LAZY = {
    "LocalEvaluator": "nord.evaluators.local",
    "NeuralEvaluator": "nord.evaluators.local",
    "DistributedEvaluator": "nord.evaluators.distributed",
    "ZeroCostEvaluator": "nord.evaluators.zero_cost",
    "TrainingCallback": "nord.evaluators.callbacks",
    "CALLBACKS": "nord.evaluators.callbacks",
}

__all__ = ["Evaluator", "Leg", "EvaluationResult", "EpochRecord", *_LAZY]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
