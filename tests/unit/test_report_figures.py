"""The report's figures of progress: best so far across runs, asynchronous and long runs by
evaluation order in bins, learning curves, scheduled runs, introspection metrics."""
import json

import numpy as np
import pytest

from nord.evaluators.result import EpochRecord
from nord.journal import Journal
from nord.report import load_runs, write_report
from nord.report.curves import learning_curves
from nord.report.schedule import candidate_fates
from nord.report.timeline import MAX_GROUPS, best_so_far, progress_axis, progress_groups
from tests.helpers.journals import ev, write_journal


def assert_real_png(path):
    from matplotlib.image import imread

    image = imread(str(path))
    assert image.ndim == 3 and image.shape[0] >= 150 and image.shape[1] >= 150
    assert float(image[..., :3].std()) > 0.02


def async_generations(count, seed=0):
    """One 'generation' list per evaluation, with generation numbers that go back and forth
    as an asynchronous run's do."""
    rng = np.random.default_rng(seed)
    return [[ev(float(a), int(p), reported=float(a) - 0.02, generation=int(g))]
            for a, p, g in zip(rng.uniform(0.3, 0.9, count), rng.integers(100, 5000, count),
                               rng.integers(0, 10, count))]


# --- best so far ---------------------------------------------------------------------------------
def test_best_so_far_is_the_running_maximum_with_its_reported_accuracy(tmp_path):
    specs = [[ev(0.5, reported=0.45), ev(None), ev(0.4, reported=0.9)],
             [ev(0.7, reported=0.6), ev(0.7, reported=0.1), ev(0.65)]]
    run = load_runs([write_journal(tmp_path / "a.db", specs)])[0]
    curve = best_so_far(run)
    assert curve.evaluations.tolist() == [1, 2, 3, 4, 5, 6]
    assert curve.accuracy.tolist() == [0.5, 0.5, 0.5, 0.7, 0.7, 0.7]
    # the best is the earliest of equals, and its reported accuracy is the one shown
    assert curve.reported.tolist() == [0.45, 0.45, 0.45, 0.6, 0.6, 0.6]
    ended = [row["ended"] for row in run.evaluations]
    started = min(row["started"] for row in run.evaluations)
    assert curve.seconds.tolist() == pytest.approx([e - started for e in ended])


def test_the_comparison_figure_draws_every_run(tmp_path):
    paths = [write_journal(tmp_path / "sync.db", [[ev(0.5), ev(0.6)], [ev(0.7)]]),
             write_journal(tmp_path / "async.db", async_generations(30), mode="async"),
             write_journal(tmp_path / "broken.db", [[ev(None)]])]
    write_report(paths, tmp_path / "out", best_count=0)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["files"]["comparison"] == "comparison.png"
    assert_real_png(tmp_path / "out" / "comparison.png")
    assert "](comparison.png)" in (tmp_path / "out" / "report.md").read_text()


# --- asynchronous and long runs ------------------------------------------------------------------
def test_an_asynchronous_run_is_drawn_by_evaluation_order_not_generation(tmp_path):
    run = load_runs([write_journal(tmp_path / "a.db", async_generations(100), mode="async")])[0]
    generations = [row["generation"] for row in run.evaluations]
    assert any(b < a for a, b in zip(generations, generations[1:]))   # they go backwards
    axis, groups = progress_groups(run)
    assert axis == progress_axis(run) == "evaluation"
    # bins follow the order told: together they are every evaluation, once, in order
    told = [row["accuracy"] for row in run.evaluations]
    assert np.concatenate([g.accuracies for g in groups]).tolist() == told
    assert [g.first for g in groups] == sorted(g.first for g in groups)


def test_a_synchronous_run_of_few_generations_keeps_its_generations(tmp_path):
    run = load_runs([write_journal(tmp_path / "s.db", [[ev(0.5), ev(None)], [ev(0.6)]])])[0]
    axis, groups = progress_groups(run)
    assert axis == "generation"
    assert ([(g.position, g.accuracies.tolist(), g.failed) for g in groups] ==
        [(0.0, [0.5], 1), (1.0, [0.6], 0)])


