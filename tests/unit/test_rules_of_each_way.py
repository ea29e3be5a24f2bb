"""The rules of a run's configuration that depend on how it evaluates candidates are answered
by its way (nord.app.evaluation): each refusal in the way's own words, in the order RunConfig
asks, and a way added as one class is held to them like the built-in ones."""
import pytest

import nord.app.evaluation
from nord.app.evaluation import (Evaluation, Scoring, Training, evaluation_of,
                                 list_evaluations, register_way)
from nord.app.settings import RunConfig
from nord.errors import BenchmarkError, ConfigurationError

TRAINING = ["local", "data-parallel", "distributed"]


def refusal(**settings) -> str:
    """What RunConfig says on refusing ``settings``."""
    with pytest.raises(ConfigurationError) as refused:
        RunConfig(**settings)
    return str(refused.value)


# --- choosing the way -------------------------------------------------------------------------
def test_an_unknown_evaluation_is_refused_listing_the_registered_ones_in_their_order():
    assert refusal(evaluation="remote") == (
        "evaluation must be one of local, data-parallel, distributed, benchmark, zero-cost, "
        "weight-sharing, supernet; got 'remote'")
    assert list_evaluations() == ["local", "data-parallel", "distributed", "benchmark",
                                  "zero-cost", "weight-sharing", "supernet"]


@pytest.mark.parametrize("space, evaluation, dataset", [
    ("conv", "local", "digits"), ("nasbench201", "benchmark", "cifar10")])
def test_a_run_that_names_no_evaluation_or_data_set_gets_its_space_s(space, evaluation,
                                                                       dataset):
    config = RunConfig(space=space)
    assert (config.evaluation, config.dataset) == (evaluation, dataset)


def test_a_table_s_data_sets_are_named_as_the_benchmark_names_them():
    assert RunConfig(space="nasbench201", dataset="CIFAR-100").dataset == "cifar100"
    with pytest.raises(BenchmarkError, match="unknown NAS-Bench-201 data set 'mnist'"):
        RunConfig(space="nasbench201", dataset="mnist")


# --- the space rule ---------------------------------------------------------------------------
def test_the_benchmark_is_refused_on_a_space_its_table_does_not_hold():
    assert refusal(evaluation="benchmark", space="conv") == (
        "evaluation='benchmark' looks results up in the NAS-Bench-201 table, which holds only "
        "its cells; got space='conv': give --space nasbench201, or an evaluation that trains "
        "or scores networks")


@pytest.mark.parametrize("evaluation", TRAINING)
def test_the_nasbench201_space_is_refused_to_a_way_that_builds_networks(evaluation):
    assert refusal(evaluation=evaluation, space="nasbench201") == (
        "the NAS-Bench-201 space (space='nasbench201') is looked up in the benchmark's table "
        "(evaluation='benchmark') or scored by a zero-cost proxy from nord's packaged table "
        f"(evaluation='zero-cost'); got evaluation={evaluation!r}")


# --- what a way that trains nothing refuses ---------------------------------------------------
def test_a_table_refuses_every_setting_of_training_it_is_given_naming_their_values():
    assert refusal(space="nasbench201", epochs=3, lr=0.1) == (
        "--epochs 3, --lr 0.1 set(s) how candidates are trained, but a NAS-Bench-201 run looks "
        "results up in the benchmark's table (its networks were trained once, by the "
        "benchmark's authors, with its own split and settings); leave them out")


@pytest.mark.parametrize("space", ["conv", "nasbench201"])
def test_zero_cost_refuses_settings_of_training_on_either_space(space):
    assert refusal(evaluation="zero-cost", space=space, lr=0.1, callbacks=["grad_norm"]) == (
        "--lr, --callbacks set(s) how candidates are trained, but --evaluation zero-cost "
        "scores untrained networks; drop them")


