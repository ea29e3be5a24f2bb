"""nord.report: plots, summary page and summary.json from run journals; Pareto fronts, hypervolume."""
import json
import math
import statistics
import subprocess
import sys
from itertools import product
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import ConfigurationError, JournalError
from nord.evaluators.result import EvaluationResult
from nord.journal import EvaluationRecord, Journal, RunRecord
from nord.report import (dominates, hypervolume, is_multi_objective, layered_layout, load_runs,
                         pareto_front, pareto_indices, write_report)
from nord.report.page import Code, Link, Page
from nord.report.summary import format_duration
from tests.helpers.journals import ev, write_journal

PNG_NAMES = ("accuracy.png", "wall_time.png", "parameters.png")
REPO = Path(__file__).resolve().parents[2]


# --- journals made with the Journal write API (tests/helpers/journals.py) ---------------------
GA_GENERATIONS = [
    [ev(0.50, 1200), ev(0.62, 3400, reported=0.60), ev(None), ev(0.40, 800)],
    [ev(0.70, 5000, reported=0.66), ev(0.62, 3400, cached=1), ev(0.55, 900), ev(None)],
    [ev(0.72, 4100, reported=0.69), ev(0.68, 2500), ev(0.71, 6000), ev(0.30, 500)],
]
RANDOM_GENERATIONS = [[ev(0.45, 700), ev(0.58, 2600), ev(0.52, 1500), ev(0.61, 4000),
                       ev(0.33, 400), ev(None)]]
NSGA_GENERATIONS = [
    [ev(0.40, 300), ev(0.55, 900), ev(0.50, 1000), ev(0.65, 4000)],
    [ev(0.60, 2000), ev(0.58, 2500), ev(0.66, 8000), ev(0.35, 200)],
]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One report over three runs of different algorithms, reused by several tests."""
    folder = tmp_path_factory.mktemp("report")
    paths = [write_journal(folder / "ga.db", GA_GENERATIONS),
             write_journal(folder / "random.db", RANDOM_GENERATIONS, algorithm="random",
                           parameters={"generation_size": None}),
             write_journal(folder / "nsga2.db", NSGA_GENERATIONS, algorithm="pygmo",
                           parameters={"pygmo_algorithm": "nsga2", "objectives": 2})]
    page = write_report(paths, folder / "out", title="Synthetic runs", best_count=2)
    summary = json.loads((folder / "out" / "summary.json").read_text())
    return {"paths": paths, "page": page, "out": folder / "out", "summary": summary}


def evaluations_of(path):
    with Journal(path) as journal:
        return journal.evaluations()


def assert_real_png(path):
    from matplotlib.image import imread

    image = imread(str(path))
    assert image.ndim == 3 and image.shape[0] >= 150 and image.shape[1] >= 150
    pixels = image[..., :3].reshape(-1, 3)
    assert float(pixels.std()) > 0.02                              # not a blank canvas
    assert len(np.unique(np.round(pixels[::5], 2), axis=0)) > 20   # text, lines and colours


# --- the report's files ------------------------------------------------------------------
def test_the_report_writes_the_page_summary_and_plots(report):
    out = report["out"]
    assert report["page"] == out / "report.md"
    for name in PNG_NAMES + ("summary.json", "report.md"):
        assert (out / name).is_file(), name


def test_every_plot_is_a_real_image(report):
    out = report["out"]
    for path in ([out / name for name in PNG_NAMES] + sorted(out.glob("pareto-*.png")) +
            sorted((out / "architectures").glob("*.png"))):
        assert_real_png(path)


def test_summary_counts_equal_those_of_the_evaluations(report):
    for path, run in zip(report["paths"], report["summary"]["runs"]):
        rows = evaluations_of(path)
        assert run["evaluations"] == len(rows)
        assert run["ok"] == sum(row["status"] == "ok" for row in rows)
        assert run["failed"] == sum(row["status"] != "ok" for row in rows)
        assert run["cached"] == sum(row["cached"] for row in rows)


def test_summary_best_is_the_most_accurate_evaluation(report):
    for path, run in zip(report["paths"], report["summary"]["runs"]):
        ok = [row for row in evaluations_of(path) if row["status"] == "ok"]
        best = max(ok, key=lambda row: row["accuracy"])
        assert run["best_accuracy"] == pytest.approx(best["accuracy"])
        assert run["best_n_params"] == best["n_params"]
        assert run["best_reported_accuracy"] == best["reported_accuracy"]
        assert run["best_candidate"] == best["candidate"]


def test_summary_times_are_the_running_time_and_the_evaluations_compute(report):
    for path, run in zip(report["paths"], report["summary"]["runs"]):
        rows = evaluations_of(path)
        with Journal(path) as journal:
            assert run["wall_time"] == pytest.approx(journal.running_seconds())
        assert run["evaluation_time"] == pytest.approx(
            sum(r["train_time"] + r["eval_time"] for r in rows if not r["cached"]))


def sessions(path, spans, execution=None):
    """A run journaled in one session per ``(first start, last end)`` of ``spans``, each
    stopped and then resumed (the evaluations' times are the spans', the sessions' own
    running time is what the journal measures); the journal's running seconds."""
    record = RunRecord("random", {}, 0, {"space": "toy"}, budget=9,
                       execution=execution or {"ranks": 1})
    for index, (start, end) in enumerate(spans):
        with Journal(path) as journal:
            journal.start(record, resume=index > 0)
            result = EvaluationResult(accuracy=0.5, n_params=10, train_time=end - start)
            journal.record([], [EvaluationRecord(index, index, 0, (index, 2), f"h{index}", None,
                                                 1, result, None, start, end)])
            journal.finish("interrupted" if index < len(spans) - 1 else "finished")
    with Journal(path) as journal:
        return journal.running_seconds()