@pytest.mark.slow
def test_a_run_of_fifteen_thousand_evaluations_is_drawn_in_few_bins(tmp_path):
    path = write_journal(tmp_path / "long.db", async_generations(15000), mode="async",
                         with_descriptors=False)
    run = load_runs([path], best_count=1)[0]
    axis, groups = progress_groups(run)
    assert axis == "evaluation" and len(groups) <= MAX_GROUPS
    assert sum(len(g.accuracies) + g.failed for g in groups) == 15000
    write_report([path], tmp_path / "out", best_count=1)
    for name in ("accuracy.png", "comparison.png", "wall_time.png", "parameters.png"):
        assert_real_png(tmp_path / "out" / name)


def test_a_synchronous_run_of_many_generations_is_binned(tmp_path):
    run = load_runs([write_journal(tmp_path / "g.db", [[ev(0.5)]] * (MAX_GROUPS + 5))])[0]
    assert progress_axis(run) == "evaluation"


# --- scheduled runs --------------------------------------------------------------------------------
def leg(number, candidate, start, target, decision, status="ok", ended=True):
    return {"leg": number, "candidate": candidate, "start_epochs": start,
            "target_epochs": target, "decision": decision, "status": status,
            "ended_event": number if ended else None}


def test_every_fate_of_a_scheduled_candidate_is_told_apart():
    legs = [leg(1, 0, 0, 1, "pause"), leg(2, 0, 1, 3, "pause"), leg(3, 0, 3, 9, "done"),
            leg(4, 1, 0, 1, "pause"), leg(5, 1, 1, 3, "stop"),
            leg(6, 2, 0, 1, "pause"),
            leg(7, 3, 0, 1, "stop"),
            leg(8, 4, 0, 1, None, status="failed"),
            leg(9, 5, 0, 1, None, status=None, ended=False)]
    fates = candidate_fates(legs)
    assert {c: f.state for c, f in fates.items()} == {
        0: "finished", 1: "promoted", 2: "paused", 3: "stopped", 4: "failed", 5: "training"}
    assert fates[0].promotions == [1, 3] and fates[0].epochs == 9
    assert fates[1].promotions == [1] and fates[1].epochs == 3


@pytest.fixture(scope="module")
def asha_report(tmp_path_factory):
    """A real ASHA search (toy learning curves) and its report."""
    from nord.search.engine import run_search
    from nord.search.algorithms.random_search import RandomSearch
    from nord.search.schedulers import make_scheduler
    from tests.helpers.toy import ToyCurves, ToySpace

    folder = tmp_path_factory.mktemp("asha")
    evaluator = ToyCurves(max_epochs=9)
    summary = run_search(RandomSearch(ToySpace(), seed=0), evaluator, budget=20, mode="async",
                         journal=folder / "asha.db",
                         scheduler=make_scheduler("asha", min_epochs=1, max_epochs=9, eta=3))
    page = write_report([folder / "asha.db"], folder / "out", best_count=1)
    return {"evaluator": evaluator, "summary": summary, "page": page.read_text(),
            "out": folder / "out", "path": folder / "asha.db",
            "json": json.loads((folder / "out" / "summary.json").read_text())}


def test_the_schedule_table_counts_epochs_trained_against_a_full_search(asha_report):
    numbers = asha_report["json"]["runs"][0]["schedule"]
    with Journal(asha_report["path"]) as journal:
        trained = {leg["candidate"] for leg in journal.legs()}
    assert numbers["epochs_trained"] == asha_report["evaluator"].epochs_trained
    assert numbers["epochs_full"] == 9 * len(trained) == 9 * numbers["candidates"]
    assert numbers["fraction"] == pytest.approx(numbers["epochs_trained"] / numbers["epochs_full"])
    assert sum(numbers["states"].values()) == numbers["candidates"]
    assert numbers["states"]["finished"] >= 1
    assert "## Scheduled training" in asha_report["page"]
    assert "| epochs trained | epochs of a full search |" in asha_report["page"]


