"""ZeroCostEvaluator and 'nord run --evaluation zero-cost --proxy NAME': the score as the
search signal, failures as results, seeding, and the refusals before a run starts."""
import math

import pytest
import torch

from nord.app.cli import main
from nord.app.settings import RunConfig
from nord.architecture.descriptor import NeuralDescriptor
from nord.data import TensorCurator
from nord.errors import ConfigurationError
from nord.evaluators.zero_cost import ZeroCostEvaluator, proxy_signal
from nord.journal import Journal
from nord.nn.network import NeuralNet
from nord.nn.proxies import score


def curator(identical=False, size=40):
    generator = torch.Generator().manual_seed(0)
    images = torch.randn((size, 1, 8, 8), generator=generator)
    if identical:
        images = images[:1].repeat(size, 1, 1, 1)
    labels = torch.arange(size) % 4
    return TensorCurator(images, labels, images, labels)


def conv_net(channels=4):
    descriptor = NeuralDescriptor()
    descriptor.add_layer_sequential("conv2d", {"out_channels": channels, "kernel_size": 3})
    descriptor.add_layer_sequential("batch_norm2d", None)
    descriptor.add_layer_sequential("relu", None)
    return descriptor


def test_the_signal_is_the_score_mapped_into_0_1_and_no_accuracy_is_reported():
    data = curator()
    result = ZeroCostEvaluator("synflow", curator=data, device="cpu", seed=3) \
        .descriptor_evaluate(conv_net())
    torch.manual_seed(3)
    net = NeuralNet(conv_net(), data.input_shape, data.num_classes)
    expected = score("synflow", net, torch.zeros((1,) + tuple(data.input_shape)))
    assert result.ok and result.metrics == {"proxy": "synflow", "proxy_score": expected}
    assert result.accuracy == proxy_signal(expected) and 0 < result.accuracy < 1
    assert math.isnan(result.reported_accuracy) and result.epochs == 0
    assert result.eval_time > 0 and result.n_params == net.count_parameters()


def test_proxy_signal_keeps_the_order_of_scores_fifty_orders_of_magnitude_apart():
    scores = [-1e6, -3.0, 0.0, 1e-3, 2.0, 1e10, 1e30, 1.01e30, 1e50, 1e300]
    signals = [proxy_signal(value) for value in scores]
    assert all(0 < s < 1 for s in signals)
    assert all(a < b for a, b in zip(signals, signals[1:]))


@pytest.mark.parametrize("proxy", ["synflow", "snip", "nwot"])
def test_the_same_seed_gives_the_same_score_and_another_seed_another(proxy):
    data = curator()
    scores = [ZeroCostEvaluator(proxy, curator=data, device="cpu", seed=seed)
              .descriptor_evaluate(conv_net()).metrics["proxy_score"] for seed in (0, 0, 1)]
    assert scores[0] == scores[1] != scores[2]


def test_a_better_network_by_the_proxy_has_a_lower_fitness():
    data = curator()
    evaluator = ZeroCostEvaluator("params", curator=data, device="cpu")
    small, large = (evaluator.descriptor_evaluate(conv_net(c)) for c in (2, 8))
    assert large.metrics["proxy_score"] > small.metrics["proxy_score"]
    assert large.fitness < small.fitness < 1


def test_a_proxy_that_cannot_be_computed_is_a_failed_result_with_the_reason():
    result = ZeroCostEvaluator("nwot", curator=curator(identical=True), device="cpu") \
        .descriptor_evaluate(conv_net())
    assert result.status == "failed" and "singular" in result.error
    assert result.fitness == 2.0


def test_bad_settings_are_refused_when_the_evaluator_is_made():
    with pytest.raises(ConfigurationError, match="synflow, snip, grasp"):
        ZeroCostEvaluator("accuracy")
    with pytest.raises(ConfigurationError, match="batch_size"):
        ZeroCostEvaluator("snip", batch_size=0)


# --- the run's configuration and the command line ---------------------------------------------
def test_a_zero_cost_run_defaults_to_synflow_and_records_the_proxy():
    config = RunConfig(evaluation="zero-cost")
    assert config.proxy == "synflow" and config.measured()["proxy"] == "synflow"
    assert "proxy" not in RunConfig().measured()   # older journals resume unchanged


@pytest.mark.parametrize("settings, words", [
    ({"evaluation": "zero-cost", "proxy": "synflo"}, "must be one of synflow, snip"),
    ({"proxy": "snip"}, "add --evaluation zero-cost"),
    ({"evaluation": "zero-cost", "callbacks": ["grad_norm"]}, "--callbacks set"),
    ({"evaluation": "zero-cost", "epochs": 3}, "--epochs set.*untrained"),
])
def test_a_wrong_proxy_setting_is_refused_before_the_run(settings, words):
    with pytest.raises(ConfigurationError, match=words):
        RunConfig(**settings)


def test_nord_run_refuses_an_unknown_proxy_naming_the_valid_ones(tmp_path, capsys):
    code = main(["run", "--evaluation", "zero-cost", "--proxy", "accuracy",
                 "--journal", str(tmp_path / "z.db")])
    assert code != 0
    assert "synflow, snip, grasp, fisher, grad_norm, jacov, nwot, params, flops" in \
        capsys.readouterr().err
    assert not (tmp_path / "z.db").exists()


def test_nord_run_searches_with_a_proxy_and_journals_its_scores(tmp_path):
    journal = tmp_path / "zc.db"
    assert main(["run", "--evaluation", "zero-cost", "--proxy", "params", "--budget", "4",
                 "--device", "cpu", "--journal", str(journal)]) == 0
    with Journal(journal) as opened:
        rows = opened.evaluations()
    assert len(rows) == 4 and all(row["status"] == "ok" for row in rows)
    assert all(row["metrics"]["proxy"] == "params" for row in rows)
    assert all(row["accuracy"] == pytest.approx(proxy_signal(row["metrics"]["proxy_score"]))
               for row in rows)