def test_total_wall_time_leaves_out_the_time_between_sessions(tmp_path):
    """Stopped for a night and resumed: the total wall time is the sessions' own, as the
    time budget counts it, not the first start to the last end."""
    night = 12 * 3600.0
    running = sessions(tmp_path / "r.db", [(1000.0, 1002.0), (1000.0 + night, 1002.0 + night)])
    assert 0 < running < 600
    page = write_report([tmp_path / "r.db"], tmp_path / "out").read_text()
    run = json.loads((tmp_path / "out" / "summary.json").read_text())["runs"][0]
    assert run["wall_time"] == pytest.approx(running)
    with Journal(tmp_path / "r.db") as journal:
        assert journal.summary()["wall_time"] == pytest.approx(running)
    assert f"| total wall time | {format_duration(running)} |" in page


def test_on_a_simulated_clock_the_wall_time_is_the_simulated_one(tmp_path):
    """A simulated run's timestamps are simulated seconds; its wall time is theirs."""
    sessions(tmp_path / "r.db", [(0.0, 5000.0)], execution={"simulated": True, "workers": 8})
    with Journal(tmp_path / "r.db") as journal:
        assert journal.summary()["wall_time"] == pytest.approx(5000.0)


def test_summary_per_generation_statistics_equal_those_of_the_evaluations(report):
    path, run = report["paths"][0], report["summary"]["runs"][0]
    rows = evaluations_of(path)
    assert [g["generation"] for g in run["per_generation"]] == [0, 1, 2]
    for stats in run["per_generation"]:
        generation = [r for r in rows if r["generation"] == stats["generation"]]
        ok = [r for r in generation if r["status"] == "ok"]
        assert stats["ok"] == len(ok) and stats["failed"] == len(generation) - len(ok)
        assert stats["accuracy_mean"] == pytest.approx(statistics.fmean(r["accuracy"] for r in ok))
        assert stats["n_params_mean"] == pytest.approx(statistics.fmean(r["n_params"] for r in ok))
        assert stats["wall_time"] == pytest.approx(max(r["ended"] for r in generation)
                                                   - min(r["started"] for r in generation))


def test_summary_records_the_run_metadata(report):
    ga, random_run, nsga = report["summary"]["runs"]
    assert ((ga["label"], ga["algorithm"], ga["seed"], ga["dataset"], ga["ranks"], ga["mode"]) ==
        ("ga", "genetic", 7, "synthetic", 3, "sync"))
    assert random_run["algorithm"] == "random"
    assert nsga["algorithm_label"] == "pygmo (nsga2)"
    assert [run["multi_objective"] for run in (ga, random_run, nsga)] == [False, False, True]


