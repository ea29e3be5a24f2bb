"""A zero-cost search on NAS-Bench-201: each cell scored by the packaged table's proxy, reported
by the benchmark's 200-epoch test accuracy, and named for what it is."""
import pytest

from nord.app.cli import main
from nord.app.settings import RunConfig
from nord.benchmarks.nasbench201 import BenchmarkEvaluator, NASBench201Space
from nord.benchmarks.nasbench201.proxy_evaluator import ProxyTableEvaluator
from nord.benchmarks.nasbench201.proxy_table import load_proxies
from nord.errors import ConfigurationError
from nord.evaluators.zero_cost import proxy_signal
from nord.journal import Journal


def test_nord_run_scores_cells_from_the_packaged_table_and_reports_their_test_accuracy(
        tmp_path, capsys):
    journal = tmp_path / "zc.db"
    assert main(["run", "--space", "nasbench201", "--evaluation", "zero-cost", "--proxy",
                 "synflow", "--dataset", "cifar100", "--budget", "30", "--seed", "3",
                 "--journal", str(journal)]) == 0
    out = capsys.readouterr().out
    assert ("synflow score, mapped into (0, 1) (not an accuracy; read from nord's packaged "
            "table)") in out
    scores = load_proxies().score("cifar100", "synflow")
    benchmark = BenchmarkEvaluator(dataset="cifar100")
    space = NASBench201Space()
    with Journal(journal) as record:
        evaluator = record.metadata()["evaluator"]
        rows = record.evaluations()
    assert (evaluator["evaluator"], evaluator["proxy"], evaluator["selection"]) == (
        "ProxyTableEvaluator", "synflow", "proxy")
    assert len(rows) == 30
    for row in rows:
        index = row["metrics"]["index"]
        assert row["metrics"]["proxy_score"] == scores[index]
        assert row["accuracy"] == proxy_signal(scores[index])
        looked_up = benchmark.evaluate_genome(tuple(row["genome"]))
        assert row["reported_accuracy"] == looked_up.reported_accuracy
        assert space.index(tuple(row["genome"])) == index


def test_a_proxy_the_table_does_not_hold_is_refused_saying_which_it_holds():
    with pytest.raises(ConfigurationError, match="give --proxy synflow or params or flops"):
        RunConfig(space="nasbench201", evaluation="zero-cost", proxy="snip")
    with pytest.raises(ConfigurationError, match="synflow, params, flops"):
        ProxyTableEvaluator("jacov")


def test_training_settings_are_refused_on_the_benchmark_for_zero_cost_too():
    with pytest.raises(ConfigurationError, match="--batch-size 32"):
        RunConfig(space="nasbench201", evaluation="zero-cost", batch_size=32)


def test_the_evaluator_scores_a_descriptor_as_it_scores_the_cell():
    evaluator = ProxyTableEvaluator("params", dataset="cifar10")
    space = NASBench201Space()
    genome = (3, 3, 4, 1, 3, 1)
    by_descriptor = evaluator.descriptor_evaluate(space.to_descriptor(genome))
    assert by_descriptor.ok
    assert by_descriptor.metrics["proxy_score"] == load_proxies().score("cifar10", "params")[
        space.index(genome)]
