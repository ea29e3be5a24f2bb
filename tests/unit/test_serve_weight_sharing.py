"""nord serve's JSON for a weight-sharing search, served for real on a loopback socket: each
epoch's distribution in the benchmark's order of edges and operations, the table accuracy
or its absence, and only the epochs a live search gained after the page's cursor; a run that
shares no weights carries nothing of it."""
from __future__ import annotations

import re
import sqlite3
import time
from urllib.parse import urlencode

import pytest

from nord.benchmarks.nasbench201.cells import EDGE_NAMES, OPS
from nord.evaluators.result import EvaluationResult
from nord.journal import Journal
from nord.journal.reads import JournalReader
from nord.serve.weight_sharing import search_line, search_read
from tests.helpers.journals import ev, search_epoch, search_journal, write_journal
from tests.helpers.serving import ServedView


def _answer(view, name, cursor=None, **query):
    """The run page's answer for the journal whose path ends with ``name``."""
    status, body = view.get("/api/runs")
    run_id = next(line["id"] for line in body["runs"] if line["path"].endswith(name))
    status, body = view.get(f"/api/run/{run_id}?{urlencode({**(cursor or {}), **query})}")
    assert status == 200, body
    return body


def test_a_search_sends_each_epochs_distribution_in_the_benchmarks_order(tmp_path):
    search_journal(tmp_path / "gdas.db", epochs=3)
    with ServedView([tmp_path]) as view:
        search = _answer(view, "gdas.db")["search"]
    assert search["edges"] == list(EDGE_NAMES) and search["ops"] == list(OPS)
    assert [row["epoch"] for row in search["epochs"]] == [1, 2, 3]
    for row in search["epochs"]:
        record = search_epoch(row["epoch"], 0.5 + row["epoch"] / 100)
        assert row["weights"] == [[record.weights[edge][op] for op in OPS] for edge in EDGE_NAMES]
        assert row["cell"] == record.cell and row["seconds"] == pytest.approx(record.seconds)
        assert row["lookup_accuracy"] == pytest.approx(record.lookup_accuracy)
        # JSON has no NaN: a metric that is one is sent as null, the rest as journaled
        assert row["metrics"] == {**record.metrics, "entropy": None}


def test_a_search_off_the_table_sends_no_table_accuracy(tmp_path):
    search_journal(tmp_path / "digits.db", epochs=2, dataset="digits", lookup=False)
    with ServedView([tmp_path]) as view:
        search = _answer(view, "digits.db")["search"]
    assert [row["lookup_accuracy"] for row in search["epochs"]] == [None, None]
    assert all(row["metrics"]["weight_loss"] > 0 for row in search["epochs"])


def test_a_live_search_sends_only_the_epochs_after_the_cursor(tmp_path):
    journal = search_journal(tmp_path / "live.db", epochs=2, finish=False)
    try:
        with ServedView([tmp_path]) as view:
            first = _answer(view, "live.db")
            assert [row["epoch"] for row in first["search"]["epochs"]] == [1, 2]
            assert first["cursor"]["search"] == 2 and first["run"]["state"] == "running"
            again = _answer(view, "live.db", first["cursor"])
            assert "search" not in again and again["cursor"] == first["cursor"]
            journal.search_epoch(search_epoch(3, 0.57))
            grown = _answer(view, "live.db", first["cursor"], seen=first["version"])
            assert not grown.get("unchanged")
            assert [row["epoch"] for row in grown["search"]["epochs"]] == [3]
            assert grown["search"]["edges"] == list(EDGE_NAMES)
            assert grown["search"]["epochs"][0]["lookup_accuracy"] == pytest.approx(0.57)
            assert grown["cursor"] == {**first["cursor"], "search": 3}
            settled = _answer(view, "live.db", grown["cursor"], seen=grown["version"])
            assert settled.get("unchanged") and "search" not in settled
    finally:
        journal.finish("finished")
        journal.close()


def test_a_run_that_shares_no_weights_sends_no_search(tmp_path):
    write_journal(tmp_path / "ga.db", [[ev(0.5), ev(0.6)]])
    old = write_journal(tmp_path / "old.db", [[ev(0.5)]])
    with sqlite3.connect(old) as connection:   # a journal written before the table was
        connection.execute("DROP TABLE search_epochs")
    starting = search_journal(tmp_path / "starting.db", epochs=0, finish=False)
    try:
        with ServedView([tmp_path]) as view:
            for name in ("ga.db", "old.db", "starting.db"):   # the last: no epoch yet
                body = _answer(view, name)
                assert "search" not in body and body["cursor"]["search"] == 0, name
    finally:
        starting.finish("finished")
        starting.close()