def test_the_page_has_a_row_per_run_and_embeds_the_plots(report):
    text = report["page"].read_text()
    for label in ("ga", "random", "nsga2"):
        assert f"[{label}](#{label})" in text
    for name in PNG_NAMES + ("pareto-nsga2.png", "architectures/ga-best1.png"):
        assert f"]({name})" in text
    assert "72.00 %" in text and "69.00 %" in text   # best accuracy of ga and its reported one


def test_the_best_architectures_are_drawn_with_their_dot_and_json(report):
    out = report["out"] / "architectures"
    ga_rows = [r for r in evaluations_of(report["paths"][0]) if r["status"] == "ok"]
    best = max(ga_rows, key=lambda row: row["accuracy"])
    descriptor = NeuralDescriptor.from_json(best["descriptor"])
    assert (out / "ga-best1.dot").read_text().strip() == descriptor.to_dot("ga best 1").strip()
    assert NeuralDescriptor.from_json((out / "ga-best1.json").read_text()).hash == descriptor.hash
    assert sorted(p.name for p in out.glob("ga-best*.png")) == ["ga-best1.png", "ga-best2.png"]


def test_pareto_front_is_drawn_for_the_multi_objective_run_only(report):
    assert sorted(p.name for p in report["out"].glob("pareto-*.png")) == ["pareto-nsga2.png"]
    nsga = report["summary"]["runs"][2]
    points = [(e["n_params"], e["accuracy"]) for g in NSGA_GENERATIONS for e in g]
    assert [tuple(p) for p in nsga["pareto"]["front"]] == pareto_front(points)
    reference = report["summary"]["pareto"]["reference_point"]
    assert reference == [pytest.approx(1.1 * 8000), 0.0]
    assert nsga["pareto"]["hypervolume"] == pytest.approx(
        hypervolume(pareto_front(points), reference))


