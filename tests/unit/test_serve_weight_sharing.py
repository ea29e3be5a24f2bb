"""nord serve's JSON for a weight-sharing search, served for real on a loopback socket: each
epoch's distribution in the benchmark's order of edges and operations, the table accuracy
or its absence, and only the epochs a live search gained after the page's cursor; a run that
shares no weights carries nothing of it."""
from __future__ import annotations

import sqlite3
from urllib.parse import urlencode

import pytest

from nord.benchmarks.nasbench201.cells import EDGE_NAMES, OPS
from nord.journal import Journal
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