def test_a_search_cursor_that_is_not_a_number_is_a_400(tmp_path):
    search_journal(tmp_path / "gdas.db", epochs=1)
    with ServedView([tmp_path]) as view:
        run_id = view.get("/api/runs")[1]["runs"][0]["id"]
        status, body = view.get(f"/api/run/{run_id}?search=-1")
    assert status == 400 and "'search'" in body["error"]


def test_a_search_epoch_recorded_again_after_a_resume_is_not_sent_twice(tmp_path):
    journal = search_journal(tmp_path / "resumed.db", epochs=2, finish=False)
    try:
        with ServedView([tmp_path]) as view:
            first = _answer(view, "resumed.db")
            journal.search_epoch(search_epoch(2, 0.52))   # a resume writes its epochs again
            journal.search_epoch(search_epoch(3, 0.53))
            grown = _answer(view, "resumed.db", first["cursor"])
            assert [row["epoch"] for row in grown["search"]["epochs"]] == [3]
    finally:
        journal.finish("finished")
        journal.close()


def test_a_damaged_search_epoch_shows_the_run_unreadable_not_a_500(tmp_path):
    path = search_journal(tmp_path / "damaged.db", epochs=2).path
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE search_epochs SET weights = '{not json' WHERE epoch = 2")
    with ServedView([tmp_path]) as view:
        body = _answer(view, "damaged.db")
    assert body["run"]["state"] == "unreadable" and "damaged.db" in body["run"]["error"]
    assert "search" not in body


def test_the_journals_reader_gives_the_epochs_after_one(tmp_path):
    search_journal(tmp_path / "gdas.db", epochs=4)
    journal = Journal(tmp_path / "gdas.db")
    assert [row["epoch"] for row in journal.search_epochs(after=2)] == [3, 4]
    assert journal.search_epochs(after=4) == []


def _line(view, name):
    status, body = view.get("/api/runs")
    return next(line for line in body["runs"] if line["path"].endswith(name))


def _page(view, line):
    """The run page's HTML as the server writes it, before any script runs."""
    status, raw = view.request("GET", f"/run/{line['id']}")
    assert status == 200
    return raw.decode()


def _facts(html):
    return dict(re.findall(r'<dt>([^<]*)</dt><dd data-field="[^"]*">([^<]*)</dd>', html))


def test_a_running_search_speaks_in_epochs_of_its_own(tmp_path):
    journal = search_journal(tmp_path / "live.db", epochs=2, finish=False, of=6)
    try:
        with ServedView([tmp_path]) as view:
            line = _line(view, "live.db")
            search = line["search"]
            assert (search["epochs"], search["of"], search["method"]) == (2, 6, "gdas")
            assert search["cell"] == search_epoch(2).cell
            assert search["table_accuracy"] == pytest.approx(0.52) and search["final"] is None
            assert search["progress"] == "searching: 2 of 6 epochs done"
            # its time left is its epochs' pace: four more of what two took
            assert line["time_left"] == pytest.approx(2 * line["elapsed"], rel=0.2)
            journal.search_epoch(search_epoch(3, 0.57))
            deadline = time.monotonic() + 5   # a line is read again soon after a write
            while _line(view, "live.db")["search"]["epochs"] < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            grown = _line(view, "live.db")["search"]
            assert grown["epochs"] == 3 and grown["table_accuracy"] == pytest.approx(0.57)
            html = _page(view, line)
            status, listing = view.request("GET", "/")
    finally:
        journal.finish("finished")
        journal.close()
    facts = _facts(html)
    assert facts["method"] == "gdas" and facts["search epochs"] == "3 of 6"
    assert facts["latest cell"] == search_epoch(3).cell
    assert facts["its table accuracy"] == "57.00 %"
    assert not {"evaluations", "best", "failed", "mode", "final result"} & set(facts)
    assert '<p id="detail" class="muted">searching: 3 of 6 epochs done</p>' in html
    assert '<td data-field="evaluations" class="num">3/6 epochs</td>' in listing.decode()


def test_a_search_hides_the_black_box_panels_from_the_first_html(tmp_path):
    search_journal(tmp_path / "gdas.db", epochs=2, of=2)
    write_journal(tmp_path / "ga.db", [[ev(0.5), ev(0.6)]])
    with ServedView([tmp_path]) as view:
        searched = _page(view, _line(view, "gdas.db"))
        black_box = _page(view, _line(view, "ga.db"))
    assert searched.count('class="black-box" hidden') == 2
    assert '<section id="training-now" hidden>' in searched
    assert "hidden" not in re.sub(r'<section id="search" hidden>|<button[^>]*>|'
                                  r'<div id="comparison-body" hidden>', "", black_box)
    assert set(_facts(black_box)) >= {"evaluations", "best", "failed", "mode"}