@pytest.mark.processes
def test_the_report_leaves_matplotlib_global_state_alone(report, tmp_path):
    # In a fresh interpreter: pyplot is never imported, so no backend is chosen as a side effect.
    program = (
        "import sys\n"
        "from nord.report import write_report\n"
        f"write_report([{str(report['paths'][0])!r}], {str(tmp_path)!r}, best_count=1)\n"
        "print('matplotlib.pyplot' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]
    assert (tmp_path / "accuracy.png").is_file()


# --- robustness ----------------------------------------------------------------------------
def test_a_run_without_successful_evaluations_still_gets_its_plots(tmp_path):
    path = write_journal(tmp_path / "broken.db", [[ev(None), ev(None)], [ev(None)]])
    page = write_report([path], tmp_path / "out", best_count=1)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    run = summary["runs"][0]
    assert (run["ok"], run["failed"], run["best_accuracy"], run["best"]) == (0, 3, None, [])
    for name in PNG_NAMES:
        assert_real_png(tmp_path / "out" / name)
    assert "no evaluation succeeded" in page.read_text().lower()


def test_a_journal_without_evaluations_gives_a_report(tmp_path):
    path = write_journal(tmp_path / "empty.db", [], status="running")
    write_report([path], tmp_path / "out")
    run = json.loads((tmp_path / "out" / "summary.json").read_text())["runs"][0]
    assert (run["evaluations"], run["generations"], run["wall_time"]) == (0, 0, None)
    assert_real_png(tmp_path / "out" / "accuracy.png")


def test_a_single_generation_run_is_plotted(tmp_path):
    path = write_journal(tmp_path / "one.db", [[ev(0.5, 100), ev(0.6, 200)]])
    write_report([path], tmp_path / "out", best_count=0)
    run = json.loads((tmp_path / "out" / "summary.json").read_text())["runs"][0]
    assert run["generations"] == 1 and run["best_accuracy"] == pytest.approx(0.6)
    for name in PNG_NAMES:
        assert_real_png(tmp_path / "out" / name)


def test_a_run_still_going_is_marked_on_the_page(tmp_path):
    path = write_journal(tmp_path / "live.db", [[ev(0.5), ev(0.6)]], status="running")
    page = write_report([path], tmp_path / "out", best_count=0)
    assert (json.loads((tmp_path / "out" / "summary.json").read_text())["runs"][0]["status"] ==
        "running")
    assert "Still running" in page.read_text()


def test_html_report(tmp_path):
    path = write_journal(tmp_path / "ga.db", GA_GENERATIONS[:1])
    page = write_report([path], tmp_path / "out", fmt="html", best_count=1)
    text = page.read_text()
    assert page.name == "report.html" and text.startswith("<!DOCTYPE html>")
    # one self-contained file: every figure is embedded, none is linked
    assert '<img src="data:image/png;base64,' in text and '<img src="accuracy.png"' not in text
    assert text.count("<img ") == text.count('<img src="data:image/png;base64,')
    assert '<table class="sortable">' in text and "<script>" in text
    assert '<a href="architectures/ga-best1.dot">DOT</a>' in text


def test_an_unknown_format_is_refused(tmp_path):
    path = write_journal(tmp_path / "ga.db", GA_GENERATIONS[:1])
    with pytest.raises(ConfigurationError, match="format"):
        write_report([path], tmp_path / "out", fmt="pdf")


def test_a_missing_journal_is_a_journal_error(tmp_path):
    with pytest.raises(JournalError):
        write_report([tmp_path / "missing.db"], tmp_path / "out")


def test_a_folder_is_expanded_to_its_journals(tmp_path):
    write_journal(tmp_path / "runs" / "a.db", [[ev(0.5)]])
    write_journal(tmp_path / "runs" / "b.db", [[ev(0.6)]])
    runs = load_runs(tmp_path / "runs", best_count=0)
    assert sorted(run.label for run in runs) == ["a", "b"]


def test_a_journal_named_twice_is_reported_once(tmp_path):
    path = write_journal(tmp_path / "runs" / "a.db", [[ev(0.5)]])
    write_journal(tmp_path / "runs" / "b.db", [[ev(0.6)]])
    skipped = []
    again = tmp_path / "runs" / ".." / "runs" / "a.db"   # another spelling of the same file
    runs = load_runs([path, tmp_path / "runs", again], best_count=0, skipped=skipped)
    assert sorted(run.label for run in runs) == ["a", "b"]
    assert [(str(where), reason) for where, reason in skipped] == [
        (str(tmp_path / "runs" / "a.db"), f"the same journal as {path}, which is reported once"),
        (str(again), f"the same journal as {path}, which is reported once")]


def test_with_labels_every_journal_named_is_read_under_its_label(tmp_path):
    path = write_journal(tmp_path / "a.db", [[ev(0.5)]])
    runs = load_runs([path, path], labels=["first", "second"], best_count=0)
    assert [run.label for run in runs] == ["first", "second"]


def test_runs_with_the_same_file_name_get_distinct_labels(tmp_path):
    first = write_journal(tmp_path / "x" / "run.db", [[ev(0.5)]])
    second = write_journal(tmp_path / "y" / "run.db", [[ev(0.6)]])
    assert [run.label for run in load_runs([first, second])] == ["run", "run-2"]


def test_labels_that_would_share_file_names_are_made_distinct(tmp_path):
    paths = [write_journal(tmp_path / f"{name}.db", [[ev(0.5)]]) for name in "abc"]
    runs = load_runs(paths, labels=["x y", "x-y", "x-y-2"], best_count=0)
    assert [run.slug for run in runs] == ["x-y", "x-y-2", "x-y-2-2"]


def test_pareto_true_draws_every_run_and_false_none(tmp_path):
    paths = [write_journal(tmp_path / "a.db", [[ev(0.5, 10), ev(0.6, 20)]]),
             write_journal(tmp_path / "b.db", [[ev(0.4, 5)]])]
    write_report(paths, tmp_path / "all", pareto=True, best_count=0)
    assert (sorted(p.name for p in (tmp_path / "all").glob("pareto-*.png")) ==
        ["pareto-a.png", "pareto-b.png"])
    write_report(paths, tmp_path / "none", pareto=False, best_count=0)
    assert not list((tmp_path / "none").glob("pareto-*.png"))


def test_a_reference_front_is_drawn_and_given_its_hypervolume(tmp_path):
    path = write_journal(tmp_path / "a.db", [[ev(0.5, 10), ev(0.6, 20)]],
                         parameters={"objectives": 2})
    exact = [(5, 0.55), (20, 0.8)]
    page = write_report([path], tmp_path / "out", reference_front=exact, best_count=0,
                        reference_point=(40, 0.0))
    info = json.loads((tmp_path / "out" / "summary.json").read_text())["pareto"]
    assert info["reference_front"] == [[5, 0.55], [20, 0.8]]
    # (20 - 5) * 0.55 + (40 - 20) * 0.8 = 24.25, over the box 40 x 1
    assert info["reference_hypervolume"] == pytest.approx(24.25 / 40)
    assert "exact front" in page.read_text()
    assert_real_png(tmp_path / "out" / "pareto-a.png")


def test_a_report_of_a_real_search_engine_run(tmp_path):
    from nord.search.engine import run_search
    from tests.helpers.toy import ToyEvaluator, ToyGenerational, ToySpace

    run_search(ToyGenerational(ToySpace(), seed=3, population=4), ToyEvaluator(), budget=12,
               journal=tmp_path / "toy.db")
    write_report([tmp_path / "toy.db"], tmp_path / "out", best_count=1)
    run = json.loads((tmp_path / "out" / "summary.json").read_text())["runs"][0]
    with Journal(tmp_path / "toy.db") as journal:
        summary, best = journal.summary(), journal.best()
    assert ((run["evaluations"], run["ok"], run["failed"], run["cached"]) ==
        (12, summary["ok"], summary["failed"], summary["cached"]))
    assert run["best_accuracy"] == pytest.approx(best["accuracy"])
    assert (tmp_path / "out" / "architectures" / "toy-best1.png").is_file()


# --- which runs are multi-objective -----------------------------------------------------------
@pytest.mark.parametrize("metadata, expected", [
    ({"parameters": {"objectives": 2}}, True),
    ({"parameters": {"objectives": 1}}, False),
    ({"parameters": {}, "extra": {"objectives": 2}}, True),
    ({"parameters": {"population_size": 10}}, False),
])
def test_multi_objective_runs_are_recognised(metadata, expected):
    assert is_multi_objective(metadata) is expected


# --- Pareto fronts ------------------------------------------------------------------------
def test_pareto_front_of_hand_made_points():
    points = [(100, 0.5), (300, 0.7), (200, 0.4), (400, 0.7), (50, 0.2), (300, 0.6), (500, 0.9)]
    assert pareto_front(points) == [(50, 0.2), (100, 0.5), (300, 0.7), (500, 0.9)]


def test_pareto_indices_keep_the_first_of_equal_points_and_skip_nan():
    points = [(10, 0.5), (float("nan"), 0.9), (10, 0.5), (5, float("nan")), (20, 0.6)]
    assert pareto_indices(points) == [0, 4]


def test_pareto_front_of_nothing_is_empty():
    assert pareto_front([]) == []


def test_a_malformed_point_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="point 1"):
        pareto_front([(1, 0.5), (1, 2, 3)])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), max_size=25))
