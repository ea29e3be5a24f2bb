"""BenchmarkEvaluator: NAS-Bench-201 results by table look-up."""
import csv
import gzip
import math
import pickle
from importlib import resources

import pytest

from nord.benchmarks import (BenchmarkEvaluator, NASBench201Space, cell_to_descriptor,
                             genome_to_cell, load_table)
from nord.benchmarks.nasbench201.table import TABLE_FILE
from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import BenchmarkError
from nord.evaluators.base import Evaluator

KNOWN_GENOME = (3, 3, 4, 1, 3, 1)   # row 1
CLASSES = {"cifar10": 10, "cifar100": 100, "imagenet16": 120}


@pytest.fixture(scope="module")
def rows():
    """The packaged CSV read with the csv module alone, independently of nord's reader."""
    data = resources.files("nord.benchmarks.nasbench201").joinpath("data").joinpath(TABLE_FILE)
    with data.open("rb") as raw, gzip.open(raw, "rt", newline="") as text:
        return {row["arch"]: row for row in csv.DictReader(text)}


def expected_params(row, dataset):
    # the networks differ only in the classifier Linear(64, classes)
    return round(float(row["params_mb"]) * 1e6) + 65 * (CLASSES[dataset] - 10)


# --- construction -------------------------------------------------------------------------
def test_is_an_evaluator():
    assert isinstance(BenchmarkEvaluator(), Evaluator)


def test_default_dataset_is_cifar10():
    assert BenchmarkEvaluator().dataset == "cifar10"


@pytest.mark.parametrize("dataset", ["mnist", "cifar", "imagenet", "", None])
def test_unknown_dataset_lists_the_valid_names(dataset):
    with pytest.raises(BenchmarkError) as error:
        BenchmarkEvaluator(dataset=dataset)
    assert all(f"{name} (" in str(error.value) for name in CLASSES)
    assert "ImageNet16-120" in str(error.value)


# --- results ------------------------------------------------------------------------------
@pytest.mark.parametrize("dataset", sorted(CLASSES))
@pytest.mark.parametrize("genome", [KNOWN_GENOME, (2, 0, 1, 4, 3, 0), (4, 4, 4, 4, 4, 4)])
def test_descriptor_evaluate_reads_the_table(rows, dataset, genome):
    row = rows[genome_to_cell(genome)]
    result = BenchmarkEvaluator(dataset).descriptor_evaluate(NASBench201Space().decode(genome))
    assert result.ok, result.error
    assert result.accuracy == pytest.approx(float(row[f"{dataset}_valid_12ep"]) / 100)
    assert result.reported_accuracy == pytest.approx(float(row[f"{dataset}_test_200ep"]) / 100)
    assert result.n_params == expected_params(row, dataset)


def test_result_bookkeeping_fields():
    descriptor = cell_to_descriptor(KNOWN_GENOME)
    result = BenchmarkEvaluator().descriptor_evaluate(descriptor)
    assert ((result.status, result.error, result.epochs, result.train_time, result.eval_time) ==
        ("ok", "", 12, 0.0, 0.0))
    assert result.descriptor_hash == descriptor.hash


def test_a_genome_result_holds_every_field_a_keyword_result_would():
    """The evaluator builds its results positionally (they are built by the thousand): each
    field must land where its name says."""
    from nord.evaluators.result import EvaluationResult
    result = BenchmarkEvaluator().evaluate_genome(KNOWN_GENOME)
    expected = EvaluationResult(accuracy=result.accuracy, n_params=result.n_params, epochs=12,
                                reported_accuracy=result.reported_accuracy, train_time=0.0,
                                metrics=result.metrics)
    assert math.isnan(result.loss) and result.status == "ok"
    assert list(vars(result).items())[2:] == list(vars(expected).items())[2:]
    assert 0.0 < result.accuracy < 1.0 and 0.0 < result.reported_accuracy < 1.0
    assert result.n_params > 0 and result.metrics["index"] >= 0


