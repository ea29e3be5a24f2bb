"""DatasetTable: a comparison's data set, resolved once and handed on to every run."""
import pickle

import numpy as np
import pytest

from nord.benchmarks.nasbench201 import load_table
from nord.benchmarks.nasbench201.evaluator import signal_costs
from nord.comparisons.compare import benchmark_evaluator, run_comparison, run_seed
from nord.comparisons.dataset_table import DatasetTable
from nord.comparisons.hardware import latency_limit
from nord.errors import BenchmarkError


def test_every_name_of_a_data_set_gives_its_one_table():
    table = DatasetTable.of("ImageNet16-120")
    assert table.name == "imagenet16"
    assert DatasetTable.of("imagenet16") is table
    assert DatasetTable.of(table) is table


def test_an_unknown_data_set_is_refused_with_the_valid_names():
    with pytest.raises(BenchmarkError, match="valid data sets are cifar10 .*imagenet16"):
        DatasetTable.of("mnist")


def test_a_table_travels_to_another_process_by_name():
    table = DatasetTable.of("cifar100")
    table.evaluator.evaluate_genome((0,) * 6)
    sent = pickle.dumps(table)
    assert len(sent) < 200                      # no copy of the table's values
    assert pickle.loads(sent) is table          # the receiving process's own table


def test_the_evaluator_is_shared_by_every_run_of_the_data_set():
    table = DatasetTable.of("cifar10")
    assert table.evaluator is benchmark_evaluator("cifar-10")
    assert table.evaluator.dataset == "cifar10"


def test_the_values_are_the_packaged_tables_of_that_data_set():
    table = DatasetTable.of("cifar100")
    arrays = load_table().arrays("cifar100")
    assert table.arrays.reported_accuracy is arrays.reported_accuracy
    assert table.cells[1] == load_table().cells[1]
    for signal in ("valid12", "valid200"):
        costs = table.costs(signal)
        assert costs.tolist() == list(signal_costs("cifar100", signal))
        assert not costs.flags.writeable and table.costs(signal) is costs


def test_a_seed_runs_the_same_from_a_name_or_its_table():
    table = DatasetTable.of("cifar100")
    assert run_seed("rea", table, 20, seed=3) == run_seed("rea", "CIFAR-100", 20, seed=3)


def test_a_latency_limit_is_refused_on_a_data_set_without_latencies():
    with pytest.raises(BenchmarkError, match="data set 'imagenet16' has none"):
        latency_limit(10.0, "pixel3", DatasetTable.of("imagenet16"))
    with pytest.raises(BenchmarkError, match="data set 'imagenet16' has none"):
        run_comparison("imagenet16", "random", budget=10, seeds=1, max_latency_ms=10.0,
                       latency_device="pixel3")


def test_a_comparison_names_its_data_set_as_the_benchmark_does():
    result = run_comparison("CIFAR-100", "random", budget=10, seeds=1)
    assert result.dataset == "cifar100"
    assert np.isfinite(result.values("random")).all()
