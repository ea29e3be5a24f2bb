"""The ways a run evaluates its candidates: each is chosen once from the configuration and
answers for itself how ranks make groups, whether data is loaded and how a resume relaunches."""
import pytest

import nord.data.registry
from nord.app.evaluation import (DataParallelTraining, GroupTraining, ProxyTableLookup,
                                 Scoring, TableLookup, Training, evaluation_of)
from nord.app.settings import RunConfig
from nord.errors import ConfigurationError


@pytest.mark.parametrize("settings, way", [
    ({}, Training),
    ({"evaluation": "data-parallel"}, DataParallelTraining),
    ({"evaluation": "distributed", "group_size": 2}, GroupTraining),
    ({"space": "nasbench201"}, TableLookup),
    ({"evaluation": "zero-cost"}, Scoring),
    ({"space": "nasbench201", "evaluation": "zero-cost"}, ProxyTableLookup),
])
def test_each_evaluation_has_its_way(settings, way):
    assert type(evaluation_of(RunConfig(**settings))) is way


def test_only_the_ways_that_train_or_score_load_the_data():
    loads = {name: evaluation_of(RunConfig(**settings)).needs_data for name, settings in {
        "training": {}, "scoring": {"evaluation": "zero-cost"},
        "table": {"space": "nasbench201"},
        "proxy table": {"space": "nasbench201", "evaluation": "zero-cost"}}.items()}
    assert loads == {"training": True, "scoring": True, "table": False, "proxy table": False}


@pytest.mark.parametrize("settings, world_size, ranks", [
    ({}, 4, 1),
    ({"evaluation": "zero-cost"}, 4, 1),
    ({"evaluation": "data-parallel"}, 4, 4),
    ({"space": "nasbench201"}, 4, 1),
    ({"evaluation": "distributed", "group_size": 2}, 4, 2),
    ({"evaluation": "distributed", "group_size": 4}, 3, 3),   # no more than the ranks
])
def test_ranks_per_network(settings, world_size, ranks):
    assert evaluation_of(RunConfig(**settings)).ranks_per_network(world_size) == ranks


@pytest.mark.parametrize("settings, why", [
    ({}, "'local' trains each network on one rank"),
    ({"evaluation": "data-parallel"}, "trains each network on all the ranks of the launch"),
    ({"space": "nasbench201"}, "'benchmark' looks results up in a table"),
    ({"evaluation": "zero-cost"}, "scores each untrained network on one rank"),
])
def test_a_group_size_is_refused_where_no_group_trains_a_network(settings, why):
    """Under mpirun it used to end every rank with a traceback; with data-parallel it was
    recorded beside a run that trained on all ranks."""
    with pytest.raises(ConfigurationError) as refused:
        RunConfig(group_size=2, **settings)
    assert why in str(refused.value)
    assert "drop --group-size, or use --evaluation distributed" in str(refused.value)


@pytest.mark.parametrize("world_size, refused", [(1, True), (2, True), (3, False), (4, True),
                                                 (5, False)])
def test_a_run_of_groups_resumes_only_under_a_launch_that_makes_them(world_size, refused):
    way = evaluation_of(RunConfig(evaluation="distributed", group_size=2))
    refusal = way.launch_refusal(world_size)
    assert (refusal is not None) == refused
    if refused:
        assert refusal.endswith("resume it under mpirun -np 3 (rank 0 dispatches; or 1 + any "
                                "multiple of 2)")
    assert evaluation_of(RunConfig(evaluation="distributed")).launch_refusal(world_size) is None
    assert evaluation_of(RunConfig(evaluation="data-parallel")).launch_refusal(world_size) is None


def test_groups_of_several_ranks_leave_rank_0_to_dispatch_under_a_launcher(monkeypatch):
    way = evaluation_of(RunConfig(evaluation="distributed", group_size=2))
    assert not way.dedicated_root()   # one process: nothing to dispatch to
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "5")
    assert way.dedicated_root() and way.ranks_per_network(5) == 2
    assert not evaluation_of(RunConfig(evaluation="distributed")).dedicated_root()


def test_groups_that_do_not_split_the_training_ranks_are_refused_with_launches_that_fit():
    way = evaluation_of(RunConfig(evaluation="distributed", group_size=2))
    way.check_layout(5)   # rank 0 dispatches, two groups of two
    with pytest.raises(ConfigurationError) as refused:
        way.check_layout(4)
    assert "--group-size 2 does not divide the 3 ranks" in str(refused.value)
    assert "mpirun -np 3 or -np 5" in str(refused.value)
    evaluation_of(RunConfig(evaluation="distributed")).check_layout(4)   # groups of one


@pytest.mark.parametrize("settings, ranks, launch", [
    ({"evaluation": "data-parallel"}, 4, "mpirun -np 4"),
    ({"evaluation": "data-parallel"}, 1, "one process, without mpirun"),
    ({"evaluation": "distributed", "group_size": 2}, 2, "mpirun -np 3 (rank 0 dispatches"),
    ({"evaluation": "distributed"}, 1, "groups of one rank (--group-size 1)"),
])
def test_a_resume_is_told_the_launch_that_trains_as_the_run_did(settings, ranks, launch):
    assert launch in evaluation_of(RunConfig(**settings)).launch_for(ranks)


def test_only_a_training_way_describes_itself_from_the_configuration():
    described = evaluation_of(RunConfig(epochs=2, stop_when=["valid_accuracy > 0.9"])).describe(
        1, evaluator=None)
    assert (described["evaluator"], described["epochs"], described["ranks_per_network"],
            described["stop_rules"]) == ("LocalEvaluator", 2, 1, ["valid_accuracy > 0.9"])
    scored = evaluation_of(RunConfig(evaluation="zero-cost", proxy="snip")).describe(1, None)
    assert scored["proxy"] == "snip" and "not an accuracy" in scored["signal"]


def test_checksums_for_a_data_set_not_read_from_files_are_refused_when_the_config_is_made(
        monkeypatch):
    monkeypatch.setattr(nord.data.registry, "CURATORS", nord.data.registry.CURATORS.copy())
    nord.data.registry.register_curator("digits-again", "nord.data.builtin.Digits")
    with pytest.raises(ConfigurationError, match="'digits-again' is not read from files"):
        RunConfig(dataset="digits-again", data_checksums={"train.gz": "0" * 32})