def test_learning_curves_are_every_candidates_validation_accuracy(asha_report):
    assert asha_report["json"]["files"]["learning_curves"] == "learning_curves.png"
    assert_real_png(asha_report["out"] / "learning_curves.png")
    run = load_runs([asha_report["path"]])[0]
    curves = learning_curves(run)
    with Journal(asha_report["path"]) as journal:
        epochs = journal.epochs()
    assert sum(len(e) for e, _ in curves.values()) == len(epochs)
    fates = candidate_fates(run.legs)
    for candidate, (trained, _) in curves.items():
        assert trained.tolist() == list(range(1, fates[candidate].epochs + 1))


def test_a_run_without_epochs_has_no_learning_curves_figure(tmp_path):
    write_report([write_journal(tmp_path / "a.db", [[ev(0.5)]])], tmp_path / "out", best_count=0)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert "learning_curves" not in summary["files"]
    assert summary["runs"][0]["schedule"] is None
    assert not (tmp_path / "out" / "learning_curves.png").exists()


# --- introspection metrics -----------------------------------------------------------------------
def epochs_with_metrics(count, layers=("conv", "fc")):
    return [EpochRecord(epoch, 1.0 / epoch, 0.5 + 0.04 * epoch, 1.0 / epoch, 0.1, {
        **{f"grad_norm/{layer}": 1.0 / epoch for layer in layers},
        **{f"weight_norm/{layer}": 2.0 + epoch for layer in layers},
        "dead_relu/relu": 0.1 * epoch, "dead_relu": 0.1 * epoch}) for epoch in range(1, count + 1)]


def test_introspection_metrics_of_the_best_candidates_are_drawn(tmp_path):
    path = write_journal(tmp_path / "cb.db", [[ev(0.5), ev(0.8), ev(0.6)]],
                         epochs={0: epochs_with_metrics(3), 1: epochs_with_metrics(4)})
    page = write_report([path], tmp_path / "out", best_count=2).read_text()
    files = json.loads((tmp_path / "out" / "summary.json").read_text())["files"]
    assert files["introspection"] == {"cb": "introspection-cb.png"}
    assert_real_png(tmp_path / "out" / "introspection-cb.png")
    assert "](introspection-cb.png)" in page
    # epochs with a validation accuracy make learning curves too
    assert files["learning_curves"] == "learning_curves.png"


def test_no_introspection_figure_without_recorded_metrics(tmp_path):
    plain = [EpochRecord(1, 1.0, 0.5, 1.0, 0.1, {})]
    path = write_journal(tmp_path / "plain.db", [[ev(0.5)]], epochs={0: plain})
    write_report([path], tmp_path / "out", best_count=1)
    files = json.loads((tmp_path / "out" / "summary.json").read_text())["files"]
    assert "introspection" not in files and not list((tmp_path / "out").glob("introspection-*"))



def test_an_asynchronous_run_has_no_generation_count_on_its_page(tmp_path):
    paths = [write_journal(tmp_path / "sync.db", [[ev(0.5), ev(0.6)], [ev(0.7)]]),
             write_journal(tmp_path / "async.db", async_generations(30), mode="async")]
    write_report(paths, tmp_path / "out", best_count=0)
    page = (tmp_path / "out" / "report.md").read_text()
    assert page.count("none (asynchronous: results are told in the order they come)") == 1
    assert "| generations | 2 |" in page
    assert page.count("| budget | 99 evaluations |") == 2
    assert page.count("| batch size | none (asynchronous: no batches) |") == 1
    assert page.count("| batch size | n/a |") == 1   # this sync journal records none
