"""nord serve's application, served for real on a loopback socket in this process: what it
shows equals nord list, the cursor returns only what was added, and it reads nothing but
the journals it was given, read-only, answering bad requests with a 4xx."""
from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import sqlite3
import time

import pytest
import uvicorn

from nord.errors import ConfigurationError, JournalError
from nord.evaluators.result import EpochRecord, EvaluationResult
from nord.journal import CandidateRecord, EvaluationRecord, Journal, RunRecord, list_runs
from nord.journal.reads import JournalReader
from nord.serve import catalogue
from nord.serve.catalogue import Catalogue
from nord.serve.hosts import ServedNames
from nord.serve.server import bind, is_loopback
from tests.helpers.journals import ev, write_journal
from tests.helpers.serving import ServedView

XSS = "<script>alert(1)</script>"
MARKUP = "<img src=x onerror=alert(1)>"


def _curve(count):
    return [EpochRecord(epoch, 1.0 / epoch, 0.5 + epoch / 20, 0.9, 0.1,
                        {"grad_norm/conv": 0.1 * epoch, f"grad_norm/{XSS}": 0.2})
            for epoch in range(1, count + 1)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    write_journal(root / "ga.db", [[ev(0.5, 1200), ev(None)], [ev(0.7, 900), ev(0.6, 3000)]],
                  epochs={0: _curve(3)})
    random = write_journal(root / "deep" / "random.db", [[ev(0.4), ev(0.45)]],
                           algorithm="random")
    descriptor = json.loads(sqlite3.connect(random).execute(
        "SELECT descriptor FROM evaluations WHERE sequence = 0").fetchone()[0])
    descriptor["layers"][0]["name"] = XSS
    descriptor["connections"][0][0] = XSS
    with sqlite3.connect(random) as connection:   # a layer named like markup, kept as text
        connection.execute("UPDATE evaluations SET descriptor = ? WHERE sequence = 0",
                           (json.dumps(descriptor),))
    write_journal(root / f"{MARKUP}.db", [[ev(0.3)]])   # a file name is markup too
    (root / "notes.txt").write_text("not a journal")
    (root / "truncated.db").write_bytes((root / "ga.db").read_bytes()[:100])
    (root / "short.db").write_text("not sqlite")   # shorter than SQLite's header
    (root / "empty.db").write_bytes(b"")
    (root / "random-bytes.db").write_bytes(bytes(range(256)) * 8)
    with sqlite3.connect(root / "foreign.db") as connection:
        connection.execute("CREATE TABLE foo (x)")
    (root / "other.json").write_text('{"a": 1}')
    (root / "compare.json").write_text(json.dumps({
        "benchmark": "nasbench201", "dataset": "cifar10", "budget": 10, "seeds": 2,
        "algorithms": {XSS: {"summary": {"test": {"mean": 90.0, "std": 1.0}},
                             "curve": {"time": [0, 1], "mean": [80, 90], "low": [79, 89],
                                       "high": [81, 91], "runs": [2, 2]}}}}))
    return root


@pytest.fixture(scope="module")
def view(folder):
    with ServedView([folder]) as served:
        yield served


def _lines(view):
    status, body = view.get("/api/runs")
    assert status == 200
    return {line["path"]: line for line in body["runs"]}


def test_the_runs_list_has_nord_lists_numbers(view, folder):
    lines = _lines(view)
    runs, _ = list_runs(folder)
    assert len(runs) == 3
    for run in runs:
        line = lines[str(run["path"])]
        assert (line["state"], line["evaluations"], line["budget"], line["failed"]) == (
            run["state"], run["evaluations"], run["budget"], run["failed"])
        assert math.isclose(line["best"], run["best_accuracy"])


def test_junk_files_show_unreadable_and_the_rest_serves(view, folder):
    lines = _lines(view)
    unreadable = {name for name, line in lines.items() if line["state"] == "unreadable"}
    assert unreadable == {str(folder / name) for name in
                          ("truncated.db", "short.db", "empty.db", "random-bytes.db",
                           "foreign.db")}
    assert all(lines[path]["error"] for path in unreadable)
    assert lines[str(folder / "compare.json")]["kind"] == "comparison"
    assert str(folder / "notes.txt") not in lines and str(folder / "other.json") not in lines
    for path in unreadable:   # their pages answer, saying so
        status, body = view.get(f"/api/run/{lines[path]['id']}")
        assert status == 200 and body["run"]["state"] == "unreadable"


@pytest.mark.parametrize("path", [
    "/../../etc/passwd", "/static/../../../etc/passwd", "/static/..%2f..%2f..%2fetc%2fpasswd",
    "/static/%2e%2e/%2e%2e/etc/passwd", "/static/%252e%252e%252fetc%252fpasswd",
    "/static/app.py", "/static/runs.html/../../app.py", "/api/run/..%2Fga.db",
    "/api/run/%2Ftmp%2Fga.db", "/run/../api/runs/../../../etc/passwd", "/etc/passwd",
    "/api/run/ga.db", "/api/comparison/..%5c..%5cga.db", "//etc/passwd",
])
def test_any_path_but_the_served_ones_is_404(view, path):
    status, body = view.request("GET", path)
    assert status == 404, (path, body[:200])
    assert b"root:" not in body and b"SQLite format" not in body


def test_malformed_requests_get_a_4xx_and_the_server_lives_on(view, folder):
    run_id = next(line["id"] for line in _lines(view).values() if line["path"].endswith("ga.db"))
    for path, expected in [
            (f"/api/run/{run_id}?evaluations=-1", 400), (f"/api/run/{run_id}?epochs=1e9", 400),
            (f"/api/run/{run_id}?legs=" + "9" * 40, 400),
            (f"/api/run/{run_id}?evaluations=%00", 400),
            (f"/api/run/{run_id}/candidate/99999999999", 404),
            (f"/api/run/{run_id}/candidate/abc", 404), (f"/api/run/{run_id}/candidate/-3", 404),
            (f"/run/{run_id}/candidate/x", 404), ("/api/run/" + "f" * 12, 404),
            ("/api/run/" + "A" * 5000, 404)]:
        status, body = view.get(path)
        assert status == expected, (path, body)
        assert "error" in body
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert view.request(method, "/api/runs")[0] == 405
    answer = view.raw(b"GARBAGE \x00\xff HTTP/9.9\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 4") or answer == b""
    answer = view.raw(b"GET /api/runs HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 4") or answer.startswith(b"HTTP/1.1 200") or answer == b""
    assert view.get("/api/runs")[0] == 200


@pytest.mark.slow
def test_the_cursor_returns_only_what_was_added(tmp_path):
    path = tmp_path / "live.db"
    journal = Journal(path)
    journal.start(RunRecord("random", {}, 1, {"space": "toy"}, evaluator={},
                            dataset={"name": "synthetic"}, mode="async", budget=5, extra={},
                            execution={"ranks": 1, "groups": 1, "workers": 1}))

    def told(number, accuracy):
        result = EvaluationResult(accuracy=accuracy, n_params=100, train_time=1.0, epochs=2)
        return EvaluationRecord(number, number, 0, [number], str(number), None, 0, result,
                                None, 1.0, 2.0)

    try:
        journal.record([CandidateRecord(0, 0, [0], 0), CandidateRecord(1, 0, [1], 0)],
                       [told(0, 0.5)], [(1, _curve(1)[0], 0)])
        with ServedView([path]) as view:
            run_id = view.catalogue.entries()[0].id
            status, first = view.get(f"/api/run/{run_id}")
            assert status == 200 and first["run"]["state"] == "running"
            assert [row[1] for row in first["evaluations"]] == [0] and "metadata" in first
            assert first["in_flight"] == [1] and [e[:2] for e in first["epochs"]] == [[1, 1]]
            cursor = "&".join(f"{key}={value}" for key, value in first["cursor"].items())
            status, again = view.get(f"/api/run/{run_id}?{cursor}")
            assert again["evaluations"] == [] and "metadata" not in again
            assert again["cursor"] == first["cursor"]
            journal.record([], [], [(1, _curve(2)[1], 0)])   # candidate 1's second epoch
            status, grown = view.get(f"/api/run/{run_id}?{cursor}")
            assert [e[:2] for e in grown["epochs"]] == [[1, 1], [1, 2]]   # its whole curve
            assert grown["evaluations"] == [] and grown["cursor"] != first["cursor"]
            cursor = "&".join(f"{key}={value}" for key, value in grown["cursor"].items())
            seen = f"/api/run/{run_id}?{cursor}&seen={grown['version']}"
            status, same = view.get(seen)   # nothing changed: no rows read
            assert same["unchanged"] and "evaluations" not in same
            assert same["run"]["state"] == "running"
            journal.record([], [told(1, 0.8)])
            status, last = view.get(seen)
            assert "unchanged" not in last and last["version"] != grown["version"]
            time.sleep(2.0)   # a run's line may be two seconds old while the run writes
            status, last = view.get(seen)
            assert [row[1] for row in last["evaluations"]] == [1] and last["in_flight"] == []
            assert last["run"]["evaluations"] == 2 and math.isclose(last["run"]["best"], 0.8)
    finally:
        journal.finish("finished")
        journal.close()


def test_journals_are_opened_read_only(view, folder):
    path = folder / "ga.db"
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    lines = _lines(view)
    run_id = lines[str(path)]["id"]
    for url in ("/api/runs", f"/api/run/{run_id}", f"/api/run/{run_id}/candidate/0"):
        assert view.get(url)[0] == 200
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    reader = JournalReader(path, read_only=True)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader._open().execute("UPDATE run SET budget = 1")
    reader._connection.close()


def test_a_candidate_has_its_drawing_curves_and_no_series(view, folder):
    lines = _lines(view)
    ga, random = lines[str(folder / "ga.db")]["id"], lines[str(folder / "deep" / "random.db")]["id"]
    status, body = view.get(f"/api/run/{ga}/candidate/0")
    assert status == 200 and body["series"]["names"] == []   # no callback returned values
    assert [e["epoch"] for e in body["epochs"]] == [1, 2, 3]
    assert {node["name"] for node in body["drawing"]["nodes"]} >= {"conv", "relu"}
    status, body = view.get(f"/api/run/{ga}/candidate/1")
    assert body["errors"] == ["synthetic failure"]
    status, body = view.get(f"/api/run/{random}/candidate/0")
    assert XSS in {node["name"] for node in body["drawing"]["nodes"]}


def test_the_journals_series_become_a_names_by_steps_grid(tmp_path):
    from nord.evaluators.result import EpochRecord
    # as the evaluator reports them: [step within the epoch, name, value]
    path = write_journal(tmp_path / "series.db", [[ev(0.5)]], epochs={0: [
        EpochRecord(1, 0.5, 0.5, 0.5, 1.0, series=[[0, "conv", 0.5], [4, "conv", 0.25],
                                                   [4, "relu", 1.0]]),
        EpochRecord(2, 0.4, 0.6, 0.4, 1.0, series=[[0, "conv", 0.125]])]})
    with ServedView([path]) as view:
        run_id = view.catalogue.entries()[0].id
        series = view.get(f"/api/run/{run_id}/candidate/0")[1]["series"]
    assert series == {"names": ["conv", "relu"], "steps": ["1:0", "1:4", "2:0"],
                      "values": [[0.5, 0.25, 0.125], [None, 1.0, None]]}


def test_a_comparison_is_served_with_its_curves(view, folder):
    line = _lines(view)[str(folder / "compare.json")]
    status, body = view.get(f"/api/comparison/{line['id']}")
    assert status == 200 and body["algorithms"][XSS]["curve"]["mean"] == [80, 90]
    assert view.get(f"/api/run/{line['id']}/candidate/0")[0] == 404


def _routes(view, folder):
    """One URL of every route the view serves (pages, JSON, static files, the icon)."""
    lines = _lines(view)
    ga, compare = lines[str(folder / "ga.db")]["id"], lines[str(folder / "compare.json")]["id"]
    return ["/", f"/run/{ga}", f"/run/{ga}/candidate/0", f"/run/{compare}", "/static/view.js",
            "/static/style.css", "/static/plotly.min.js", "/favicon.ico", "/api/runs",
            f"/api/run/{ga}", f"/api/run/{ga}/candidate/0", f"/api/comparison/{compare}",
            "/no/such/page"]


def _foreign_hosts(port):
    return ["evil.example", f"evil.example:{port}", f"EVIL.EXAMPLE:{port}",
            f"localhost.evil.example:{port}", f"127.0.0.1.evil.example:{port}",
            f"localhost:{port}@evil.example", f"127.0.0.1:{port + 1}", f"localhost:{port + 1}",
            f"[::1]:{port + 1}", "", " ", "[::1", f"127.0.0.1:{port}:{port}", "0.0.0.0"]


def test_a_foreign_host_is_refused_on_every_route(view, folder):
    routes = _routes(view, folder)
    answered = []
    for host in _foreign_hosts(view.port):
        for route in routes:
            status, body = view.request("GET", route, {"Host": host})
            if status != 403 or b"ga.db" in body or b"Host" not in body:
                answered.append((host, route, status))
    assert not answered
    status, body = view.request("GET", "/api/runs", {"Host": "evil.example"})
    assert "answers only to loopback names" in json.loads(body)["error"]
    assert "open http://127.0.0.1:" in json.loads(body)["error"]


def test_loopback_names_at_the_served_port_are_answered(view, folder):
    port = view.port
    for host in (f"localhost:{port}", f"LOCALHOST:{port}", "localhost", f"127.0.0.1:{port}",
                 "127.0.0.1", f"127.0.0.2:{port}", f"[::1]:{port}", "[::1]", f"[::1]:{port}"):
        for route in _routes(view, folder)[:-1]:
            assert view.request("GET", route, {"Host": host})[0] in (200, 204), (host, route)


def test_a_foreign_origin_is_refused_on_every_route(view, folder):
    port = view.port
    routes = _routes(view, folder)
    answered = []
    for origin in ("http://evil.example", f"http://evil.example:{port}", "null",
                   f"http://localhost.evil.example:{port}", f"https://127.0.0.1:{port}",
                   f"http://127.0.0.1:{port + 1}", f"http://user@127.0.0.1:{port}", ""):
        for route in routes:
            status, body = view.request("GET", route, {"Origin": origin})
            if status != 403 or b"ga.db" in body or b"Origin" not in body:
                answered.append((origin, route, status))
    assert not answered
    for origin in (f"http://localhost:{port}", f"http://127.0.0.1:{port}",
                   f"http://[::1]:{port}", f"http://LOCALHOST:{port}"):
        assert view.request("GET", "/api/runs", {"Origin": origin})[0] == 200, origin


def test_the_host_given_is_answered_as_well_as_loopback():
    names = ServedNames("10.1.2.3", 8300)
    assert names.host_allowed("10.1.2.3:8300") and names.host_allowed("localhost:8300")
    assert not names.host_allowed("10.1.2.4:8300") and not names.host_allowed("10.1.2.3:8301")
    assert names.origin_allowed("http://10.1.2.3:8300")
    named = ServedNames("login1.cluster", 8265)
    assert named.host_allowed("LOGIN1.cluster:8265") and not named.host_allowed("login1:8265")
    everywhere = ServedNames("0.0.0.0", 8265)   # opened by this machine's name
    assert everywhere.host_allowed(f"{socket.gethostname()}:8265")
    assert not everywhere.host_allowed("evil.example:8265")
    assert ServedNames("::1", 8265).host_allowed("[::1]:8265")


def test_the_view_binds_loopback_and_refuses_a_bad_address():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    sock = bind("127.0.0.1", 0)
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
        with pytest.raises(ConfigurationError, match="--port"):
            bind("127.0.0.1", sock.getsockname()[1])   # in use
    finally:
        sock.close()
    with pytest.raises(ConfigurationError, match="between 0 and 65535"):
        bind("127.0.0.1", 70000)


def test_a_missing_path_is_refused(tmp_path):
    with pytest.raises(JournalError, match="does not exist"):
        Catalogue([tmp_path / "nope"])


def test_the_pages_carry_their_numbers_before_any_script_runs(view, folder):
    lines = _lines(view)
    status, page = view.request("GET", "/")
    page = page.decode()
    assert status == 200 and '<td data-field="evaluations" class="num">4/99</td>' in page
    assert "unreadable" in page and MARKUP not in page   # paths escaped
    assert "&lt;img src=x onerror=alert(1)&gt;.db" in page
    ga = lines[str(folder / "ga.db")]
    status, page = view.request("GET", f"/run/{ga['id']}")
    assert '<dd data-field="evaluations">4 of 99</dd>' in page.decode()


def test_nord_serve_refuses_a_missing_path_and_a_bad_port(capsys, tmp_path):
    from nord.app.cli import main
    assert main(["serve", str(tmp_path / "nope")]) == 2
    assert "does not exist; give run journals" in capsys.readouterr().err
    assert main(["serve", str(tmp_path), "--port", "70000"]) == 2
    assert "--port must be between 0 and 65535" in capsys.readouterr().err


def test_a_folder_that_cannot_be_read_is_left_out_and_the_rest_serves(tmp_path, monkeypatch):
    write_journal(tmp_path / "a.db", [[ev(0.5)]])
    write_journal(tmp_path / "locked" / "b.db", [[ev(0.6)]])
    write_journal(tmp_path / "cwd", [[ev(0.7)]])   # as /proc/1/cwd is to `nord serve /`
    scandir, stat = os.scandir, os.stat

    def denied(call):   # root reads any file: the refusal is made here
        def refuse(path=".", *args, **kwargs):
            if os.fspath(path).endswith(("locked", "cwd")):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return call(path, *args, **kwargs)
        return refuse

    monkeypatch.setattr(os, "scandir", denied(scandir))
    monkeypatch.setattr(os, "stat", denied(stat))
    assert [entry.path.name for entry in Catalogue([tmp_path]).entries()] == ["a.db"]


def test_the_kernels_folders_are_not_searched(tmp_path, monkeypatch):
    write_journal(tmp_path / "runs" / "a.db", [[ev(0.5)]])
    write_journal(tmp_path / "proc" / "b.db", [[ev(0.6)]])
    monkeypatch.setattr(catalogue, "_KERNEL_FOLDERS", (str(tmp_path / "proc"),))
    assert [entry.path.name for entry in Catalogue([tmp_path]).entries()] == ["a.db"]


def test_a_path_that_cannot_be_read_is_refused_in_reading_words(capsys, tmp_path, monkeypatch):
    from nord.app.cli import main
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    monkeypatch.setattr(uvicorn.Server, "run", lambda *args, **kwargs: None)   # never serve
    assert main(["serve", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert f"'{tmp_path}' cannot be read (permission denied)" in error
    assert "write" not in error and error.count("\n") == 1


def test_runs_are_listed_in_natural_order(tmp_path):
    for name in ("r10", "r2", "r1", "r11", "b/r3", "a/r20"):
        write_journal(tmp_path / f"{name}.db", [[ev(0.5)]])
    names = [str(entry.path.relative_to(tmp_path)) for entry in Catalogue([tmp_path]).entries()]
    assert names == ["a/r20.db", "b/r3.db", "r1.db", "r2.db", "r10.db", "r11.db"]
    with ServedView([tmp_path]) as view:
        page = view.request("GET", "/")[1].decode()
    assert [page.index(f"/{name}.db<") for name in ("r1", "r2", "r10", "r11")] == sorted(
        page.index(f"/{name}.db<") for name in ("r1", "r2", "r10", "r11"))