@pytest.mark.parametrize("space", ["conv", "nasbench201"])
def test_zero_cost_refuses_stop_rules(space):
    assert refusal(evaluation="zero-cost", space=space, stop_when=["train_loss > 0"]) == (
        "--stop-when ends training early, but evaluation='zero-cost' trains nothing; drop "
        "--stop-when")


def test_the_benchmark_refuses_callbacks_in_its_own_words():
    assert refusal(space="nasbench201", callbacks=["grad_norm"]) == (
        "--callbacks look inside training, but NAS-Bench-201 runs look results up and train "
        "nothing; drop --callbacks")


def test_the_benchmark_refuses_a_scheduler():
    assert refusal(space="nasbench201", scheduler="asha") == (
        "a scheduler stops training early, but evaluation='benchmark' looks results up in the "
        "NAS-Bench-201 table: there is no training to stop. Run the benchmark without "
        "--scheduler")


def test_the_benchmark_refuses_an_algorithm_that_runs_only_under_a_scheduler():
    assert refusal(space="nasbench201", algorithm="asha") == (
        "the asha algorithm runs only under --scheduler asha, which trains candidates in legs, "
        "but a NAS-Bench-201 run looks results up; compare it on the table with nord compare "
        "--algorithms asha (its multi-fidelity protocol: docs/comparisons.md)")


def test_zero_cost_leaves_an_algorithm_that_runs_only_under_a_scheduler_to_ask_for_one():
    assert "--scheduler" in refusal(evaluation="zero-cost", algorithm="asha")
    assert "nord compare" not in refusal(evaluation="zero-cost", algorithm="asha")


def test_scoring_asked_directly_refuses_a_scheduler_and_callbacks_as_training():
    """Its proxy rule refuses them first in a RunConfig; asked alone, it still does."""
    way = evaluation_of(RunConfig(evaluation="zero-cost"))
    way.config.callbacks = ["grad_norm"]
    with pytest.raises(ConfigurationError, match="'zero-cost' trains nothing: there is no "
                                                 "training to stop; drop --scheduler"):
        way.check_scheduler()
    with pytest.raises(ConfigurationError, match="'zero-cost' trains nothing; drop --callbacks"):
        way.check_callbacks()


# --- --workers --------------------------------------------------------------------------------
@pytest.mark.parametrize("settings, why", [
    ({"space": "nasbench201"}, "evaluation='benchmark' looks results up in a table, which takes "
                               "microseconds: run it without --workers"),
    ({"evaluation": "zero-cost"}, "evaluation='zero-cost' scores untrained networks, a fraction "
                                  "of a second each: run it without --workers (under mpirun, "
                                  "ranks score side by side)"),
    ({"evaluation": "data-parallel"}, "evaluation='data-parallel' trains each network on "
                                      "several MPI ranks: launch it with mpirun instead of "
                                      "--workers"),
    ({"evaluation": "distributed"}, "evaluation='distributed' trains each network on several "
                                    "MPI ranks: launch it with mpirun instead of --workers"),
])
def test_workers_are_refused_where_they_cannot_evaluate_saying_why(settings, why):
    assert refusal(worker_processes=2, **settings) == (
        "--workers runs candidates side by side in worker processes, each training its own "
        f"network; {why}")


def test_workers_are_taken_by_a_run_that_trains_each_network_on_one_rank():
    assert RunConfig(worker_processes=1).worker_processes == 1


# --- the order of the rules -------------------------------------------------------------------
def test_a_proxy_given_to_a_way_without_one_is_refused_before_the_space():
    assert refusal(evaluation="benchmark", space="conv", proxy="synflow").startswith(
        "--proxy synflow chooses the zero-cost proxy")


def test_the_space_is_refused_before_the_data_set_and_training_settings():
    assert refusal(evaluation="local", space="nasbench201", dataset="cifar100",
                   epochs=3).startswith("the NAS-Bench-201 space")