def test_metrics_identify_the_row():
    metrics = BenchmarkEvaluator("cifar100").descriptor_evaluate(
        cell_to_descriptor(KNOWN_GENOME)).metrics
    assert ((metrics["index"], metrics["cell"], metrics["dataset"]) ==
        (1, genome_to_cell(KNOWN_GENOME), "cifar100"))
    assert metrics["test_accuracy_12ep"] == pytest.approx(0.5826)


def test_accuracies_are_fractions():
    result = BenchmarkEvaluator().evaluate_genome(KNOWN_GENOME)
    assert (result.accuracy, result.reported_accuracy) == (0.82834, 0.9366)
    assert result.fitness == pytest.approx(1 - 0.82834)
    assert result.final_accuracy == 0.9366


def test_json_round_tripped_descriptor_gives_the_same_result():
    descriptor = cell_to_descriptor(KNOWN_GENOME)
    evaluator = BenchmarkEvaluator()
    copied = NeuralDescriptor.from_json(descriptor.to_json())
    assert evaluator.descriptor_evaluate(copied) == evaluator.descriptor_evaluate(descriptor)


def test_fresh_descriptors_of_one_cell_give_the_same_result():
    evaluator = BenchmarkEvaluator()
    first = evaluator.descriptor_evaluate(cell_to_descriptor(KNOWN_GENOME))
    second = evaluator.descriptor_evaluate(cell_to_descriptor(KNOWN_GENOME))
    assert first == second


def test_wider_cells_are_the_same_table_row():
    evaluator = BenchmarkEvaluator()
    narrow = evaluator.descriptor_evaluate(cell_to_descriptor(KNOWN_GENOME, channels=16))
    wide = evaluator.descriptor_evaluate(cell_to_descriptor(KNOWN_GENOME, channels=64))
    assert wide.metrics["index"] == narrow.metrics["index"] == 1
    assert wide.descriptor_hash != narrow.descriptor_hash


def test_disconnected_cell_is_an_ordinary_result():
    result = BenchmarkEvaluator().descriptor_evaluate(cell_to_descriptor((3, 0, 0, 0, 0, 0)))
    assert result.ok
    assert (result.accuracy, result.reported_accuracy) == (0.09712, 0.1)


def test_descriptor_that_is_not_a_cell_is_a_failed_result():
    descriptor = NeuralDescriptor()
    descriptor.add_layer_sequential("conv2d", {"out_channels": 8, "kernel_size": 3})
    result = BenchmarkEvaluator().descriptor_evaluate(descriptor)
    assert result.status == "failed"
    assert "BenchmarkError" in result.error and "not a NAS-Bench-201 cell" in result.error
    assert result.descriptor_hash == descriptor.hash


# --- fast paths ---------------------------------------------------------------------------
def test_query_by_index_cell_genome_and_descriptor_agree():
    evaluator = BenchmarkEvaluator("imagenet16")
    cell = genome_to_cell(KNOWN_GENOME)
    results = [evaluator.query(key) for key in (1, cell, KNOWN_GENOME, list(KNOWN_GENOME),
                                                cell_to_descriptor(cell))]
    assert all(result == results[0] for result in results)
    assert results[0].descriptor_hash == ""


def test_fast_path_equals_descriptor_path_but_for_the_hash():
    evaluator = BenchmarkEvaluator("cifar100")
    slow = evaluator.descriptor_evaluate(cell_to_descriptor(KNOWN_GENOME))
    fast = evaluator.evaluate_genome(KNOWN_GENOME)
    fast.descriptor_hash = slow.descriptor_hash
    assert fast == slow


@pytest.mark.parametrize("genome, fragment", [((0, 1, 2), "has 6 values"),
                                              ((0, 1, 2, 3, 4, 5), "operation index"),
                                              ((0, 1, 2, 3, 4, 0.5), "whole number")])
