"""Evaluator.descriptor_evaluate: what it refuses before any bookkeeping."""
import pytest

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import ConfigurationError
from nord.evaluators.base import Evaluator
from nord.evaluators.result import EvaluationResult


class CountingEvaluator(Evaluator):
    def __init__(self):
        self.seen = []

    def _evaluate(self, descriptor):
        self.seen.append(descriptor)
        return EvaluationResult(accuracy=0.5)


@pytest.mark.parametrize("value", ["conv2d -> relu", None, {"format": "nord.descriptor/1"}])
def test_descriptor_evaluate_refuses_what_is_not_a_descriptor(value):
    evaluator = CountingEvaluator()
    with pytest.raises(ConfigurationError) as caught:
        evaluator.descriptor_evaluate(value)
    message = str(caught.value)
    assert "NeuralDescriptor" in message and type(value).__name__ in message
    assert "from_json" in message and evaluator.seen == []


def test_an_invalid_descriptor_is_still_a_failed_result():
    result = CountingEvaluator().descriptor_evaluate(NeuralDescriptor())
    assert result.status == "failed" and "EmptyDescriptorError" in result.error


def test_a_valid_descriptor_is_evaluated_with_its_hash():
    d = NeuralDescriptor()
    d.add_layer_sequential("relu")
    evaluator = CountingEvaluator()
    result = evaluator.descriptor_evaluate(d)
    assert result.accuracy == 0.5 and result.descriptor_hash == d.hash
    assert evaluator.seen == [d]


class LegRecorder(Evaluator):
    trains_in_legs = True

    def __init__(self):
        self.legs = []

    def _evaluate(self, descriptor, leg):
        self.legs.append(leg)
        return EvaluationResult(accuracy=0.5)


def relu():
    d = NeuralDescriptor()
    d.add_layer_sequential("relu")
    return d


def test_a_task_hands_its_leg_to_evaluate_as_an_argument():
    from nord.evaluators.base import Leg
    from nord.search.executors import Task
    d = relu()
    task = Task(0, (0,), d.hash, descriptor=d, epochs=3, resume_from="a.pt", checkpoint="b.pt")
    evaluator = LegRecorder()
    assert evaluator.evaluate_task(task).accuracy == 0.5
    assert evaluator.descriptor_evaluate(d).accuracy == 0.5
    assert evaluator.legs == [Leg(3, "a.pt", "b.pt", None), Leg()]


def test_an_evaluate_without_a_leg_is_still_called_with_the_descriptor_alone():
    from nord.search.executors import Task
    d = relu()
    evaluator = CountingEvaluator()
    evaluator.evaluate_task(Task(0, (0,), d.hash, descriptor=d, epochs=3))
    assert evaluator.seen == [d]
