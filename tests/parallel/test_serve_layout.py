"""nord serve's pages as a reader sees them in a real headless Chromium 1,200 px wide: plots
whose titles the mode bar leaves clear, whole-number axes ticked on whole numbers, axis
titles inside their plots, layer names kept as names, a runs table that fits the window in
natural order, a comparison with nothing undefined and bands in their lines' colours, no
empty overlay, and a weight-sharing search's panels drawn side by side, clear of each other,
gaining a live search's new epoch (and none on a run that shares no weights), its progress
in epochs and none of the black-box panels. The journals
are made here (two held open, as live runs' are); one ``nord serve``, one browser for the
module."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest

from nord.benchmarks.nasbench201.cells import EDGE_NAMES, OPS
from nord.evaluators.result import EpochRecord, EvaluationResult
from nord.journal import CandidateRecord, EvaluationRecord, Journal, RunRecord
from tests.helpers.browser import chromium_driver, wait_for
from tests.helpers.journals import ev, search_epoch, search_journal, write_journal
from tests.helpers.serving import nord_env, serve_process, stop_process

pytestmark = pytest.mark.processes

WIDTH = 1200
LONG = "a-folder-whose-name-is-as-long-as-a-cluster-scratch-path-" * 2


def _epochs(accuracies, layers=("conv", "relu")):
    return [EpochRecord(epoch, 1.0 / epoch, accuracy, 0.3, 1.0,
                        {f"grad_norm/{layer}": 0.1 * epoch + i for i, layer in enumerate(layers)})
            for epoch, accuracy in enumerate(accuracies, start=1)]


def _live(path):
    """A running journal (this process is its writer): candidate 0 told, twelve training at
    their third epoch, with accuracies whose ticks are long ('91.5512')."""
    journal = Journal(path)
    journal.start(RunRecord("regularized_evolution", {}, 1, {"space": "toy"}, evaluator={},
                            dataset={"name": "digits"}, mode="async", budget=40, extra={},
                            execution={"ranks": 1, "groups": 1, "workers": 1}))
    result = EvaluationResult(accuracy=0.9507, n_params=4209, train_time=4.0, epochs=3)
    told = EvaluationRecord(0, 0, 0, [0], "0", None, 0, result, None, 1.0, 5.0)
    training = range(1, 13)   # twelve workers, twelve candidates training
    journal.record([CandidateRecord(0, 0, [0], 0)]
                   + [CandidateRecord(n, 0, [n], 1) for n in training], [told],
                   [(0, record, 0) for record in _epochs([0.9155, 0.9225, 0.9507])]
                   + [(n, record, 0) for n in training
                      for record in _epochs([0.915510, 0.915512, 0.915514 + n / 1e6])])
    return journal


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pages")
    for name in ("r10", "r2", "r1", "r11"):
        write_journal(folder / f"{name}.db", [[ev(0.5), ev(0.6)]])
    write_journal(folder / "generations.db", [[ev(0.4), ev(0.5)], [ev(0.6), ev(0.7)]],
                  epochs={0: _epochs([0.3, 0.4, 0.5], layers=("0", "1", "10"))})
    # a long path and the longest state: a run whose writer is gone
    (folder / LONG).mkdir()
    subprocess.run([sys.executable, "-c", (
        "import sys; from tests.helpers.journals import ev, write_journal; "
        "write_journal(sys.argv[1], [[ev(0.5)]], status='running')"),
        str(folder / LONG / "regularized-evolution-with-asha-seed-0.db")],
        env=nord_env(), check=True)
    (folder / "compare.json").write_text(json.dumps({
        "benchmark": "nasbench201", "dataset": "cifar10", "budget": 10, "seeds": 2,
        "simulation": {"workers": 8}, "algorithms": {
            name: {"summary": {"test": {"mean": 90.0 + i, "std": 1.0}, "seeds": 2},
                   "curve": {"time": [0, 10, 20], "mean": [80 + i, 85 + i, 90 + i],
                             "low": [79 + i, 84 + i, 89 + i], "high": [81 + i, 86 + i, 91 + i]}}
            for i, name in enumerate(("random_search", "regularized_evolution", "bohb"))}}))
    journal = _live(folder / "live.db")
    starting = Journal(folder / "starting.db")   # a run that has told nothing yet
    starting.start(RunRecord("random_search", {}, 1, {"space": "toy"}, evaluator={},
                             dataset={"name": "digits"}, mode="sync", budget=10, extra={},
                             execution={"ranks": 1, "groups": 1, "workers": 1}))
    search = search_journal(folder / "gdas.db", epochs=3, finish=False, of=6)   # a live search
    stopped = search_journal(folder / "gdas-interrupted.db", epochs=3, finish=False, of=6)
    stopped.finish("interrupted", "SIGINT")
    stopped.close()
    search_journal(folder / "gdas-digits.db", epochs=2, dataset="digits", lookup=False)
    search_journal(folder / "gdas-stopped.db", epochs=2, status="interrupted")
    searching = search_journal(folder / "gdas-starting.db", epochs=0, finish=False)
    server = serve_process([folder])
    line = server.stdout.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    assert match, line + server.stderr.read()
    driver = chromium_driver(tmp_path_factory.mktemp("profile"), width=WIDTH, height=1400)
    try:
        inner = driver.execute_script("return window.innerWidth")
        if inner != WIDTH:   # a window's frame, where the browser draws one
            size = driver.get_window_size()
            driver.set_window_size(size["width"] + WIDTH - inner, size["height"])
        yield {"url": match.group(0), "driver": driver, "folder": folder, "search": search}
    finally:
        driver.quit()
        stop_process(server)
        for held in (journal, starting, search, searching):
            held.finish("finished")
            held.close()


def _open(site, name, page=""):
    """Open the page of the run whose path ends with ``name`` (``page``: after its URL)."""
    driver = site["driver"]
    driver.get(site["url"])
    run_id = wait_for(lambda: next((line["id"] for line in driver.execute_script(
        "return window.nordRuns.lines") if line["path"].endswith(name)), None), 20)
    driver.get(f"{site['url']}run/{run_id}{page}")
    return driver


def _plots(driver, ids, timeout=20):
    """Wait until every plot of ``ids`` is drawn with data; their elements."""
    script = ("return arguments[0].map(id => document.getElementById(id)).every("
              "p => p && p._fullLayout && p.data && p.data.some(t => (t.x || t.z || []).length))")
    wait_for(lambda: driver.execute_script(script, ids), timeout)
    return ids


BOXES = """
const box = (node) => {
  const r = node.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
return [...document.querySelectorAll('.js-plotly-plot')].filter(p => p.offsetHeight).map(p => ({
  id: p.id || p.parentNode.id || p.querySelector('.gtitle')?.textContent,
  plot: box(p),
  modebar: [...p.querySelectorAll('.modebar-group')].map(box).filter(b => b[2] > b[0]),
  title: [...p.querySelectorAll('.gtitle')].map(box),
  ytitle: [...p.querySelectorAll('.g-ytitle, .g-y2title')].map(box),
  xtitle: [...p.querySelectorAll('.g-xtitle')].map(box),
  yticks: [...p.querySelectorAll('.yaxislayer-above text')].map(box),
  xticks: [...p.querySelectorAll('.xaxislayer-above .xtick text')].map(box),
  legend: [...p.querySelectorAll('.legend')].map(box),
}));
"""


SEARCH_PLOTS = [f"search-{edge}" for edge in EDGE_NAMES] + ["search-accuracy"]


def _overlap(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _pages(site):
    """Each page with plots, drawn: (name, driver) as each is opened."""
    driver = _open(site, "live.db")
    _plots(driver, ["incumbent", "incumbent-time", "generations", "params", "curves"])
    yield "run", driver
    driver = _open(site, "generations.db", "/candidate/0")
    wait_for(lambda: len(driver.find_elements("css selector", "#signals .js-plotly-plot")), 20)
    _plots(driver, ["curves"])
    yield "candidate", driver
    driver = _open(site, "compare.json")
    _plots(driver, ["anytime"])
    yield "comparison", driver
    for name in ("gdas.db", "gdas-digits.db"):
        driver = _open(site, name)
        _plots(driver, SEARCH_PLOTS)
        yield name, driver


def test_no_plot_title_is_covered_by_the_mode_bar(site):
    covered = []
    for page, driver in _pages(site):
        for plot in driver.execute_script(BOXES):
            assert plot["title"] and plot["modebar"], plot
            if any(_overlap(t, m) for t in plot["title"] for m in plot["modebar"]):
                covered.append((page, plot["id"]))
    assert not covered


def test_axis_titles_lie_inside_their_plots_clear_of_ticks_and_legend(site):
    clipped = []
    for page, driver in _pages(site):
        for plot in driver.execute_script(BOXES):
            left, top, right, bottom = plot["plot"]
            for title in plot["ytitle"] + plot["xtitle"]:
                if title[0] < left or title[2] > right or title[1] < top or title[3] > bottom:
                    clipped.append((page, plot["id"], "outside"))
            for titles, ticks in ((plot["ytitle"], plot["yticks"]),
                                  (plot["xtitle"], plot["xticks"])):
                if any(_overlap(t, k) for t in titles for k in ticks):
                    clipped.append((page, plot["id"], "over its ticks"))
            labels = plot["xtitle"] + plot["xticks"] + plot["ytitle"]
            if any(_overlap(legend, label) for legend in plot["legend"] for label in labels):
                clipped.append((page, plot["id"], "under the legend"))
    assert not clipped


def _tick_labels(driver, selector):
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(t => t.textContent)", selector)


def test_whole_number_axes_tick_on_whole_numbers_only(site):
    driver = _open(site, "generations.db")   # generations 0 and 1, 4 evaluations
    _plots(driver, ["incumbent", "generations"])
    labels = {name: _tick_labels(driver, f"#{name} .xaxislayer-above .xtick text")
              for name in ("incumbent", "generations")}
    driver = _open(site, "live.db")          # epochs 1 to 3 of the candidate training now
    _plots(driver, ["curves"])
    labels["training now"] = _tick_labels(driver, "#curves .xaxislayer-above .xtick text")
    driver = _open(site, "gdas-digits.db")   # search epochs 1 and 2
    _plots(driver, SEARCH_PLOTS)
    for plot in SEARCH_PLOTS:
        labels[plot] = _tick_labels(driver, f"#{plot} .xaxislayer-above .xtick text")
    driver = _open(site, "generations.db", "/candidate/0")
    _plots(driver, ["curves"])
    wait_for(lambda: len(driver.find_elements("css selector", "#signals .js-plotly-plot")), 20)
    labels["curves"] = _tick_labels(driver, "#curves .xaxislayer-above .xtick text")
    labels["signals"] = _tick_labels(driver, "#signals .xaxislayer-above .xtick text")
    assert all(labels.values()), labels
    fractional = {name: [t for t in ticks if not re.fullmatch(r"[0-9]+", t.replace(",", ""))]
                  for name, ticks in labels.items()}
    assert not any(fractional.values()), fractional


def test_layer_names_that_read_as_numbers_stay_names(site):
    driver = _open(site, "generations.db", "/candidate/0")
    axis = wait_for(lambda: driver.execute_script(
        "const p = document.querySelector('#signals .js-plotly-plot');"
        "return p && p._fullLayout && {type: p._fullLayout.yaxis.type,"
        " ticks: [...p.querySelectorAll('.ytick text')].map(t => t.textContent)}"), 20)
    assert axis["type"] == "category"
    assert sorted(axis["ticks"]) == ["0", "1", "10"]


def test_the_runs_table_fits_the_window_in_natural_order(site):
    driver = site["driver"]
    driver.get(site["url"])
    wait_for(lambda: driver.execute_script("return window.nordRuns.lines.length"), 20)
    widths = driver.execute_script(
        "return [document.getElementById('runs').scrollWidth,"
        " document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= WIDTH and widths[1] <= widths[2], widths
    paths = [row.text for row in driver.find_elements(
        "css selector", "#runs tbody td[data-field=path]")]
    plain = [re.search(r"/(r[0-9]+)\.db$", path).group(1) for path in paths
             if re.search(r"/r[0-9]+\.db$", path)]
    assert plain == ["r1", "r2", "r10", "r11"]
    assert any("crashed" in cell.text for cell in driver.find_elements(
        "css selector", "#runs td[data-field=state]"))   # the longest state is in the table


def test_the_comparison_page_says_nothing_undefined(site):
    driver = _open(site, "compare.json")
    _plots(driver, ["anytime"])
    text = driver.find_element("tag name", "body").text
    assert "bohb" in text and "undefined" not in text and "NaN" not in text


def test_the_comparisons_bands_take_their_lines_colour(site):
    driver = _open(site, "compare.json")
    _plots(driver, ["anytime"])
    traces = driver.execute_script(
        "return document.getElementById('anytime')._fullData.map(t => ({name: t.name,"
        " fill: t.fill, fillcolor: t.fillcolor, line: t.line.color}))")

    def rgb(colour):
        if colour.startswith("#"):
            return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
        return tuple(int(float(v)) for v in re.findall(r"[0-9.]+", colour)[:3])

    bands = [(i, t) for i, t in enumerate(traces) if t["fill"] == "tonexty"]
    assert len(bands) == 3
    for i, band in bands:   # the band, then its algorithm's mean
        assert rgb(band["fillcolor"]) == rgb(traces[i + 1]["line"]), (band, traces[i + 1])
    assert len({rgb(traces[i + 1]["line"]) for i, _ in bands}) == 3


def test_the_runs_page_draws_no_overlay_until_a_run_is_ticked(site):
    driver = site["driver"]
    driver.get(site["url"])
    ids = wait_for(lambda: {line["path"].rsplit("/", 1)[1]: line["id"] for line in
                            driver.execute_script("return window.nordRuns.lines")}, 20)
    drawn = ("return [...document.querySelectorAll('#overlay, #overlay-time')]"
             ".filter(p => p.offsetHeight && p.querySelector('.main-svg')).length")
    wait_for(lambda: driver.execute_script("return window.Plotly !== undefined"), 20)
    time.sleep(1.5)   # a poll or two
    assert driver.execute_script(drawn) == 0
    box = driver.find_element("css selector", f'tr[data-run="{ids["r2.db"]}"] input')
    box.click()
    wait_for(lambda: driver.execute_script(drawn) == 2, 10)
    driver.find_element("css selector", f'tr[data-run="{ids["r2.db"]}"] input').click()
    wait_for(lambda: driver.execute_script(drawn) == 0, 10)


EMPTY = """
const points = (t) => (t.z || t.y || []).flat().some(v => v !== null && v !== undefined);
return [...document.querySelectorAll('.plot, .js-plotly-plot')].filter(p => p.offsetHeight > 0)
  .filter(p => !(p.data || []).some(points)).map(p => p.id || p.className);
"""


def test_no_page_draws_an_empty_plot(site):
    driver = site["driver"]
    empty = {}
    driver.get(site["url"])   # nothing ticked
    wait_for(lambda: driver.execute_script("return window.Plotly && window.nordRuns.lines.length"),
             20)
    time.sleep(1.5)
    empty["runs"] = driver.execute_script(EMPTY)
    # not running; nothing told yet; a search with no epoch yet, and one with two
    for name in ("r1.db", "starting.db", "gdas-starting.db", "gdas-digits.db"):
        driver = _open(site, name)
        wait_for(lambda: driver.execute_script("return window.nordRun.plotAt !== undefined"), 20)
        empty[name] = driver.execute_script(EMPTY)
    driver = _open(site, "generations.db", "/candidate/1")   # no epochs recorded
    wait_for(lambda: driver.execute_script(
        "return window.Plotly && window.nordCandidate.view"), 20)
    time.sleep(0.5)
    empty["candidate without epochs"] = driver.execute_script(EMPTY)
    assert not any(empty.values()), empty



SEARCH = """
const box = (node) => {
  const r = node.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
const plot = (p) => ({id: p.id, box: box(p),
  traces: p.data.map(t => ({name: t.name, x: t.x, y: t.y})),
  title: p.querySelector('.gtitle')?.textContent, yrange: p._fullLayout.yaxis.range,
  legend: p._fullLayout.showlegend});
return {
  hidden: document.getElementById('search').hidden,
  panels: [...document.querySelectorAll('#search-edges .js-plotly-plot')].map(plot),
  accuracy: plot(document.getElementById('search-accuracy')),
  legend: [...document.querySelectorAll('#search-legend li')].map(li => li.textContent),
  caption: document.getElementById('search-caption').textContent,
  final: document.getElementById('search-final').textContent,
  boxes: ['search-legend', 'search-caption', 'search-final', 'search-cells'].map(
    id => [id, box(document.getElementById(id))]),
  rows: [...document.querySelectorAll('#search-cells tbody tr')].map(tr => ({
    cells: [...tr.cells].map(td => td.textContent),
    final: tr.cells[0].classList.contains('final')})),
};
"""


def _search(driver):
    return driver.execute_script(SEARCH)


def test_a_search_draws_a_panel_per_edge_its_accuracy_and_its_cells(site):
    driver = _open(site, "gdas-digits.db")
    _plots(driver, SEARCH_PLOTS)
    drawn = _search(driver)
    assert not drawn["hidden"] and drawn["legend"] == list(OPS)
    assert [panel["id"] for panel in drawn["panels"]] == SEARCH_PLOTS[:-1]
    for panel, edge in zip(drawn["panels"], EDGE_NAMES):
        assert panel["title"] == "edge {} → {}".format(*edge.split("_")[1:])
        assert [trace["name"] for trace in panel["traces"]] == list(OPS)
        for trace, op in zip(panel["traces"], OPS):   # each operation's probability per epoch
            assert trace["x"] == [1, 2]
            assert trace["y"] == pytest.approx([search_epoch(epoch).weights[edge][op]
                                                for epoch in (1, 2)])
    # one probability scale for all, from zero to a tenth above the highest probability
    highest = max(value for epoch in (1, 2) for edge in search_epoch(epoch).weights.values()
                  for value in edge.values())
    (top,) = {panel["yrange"][1] for panel in drawn["panels"]}
    assert {panel["yrange"][0] for panel in drawn["panels"]} == {0}
    assert highest < top <= highest + 0.2
    # off the table: the epoch's mean losses, and the caption says why
    assert sorted(trace["name"] for trace in drawn["accuracy"]["traces"]) == [
        "arch loss", "weight loss"] and drawn["accuracy"]["legend"]
    assert "not in the NAS-Bench-201 table" in drawn["caption"]
    assert [row["cells"][:2] for row in drawn["rows"]] == [
        [str(epoch), search_epoch(epoch).cell] for epoch in (1, 2)]
    assert [row["final"] for row in drawn["rows"]] == [False, True]
    assert drawn["final"] == ("The final cell, derived after epoch 2 (highlighted): "
                              + search_epoch(2).cell)


def test_a_search_stopped_before_its_end_shows_its_last_cell_not_a_final_one(site):
    driver = _open(site, "gdas-stopped.db")
    wait_for(lambda: _search(driver)["rows"], 20)
    drawn = _search(driver)
    assert drawn["final"] == ("The latest cell, derived after epoch 2 (highlighted; the search "
                              "was interrupted there): " + search_epoch(2).cell)


def test_a_search_on_the_table_draws_the_derived_cells_table_accuracy(site):
    driver = _open(site, "gdas.db")
    _plots(driver, SEARCH_PLOTS)
    drawn = _search(driver)
    (trace,) = drawn["accuracy"]["traces"]
    assert trace["x"][:3] == [1, 2, 3]
    assert trace["y"][:3] == pytest.approx([100 * (0.5 + epoch / 100) for epoch in (1, 2, 3)])
    assert "200 epochs" in drawn["caption"] and "never sees" in drawn["caption"]


def test_a_searchs_panels_and_tables_lie_side_by_side_without_overlap(site):
    driver = _open(site, "gdas.db")
    _plots(driver, SEARCH_PLOTS)
    drawn = _search(driver)
    boxes = [(panel["id"], panel["box"]) for panel in drawn["panels"]]
    boxes += [("search-accuracy", drawn["accuracy"]["box"])] + drawn["boxes"]
    assert all(box[2] - box[0] > 100 and box[3] - box[1] > 10 and box[2] <= WIDTH
               for _, box in boxes), boxes
    overlapping = [(a, b) for i, (a, one) in enumerate(boxes) for b, other in boxes[i + 1:]
                   if _overlap(one, other)]
    assert not overlapping
    rows = {round(panel["box"][1]) for panel in drawn["panels"]}
    assert len(rows) == 2, rows   # six small panels, three to a row at 1,200 px


def test_a_live_search_gains_its_new_epoch_without_a_reload(site):
    driver = _open(site, "gdas.db")
    _plots(driver, SEARCH_PLOTS)
    epochs = wait_for(lambda: len(_search(driver)["rows"]), 20)
    site["search"].search_epoch(search_epoch(epochs + 1, 0.9))
    wait_for(lambda: len(_search(driver)["rows"]) == epochs + 1, 10)
    wait_for(lambda: _search(driver)["accuracy"]["traces"][0]["y"][-1] == pytest.approx(90), 10)
    drawn = _search(driver)
    assert [row["final"] for row in drawn["rows"]] == [False] * epochs + [True]
    assert drawn["final"].startswith(f"The latest cell, derived after epoch {epochs + 1} ")
    assert all(len(trace["x"]) == epochs + 1 for panel in drawn["panels"]
               for trace in panel["traces"])


def test_a_run_that_shares_no_weights_shows_no_search(site):
    driver = _open(site, "live.db")
    _plots(driver, ["incumbent"])
    time.sleep(1)   # a poll or two
    drawn = driver.execute_script(
        "return {hidden: document.getElementById('search').hidden,"
        " shown: document.getElementById('search').offsetHeight,"
        " plots: document.querySelectorAll('#search .js-plotly-plot').length}")
    assert drawn == {"hidden": True, "shown": 0, "plots": 0}
    page = driver.execute_script(PAGE)   # its own panels, as before
    assert {"incumbent", "generations", "candidates", "training"} <= set(page["shown"])
    assert "search epochs" not in page["facts"] and "evaluations" in page["facts"]


PAGE = """
const shown = (node) => Boolean(node && node.offsetParent !== null && node.offsetHeight > 0);
return {
  facts: Object.fromEntries([...document.querySelectorAll('#summary dd')].map(
    dd => [dd.dataset.field, dd.textContent])),
  detail: document.getElementById('detail').textContent,
  final: document.getElementById('search-final').textContent,
  shown: ['incumbent', 'incumbent-time', 'generations', 'params', 'candidates', 'legs',
          'failures', 'filter', 'training', 'curves'].filter(id => shown(document.getElementById(id))),
  plots: [...document.querySelectorAll('.js-plotly-plot')].filter(shown)
    .filter(p => !p.closest('#search')).map(p => p.id),
};
"""


def test_a_search_page_shows_its_epochs_and_no_black_box_panel(site):
    driver = _open(site, "gdas.db")
    _plots(driver, SEARCH_PLOTS)
    epochs = wait_for(lambda: len(_search(driver)["rows"]), 20)
    page = driver.execute_script(PAGE)
    assert page["shown"] == [] and page["plots"] == []
    assert page["facts"]["search epochs"] == f"{epochs} of 6"
    assert page["facts"]["method"] == "gdas"
    assert page["facts"]["latest cell"] == search_epoch(epochs).cell
    assert not {"evaluations", "best", "failed", "mode"} & set(page["facts"])
    assert page["detail"] == f"searching: {epochs} of 6 epochs done"
    # a new epoch moves the progress without a reload
    site["search"].search_epoch(search_epoch(epochs + 1, 0.6))
    wait_for(lambda: driver.execute_script(PAGE)["facts"]["search epochs"]
             == f"{epochs + 1} of 6", 10)


def test_an_interrupted_search_says_so_and_how_to_resume(site):
    driver = _open(site, "gdas-interrupted.db")
    _plots(driver, SEARCH_PLOTS)
    page = driver.execute_script(PAGE)
    path = page["facts"]["journal"]
    assert page["detail"] == f"interrupted by SIGINT after 3 of 6 epochs; nord resume {path}"
    assert page["final"] == ("The latest cell, derived after epoch 3 (highlighted; the search "
                             "was interrupted there): " + search_epoch(3).cell)
    assert page["shown"] == [] and page["plots"] == []


def test_the_runs_list_gives_a_searchs_progress_in_epochs(site):
    driver = site["driver"]
    driver.get(site["url"])
    wait_for(lambda: driver.execute_script("return window.nordRuns.lines.length"), 20)
    rows = driver.execute_script("""
return Object.fromEntries([...document.querySelectorAll('#runs tbody tr')].map(tr => [
  tr.querySelector('[data-field=path]').textContent.split('/').pop(),
  {progress: tr.querySelector('[data-field=evaluations]').textContent,
   tick: tr.querySelector('input').disabled}]));""")
    assert rows["gdas-interrupted.db"] == {"progress": "3/6 epochs", "tick": True}
    assert rows["gdas-digits.db"] == {"progress": "2/? epochs", "tick": True}
    assert rows["r1.db"] == {"progress": "2/99", "tick": False}   # a black-box run, as before