@pytest.mark.parametrize("status, detail, said", [
    ("interrupted", "SIGINT", "interrupted by SIGINT after 3 of 6 epochs; nord resume {}"),
    ("crashed", "RuntimeError: boom", "crashed (RuntimeError: boom) after 3 of 6 epochs; "
                                      "nord resume {}"),
    ("failed", "disk full: no space left", "failed (disk full: no space left) after 3 of 6 "
                                           "epochs; nord resume {}"),
])
def test_a_search_that_stopped_early_says_where_and_how_to_go_on(tmp_path, status, detail, said):
    journal = search_journal(tmp_path / "stopped.db", epochs=3, finish=False, of=6)
    journal.finish(status, detail)
    journal.close()
    with ServedView([tmp_path]) as view:
        line = _line(view, "stopped.db")
        html = _page(view, line)
    assert line["state"] == status and line["time_left"] is None
    assert line["search"]["progress"] == said.format(line["path"])
    assert _facts(html)["search epochs"] == "3 of 6"
    assert f'<p id="detail" class="muted">{said.format(line["path"])}</p>' in html


def test_a_search_whose_writer_died_reads_killed_with_its_epochs(tmp_path):
    # a dead writer is a state the summary's reader decides (the browser tests kill one)
    search_journal(tmp_path / "killed.db", epochs=4, of=6)
    with JournalReader(tmp_path / "killed.db", read_only=True) as reader:
        summary = reader.summary()
        read = search_read(reader, summary)
    line = search_line(summary, read, "killed", "runs/killed.db")
    assert line["progress"] == ("killed (its writer stopped) after 4 of 6 epochs; "
                                "nord resume runs/killed.db")
    assert line["facts"][2] == ["latest cell", search_epoch(4).cell]


def test_a_searched_search_evaluating_its_final_cell_says_so(tmp_path):
    journal = search_journal(tmp_path / "last.db", epochs=6, finish=False, of=6)
    try:
        with ServedView([tmp_path]) as view:
            line = _line(view, "last.db")
    finally:
        journal.finish("finished")
        journal.close()
    assert line["search"]["progress"] == "searched 6 of 6 epochs; evaluating the final cell"
    assert line["time_left"] is None   # the final evaluation has no epochs to go by


def test_a_finished_search_shows_its_final_cells_result_plainly(tmp_path):
    result = EvaluationResult(accuracy=0.9123, reported_accuracy=0.9001, n_params=1000)
    search_journal(tmp_path / "done.db", epochs=3, of=3, final=result)
    failed = EvaluationResult(status="failed", error="CUDA out of memory")
    search_journal(tmp_path / "broke.db", epochs=3, of=3, final=failed)
    with ServedView([tmp_path]) as view:
        line = _line(view, "done.db")
        facts = _facts(_page(view, line))
        broke = _facts(_page(view, _line(view, "broke.db")))
    final = line["search"]["final"]
    assert (final["status"], final["accuracy"], final["reported_accuracy"]) == (
        "ok", 0.9123, 0.9001)
    assert line["search"]["progress"] == "finished: 3 of 3 epochs searched"
    assert facts["final cell"] == search_epoch(3).cell and "latest cell" not in facts
    assert facts["final result"] == "validation accuracy 91.23 %; test accuracy 90.01 %"
    assert broke["final result"] == "failed: CUDA out of memory"


def test_a_search_whose_record_names_no_epochs_says_it_does_not_know(tmp_path):
    search_journal(tmp_path / "old.db", epochs=2)
    with ServedView([tmp_path]) as view:
        line = _line(view, "old.db")
        status, listing = view.request("GET", "/")
    assert line["search"]["of"] is None
    assert '<td data-field="evaluations" class="num">2/? epochs</td>' in listing.decode()


def test_a_run_that_shares_no_weights_has_no_search_line(tmp_path):
    write_journal(tmp_path / "ga.db", [[ev(0.5), ev(0.6)]])
    with ServedView([tmp_path]) as view:
        line = _line(view, "ga.db")
        status, listing = view.request("GET", "/")
    assert "search" not in line and line["evaluations"] == 2
    assert (f'<td data-field="evaluations" class="num">2/{line["budget"]}</td>'
            in listing.decode())
