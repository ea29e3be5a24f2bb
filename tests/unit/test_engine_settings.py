"""run_search's settings in three groups (Limits, Training, Reporting), each field also a
keyword of its own: both ways give the same run, and a bad value is refused alike."""
import dataclasses

import pytest

from nord.errors import ConfigurationError
from nord.journal import Journal
from nord.search import Limits as LazyLimits
from nord.search.algorithms.random_search import RandomSearch
from nord.search.engine import Limits, Reporting, RunInfo, Training, run_search
from nord.search.schedulers import make_scheduler
from tests.helpers.toy import ToyCurves, ToySpace, journal_rows

TIMES = ("started", "ended", "train_time", "eval_time", "asked", "recorded", "seconds")


def legs_and_run(path):
    """The journal's legs and run settings, without times."""
    with Journal(path) as journal:
        legs = [{k: v for k, v in leg.items() if k not in TIMES and k != "result"}
                for leg in journal.legs()]
        meta = journal.metadata()
    return legs, {key: meta[key] for key in ("budget", "batch_size", "scheduler", "extra")}


def asha():
    return make_scheduler("asha", min_epochs=1, max_epochs=3, eta=3)


class Told:
    """Keeps what on_result and on_epoch were told."""

    def __init__(self):
        self.results, self.epochs = [], []

    def result(self, progress):
        self.results.append((progress.outcome.candidate.number, progress.evaluations))

    def epoch(self, number, record):
        self.epochs.append((number, record.epoch))


# every setting, given as a keyword of its own and in its group
SETTINGS = {
    "budget": lambda told: ("limits", 5),   # the others run with a budget of 6
    "time_budget": lambda told: ("limits", 3600.0),
    "target": lambda told: ("limits", 0.3),
    "scheduler": lambda told: ("training", asha()),
    "checkpoint_every": lambda told: ("training", 0),
    "max_attempts": lambda told: ("training", 3),
    "on_result": lambda told: ("reporting", told.result),
    "on_epoch": lambda told: ("reporting", told.epoch),
    "info": lambda told: ("reporting", RunInfo(extra={"note": "kept"})),
}
GROUPS = {"limits": Limits, "training": Training, "reporting": Reporting}


def test_every_field_of_the_groups_is_a_keyword_and_every_keyword_a_field():
    fields = [field.name for group in GROUPS.values() for field in dataclasses.fields(group)]
    assert sorted(fields) == sorted(SETTINGS)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_a_setting_as_a_keyword_and_in_its_group_gives_the_same_run(tmp_path, name):
    runs = []
    for way in ("keyword", "group"):
        told = Told()
        group, value = SETTINGS[name](told)
        mine = {"budget": 6, name: value} if group == "limits" else {name: value}
        settings = ({"budget": 6, **mine} if way == "keyword" else
                    {group: GROUPS[group](**mine)} if group == "limits" else
                    {"budget": 6, group: GROUPS[group](**mine)})
        path = tmp_path / f"{way}.db"
        summary = run_search(RandomSearch(ToySpace(), seed=2), ToyCurves(max_epochs=3),
                             journal=path, mode="async", **settings)
        runs.append((journal_rows(path, TIMES), legs_and_run(path), told.results, told.epochs,
                     summary.evaluations, summary.legs, summary.stopped_by,
                     summary.checkpoint_peak_bytes is None))
    assert runs[0] == runs[1]


def test_the_defaults_are_those_of_the_keywords():
    assert Limits() == Limits(budget=100, time_budget=None, target=None)
    assert Training() == Training(scheduler=None, checkpoint_every=1, max_attempts=2)
    assert Reporting() == Reporting(on_result=None, on_epoch=None, info=None)


def test_the_groups_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Limits().budget = 5


def test_keywords_of_other_groups_join_a_group_given(tmp_path):
    told = Told()
    summary = run_search(RandomSearch(ToySpace(), seed=0), ToyCurves(max_epochs=3),
                         limits=Limits(budget=4), on_result=told.result, scheduler=asha(),
                         mode="async")
    assert summary.evaluations == 4 and summary.legs >= 4
    assert [evaluations for _, evaluations in told.results] == [1, 2, 3, 4]


def test_a_setting_given_both_as_a_keyword_and_in_its_group_is_refused():
    with pytest.raises(ConfigurationError, match=r"budget=5 was given beside "
                                                 r"limits=Limits\(budget=8.* give each setting "
                                                 r"once"):
        run_search(RandomSearch(ToySpace(), seed=0), ToyCurves(), limits=Limits(budget=8),
                   budget=5)


def test_a_keyword_that_is_no_setting_is_a_type_error_that_lists_the_settings():
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'budgte'; its settings "
                                        r"are budget, time_budget, target, scheduler"):
        run_search(RandomSearch(ToySpace(), seed=0), ToyCurves(), budgte=5)


def test_a_group_of_the_wrong_kind_is_refused():
    with pytest.raises(ConfigurationError, match="training must be a Training .* got Limits"):
        run_search(RandomSearch(ToySpace(), seed=0), ToyCurves(), training=Limits())


@pytest.mark.parametrize("settings, message", [
    (dict(limits=Limits(budget=-1)), r"budget \(number of evaluations\) must be"),
    (dict(limits=Limits(time_budget=0)), "time_budget must be a positive number of seconds"),
    (dict(limits=Limits(target=float("nan"))), "target must be a finite accuracy"),
    (dict(training=Training(scheduler="asha")), "scheduler must be a Scheduler or None"),
    (dict(training=Training(checkpoint_every=-1)), "checkpoint_every .* must be an integer"),
    (dict(training=Training(max_attempts=0)), "max_attempts must be an integer >= 1"),
])
def test_a_bad_value_in_a_group_is_refused_as_its_keyword_is(settings, message):
    (group, holder), = settings.items()
    (name, value), = ((f.name, getattr(holder, f.name)) for f in dataclasses.fields(holder)
                      if getattr(holder, f.name) != f.default)
    for given in (settings, {name: value}):
        with pytest.raises(ConfigurationError, match=message):
            run_search(RandomSearch(ToySpace(), seed=0), ToyCurves(), **given)


def test_the_groups_are_also_nord_searchs():
    assert LazyLimits is Limits