def test_a_proxy_the_table_does_not_hold_is_refused_before_its_unused_settings():
    assert refusal(evaluation="zero-cost", space="nasbench201", proxy="snip",
                   batch_size=32).startswith("--proxy snip scores a network on a batch")


# --- a new way is one class -------------------------------------------------------------------
class Distillation(Training):
    """Each candidate learns from a teacher's outputs, which worker processes do not load."""

    workers_refusal = "learns from a teacher that worker processes do not load: drop --workers"


class Oracle(Evaluation):
    """A way with nothing but the defaults of Evaluation."""


@pytest.fixture
def ways(monkeypatch):
    """The registry of ways, restored after the test."""
    monkeypatch.setattr(nord.app.evaluation, "_WAYS",
                        {name: list(classes)
                         for name, classes in nord.app.evaluation._WAYS.items()})


def test_a_way_registered_as_one_class_is_chosen_by_its_name_and_listed(ways):
    register_way("distillation", Distillation)
    config = RunConfig(evaluation="distillation", epochs=2)
    assert type(evaluation_of(config)) is Distillation
    assert config.to_dict()["evaluation"] == "distillation"
    assert list_evaluations()[-1] == "distillation"
    assert "zero-cost, weight-sharing, supernet, distillation; got 'distil'" in refusal(evaluation="distil")


def test_a_registered_way_is_held_to_the_rules_it_inherits_and_to_its_own(ways):
    register_way("distillation", Distillation)
    assert refusal(evaluation="distillation", worker_processes=2).endswith(
        "evaluation='distillation' learns from a teacher that worker processes do not load: "
        "drop --workers")
    assert "evaluation='distillation' trains each network on one rank; drop --group-size" in (
        refusal(evaluation="distillation", group_size=2))
    assert "got evaluation='distillation'" in refusal(evaluation="distillation",
                                                      space="nasbench201")
    assert "evaluation is 'distillation', which trains or looks them up" in refusal(
        evaluation="distillation", proxy="synflow")


def test_a_way_of_defaults_alone_refuses_workers_which_train_as_local_does(ways):
    register_way("oracle", Oracle)
    assert refusal(evaluation="oracle", worker_processes=1).endswith(
        "evaluation='oracle' evaluates them otherwise: run it without --workers")
    assert "evaluation='oracle' evaluates each network on one rank" in refusal(
        evaluation="oracle", group_size=2)


def test_a_name_may_hold_a_way_for_a_table_space_beside_one_for_every_other(ways):
    """Like zero-cost: scored on the conv space, read from a table on NAS-Bench-201's."""
    assert type(evaluation_of(RunConfig(evaluation="zero-cost"))) is Scoring
    register_way("distillation", Distillation)
    register_way("distillation", nord.app.evaluation.ProxyTableLookup)
    config = RunConfig(evaluation="distillation", space="nasbench201")
    assert type(evaluation_of(config)) is nord.app.evaluation.ProxyTableLookup
    assert type(evaluation_of(RunConfig(evaluation="distillation"))) is Distillation


def test_only_evaluation_subclasses_register_as_ways(ways):
    with pytest.raises(ConfigurationError, match="only Evaluation subclasses"):
        register_way("plain", object)


def test_a_way_in_a_plug_in_file_is_registered_before_the_run_names_it(ways, tmp_path,
                                                                       monkeypatch):
    (tmp_path / "my_way_plugin.py").write_text(
        "from nord.app.evaluation import Training, register_way\n\n"
        "class Patient(Training):\n    workers_refusal = 'waits: run it without --workers'\n\n"
        "register_way('patient', Patient)\n")
    monkeypatch.chdir(tmp_path)
    config = RunConfig(plugins="./my_way_plugin.py", evaluation="patient")
    assert type(evaluation_of(config)).__name__ == "Patient"
    assert refusal(evaluation="patient", worker_processes=1).endswith(
        "evaluation='patient' waits: run it without --workers")