def test_evaluate_genome_rejects_invalid_genomes(genome, fragment):
    with pytest.raises(BenchmarkError, match=fragment):
        BenchmarkEvaluator().evaluate_genome(genome)


def test_query_rejects_invalid_cell_string():
    with pytest.raises(BenchmarkError, match="unknown operation 'conv'"):
        BenchmarkEvaluator().query("|conv~0|+|none~0|none~1|+|none~0|none~1|none~2|")


def test_every_row_is_reachable_and_finite():
    evaluator = BenchmarkEvaluator()
    results = [evaluator.query(index) for index in range(len(load_table()))]
    assert all(0 < r.accuracy < 1 and 0 < r.reported_accuracy < 1 and r.n_params > 0
               for r in results)
    assert not any(math.isnan(r.accuracy) for r in results)


def test_engine_tasks_are_looked_up_by_their_key_without_a_descriptor():
    from nord.benchmarks.nasbench201 import NASBench201Space
    from nord.search.executors import Task
    space = NASBench201Space()
    key, descriptor = space.identify(KNOWN_GENOME)
    assert (key, descriptor) == (1, None)
    task = Task(0, KNOWN_GENOME, key, space)
    result = BenchmarkEvaluator().evaluate_task(task)
    assert result.metrics["index"] == 1 and not task.decoded
    assert result.accuracy == BenchmarkEvaluator().evaluate_genome(KNOWN_GENOME).accuracy


def test_a_task_of_another_space_is_read_from_its_descriptor():
    from nord.search.executors import Task
    task = Task(0, (9,), "some key", descriptor=cell_to_descriptor((0,) * 6))
    result = BenchmarkEvaluator().evaluate_task(task)
    assert result.metrics["index"] == load_table().index((0,) * 6)


# --- the same cell, built as a network ----------------------------------------------------
@pytest.mark.parametrize("genome", [KNOWN_GENOME, (0,) * 6, (1,) * 6, (2,) * 6, (4,) * 6])
def test_cell_descriptor_builds_and_runs_as_a_network(genome):
    try:
        import torch

        from nord.nn.network import NeuralNet
    except ImportError as error:
        pytest.skip(f"nord.nn.network (NeuralNet) cannot be imported yet: {error}")
    net = NeuralNet(cell_to_descriptor(genome), input_shape=(16, 8, 8), num_classes=10)
    logits = net(torch.randn(2, 16, 8, 8))
    assert logits.shape == (2, 10)
    assert torch.isfinite(logits).all()


def test_cell_network_has_the_benchmark_operations():
    """ReLU-conv-BN without conv bias (as in NAS-Bench-201), and average pooling that does
    not count padding."""
    try:
        from nord.nn.network import NeuralNet
    except ImportError as error:
        pytest.skip(f"nord.nn.network (NeuralNet) cannot be imported yet: {error}")
    net = NeuralNet(cell_to_descriptor((3, 2, 4, 3, 2, 4)), input_shape=(16, 8, 8),
                    num_classes=10)
    per_edge = {name: sum(p.numel() for p in module.parameters())
                for name, module in net.layer_modules.items() if name.startswith("edge")}
    assert per_edge == {"edge_0_1": 16 * 16 * 9 + 32, "edge_0_2": 16 * 16 + 32, "edge_1_2": 0,
                        "edge_0_3": 16 * 16 * 9 + 32, "edge_1_3": 16 * 16 + 32, "edge_2_3": 0}
    assert net.layer_modules["edge_1_2"].count_include_pad is False


def test_pickled_evaluator_is_small_and_answers_the_same():
    evaluator = BenchmarkEvaluator("cifar100")
    before = evaluator.evaluate_genome(KNOWN_GENOME)
    payload = pickle.dumps(evaluator)
    assert len(payload) < 1000
    assert pickle.loads(payload).evaluate_genome(KNOWN_GENOME) == before