def test_pareto_front_is_exactly_the_non_dominated_points(raw):
    points = [(p, a / 20) for p, a in raw]
    front = pareto_front(points)
    assert len(set(front)) == len(front)
    for point in points:
        dominated = any(dominates(other, point) for other in points)
        assert (tuple(map(float, point)) in front) == (not dominated)


# --- hypervolume ----------------------------------------------------------------------------
def test_hypervolume_of_one_point_is_its_rectangle():
    assert hypervolume([(2, 0.5)], (10, 0.0), normalise=False) == pytest.approx(8 * 0.5)


def test_hypervolume_of_a_staircase():
    front = [(100, 0.5), (300, 0.7)]
    # (300 - 100) * 0.5 + (500 - 300) * 0.7 = 100 + 140
    assert hypervolume(front, (500, 0.0), normalise=False) == pytest.approx(240)
    assert hypervolume(front, (500, 0.0)) == pytest.approx(240 / 500)


def test_hypervolume_normalises_by_the_box_above_the_reference_accuracy():
    # [(1, 0.6)] with reference (4, 0.2): (4 - 1) * (0.6 - 0.2) = 1.2 over 4 * 0.8 = 3.2
    assert hypervolume([(1, 0.6)], (4, 0.2)) == pytest.approx(1.2 / 3.2)


def test_hypervolume_ignores_dominated_points_and_points_beyond_the_reference():
    front = [(100, 0.5), (300, 0.7)]
    noisy = front + [(200, 0.45), (600, 0.95), (50, -0.1), (100, 0.5)]
    assert hypervolume(noisy, (500, 0.0)) == pytest.approx(hypervolume(front, (500, 0.0)))


def test_hypervolume_of_nothing_is_zero():
    assert hypervolume([], (10, 0.0)) == 0.0


def test_hypervolume_of_a_perfect_network_is_one():
    assert hypervolume([(0, 1.0)], (10, 0.0)) == pytest.approx(1.0)


@pytest.mark.parametrize("reference", [(0, 0.0), (10, 1.0), (float("nan"), 0.0)])
def test_hypervolume_refuses_a_reference_point_it_cannot_normalise_by(reference):
    with pytest.raises(ConfigurationError, match="ref_params"):
        hypervolume([(1, 0.5)], reference)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), max_size=12))
def test_hypervolume_equals_the_dominated_cells_of_a_grid(points):
    # Integer points: count the unit cells [x, x+1] x [y, y+1] inside the reference box
    # that some point dominates.
    reference = (12, 0)
    cells = sum(1 for x, y in product(range(12), range(12))
                if any(p <= x and a >= y + 1 for p, a in points))
    assert hypervolume(points, reference, normalise=False) == pytest.approx(cells)


# --- the architecture layout -----------------------------------------------------------------
def branching_descriptor() -> NeuralDescriptor:
    descriptor = NeuralDescriptor()
    descriptor.add_layer("conv2d", {"out_channels": 8, "kernel_size": 3}, "stem")
    descriptor.add_layer("conv2d", {"out_channels": 8, "kernel_size": 1}, "a")
    descriptor.add_layer("max_pool2d", {"kernel_size": 3, "stride": 1, "padding": 1}, "pool")
    descriptor.add_layer("relu", {}, "join", merge="concat")
    for source, target in (("stem", "a"), ("stem", "pool"), ("a", "join"), ("pool", "join"),
                           ("stem", "join")):
        descriptor.connect_layers(source, target)
    return descriptor


def test_layout_levels_are_longest_paths_from_the_input():
    layout = layered_layout(branching_descriptor())
    assert {name: node.level for name, node in layout.nodes.items()} == {
        "__input__": 0, "stem": 1, "a": 2, "pool": 2, "join": 3, "__output__": 4}


def test_layout_arrows_point_down_and_long_edges_go_around_boxes():
    layout = layered_layout(branching_descriptor())
    edges = {(source, target): route for source, target, route in layout.edges}
    assert set(edges) == {("__input__", "stem"), ("stem", "a"), ("stem", "pool"), ("a", "join"),
                          ("pool", "join"), ("stem", "join"), ("join", "__output__")}
    for route in edges.values():
        ys = [y for _, y in route]
        assert all(later <= earlier for earlier, later in zip(ys, ys[1:]))
    boxes = [layout.nodes["a"], layout.nodes["pool"]]
    for x, y in edges[("stem", "join")][1:-1]:   # the waypoints of the long edge
        assert not any(abs(x - b.x) < b.width / 2 and abs(y - b.y) <= b.height / 2 for b in boxes)


def test_layout_boxes_of_a_level_do_not_overlap():
    layout = layered_layout(branching_descriptor())
    a, pool = sorted([layout.nodes["a"], layout.nodes["pool"]], key=lambda node: node.x)
    assert pool.x - a.x >= (a.width + pool.width) / 2


# --- the page ---------------------------------------------------------------------------
def test_markdown_tables_escape_cell_separators():
    page = Page("t")
    page.table(["a", "b"], [["x|y", Code("p|q")], [Link("r", "#r"), None]])
    text = page.to_markdown()
    assert "| x\\|y | `p\\|q` |" in text and "| [r](#r) |   |" in text


def test_html_escapes_text():
    page = Page("<t>")
    page.paragraph("a < b & c")
    assert "<h1>&lt;t&gt;</h1>" in page.to_html() and "a &lt; b &amp; c" in page.to_html()


@pytest.mark.parametrize("seconds, text", [(12.34, "12.3 s"), (600, "10 min"), (36000, "10 h"),
                                           (None, "n/a"), (math.nan, "n/a")])
def test_durations_are_shown_in_a_readable_unit(seconds, text):
    assert format_duration(seconds) == text
