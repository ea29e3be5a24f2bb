"""nord serve in a real headless Chromium beside real runs: the page follows a run as it
writes (no reload), shows a candidate's curve grow while it trains, shows a kill -9 as a
crash, equals nord list, and shows markup from a journal as text. One server, one browser
and two runs for the whole module."""
from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.browser import chromium_driver, wait_for
from tests.helpers.journals import ev, write_journal
from tests.helpers.serving import nord_env, serve_process, stop_process

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
NORD = [sys.executable, "-m", "nord"]
XSS = "<script>alert(1)</script>"
EPOCHS = 4
"""Epochs of each candidate of the real runs (a candidate's last epoch and its result may
land in one commit, so a point is looked for before the last one)."""




def _search(journal: Path, budget: int, log: Path) -> subprocess.Popen:
    """A real search whose epochs last a second (a plug-in callback paces them), so that the
    page, which redraws once a second, sees a candidate's curve grow on any machine."""
    return subprocess.Popen(
        NORD + ["run", "--algorithm", "random_search", "--budget", str(budget), "--epochs",
                str(EPOCHS), "--batch-size", "2", "--threads", "1", "--plugin",
                "tests.helpers.pacing", "--callbacks", "pace", "--journal", str(journal)],
        env=nord_env(), stdout=log.open("w"), stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("live")
    marked = write_journal(folder / "marked.db", [[ev(0.4)]])
    descriptor = json.loads(sqlite3.connect(marked).execute(
        "SELECT descriptor FROM evaluations").fetchone()[0])
    descriptor["layers"][0]["name"] = XSS
    descriptor["connections"][0][0] = XSS
    with sqlite3.connect(marked) as connection:
        connection.execute("UPDATE evaluations SET descriptor = ?", (json.dumps(descriptor),))
    write_journal(folder / "table.db", [[ev(0.5, 300), ev(None), ev(0.7, 100)]])
    (folder / "junk.db").write_text("not a journal")
    runs = {"short": _search(folder / "short.db", 2, folder / "short.log"),
            "doomed": _search(folder / "doomed.db", 50, folder / "doomed.log")}
    server = serve_process([folder])
    line = server.stdout.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    assert match, line + server.stderr.read()
    driver = chromium_driver(tmp_path_factory.mktemp("profile"))
    try:
        yield {"url": match.group(0), "folder": folder, "runs": runs, "driver": driver}
    finally:
        driver.quit()
        stop_process(server)
        for run in runs.values():
            if run.poll() is None:
                run.kill()
            run.wait()


def _row(driver, name):
    """The runs page's cells of the journal ``name`` (data-field -> text), read in one script
    (the table is redrawn every second: read cell by cell, a row can go stale under the read)."""
    return driver.execute_script("""
        for (const row of document.querySelectorAll('#runs tbody tr')) {
          const cells = {};
          for (const cell of row.querySelectorAll('td[data-field]'))
            cells[cell.dataset.field] = cell.innerText.trim();
          if ((cells.path || '').endsWith(arguments[0])) return cells;
        }
        return null;""", name)


def test_the_evaluation_count_grows_without_a_reload(site):
    # the long run: on a loaded machine the short one (2 candidates) may end before the
    # browser has started, and its count would never grow again
    driver = site["driver"]
    driver.get(site["url"])
    first = wait_for(lambda: (_row(driver, "doomed.db") or {}).get("evaluations"), 20)
    done = int(first.split("/")[0])
    wait_for(lambda: int(_row(driver, "doomed.db")["evaluations"].split("/")[0]) > done, 40)
    assert driver.execute_script("return performance.getEntriesByType('navigation').length") == 1


def test_a_training_candidates_curve_gains_a_point_before_it_ends(site):
    # the long run: the short one may be over by now on a quick machine
    driver = site["driver"]
    run_id = wait_for(lambda: next((line["id"] for line in driver.execute_script(
        "return window.nordRuns.lines") if line["path"].endswith("doomed.db")), None), 10)
    driver.get(f"{site['url']}run/{run_id}")

    def training():
        items = driver.find_elements("css selector", "#training li[data-candidate]")
        return {item.get_attribute("data-candidate"): int(item.get_attribute("data-points"))
                for item in items}

    first = {}   # each candidate's points when first seen training with one or more

    def gained():   # a candidate still listed (so still training) with more points than then
        now = training()
        for candidate, points in now.items():
            if points >= 1:
                first.setdefault(candidate, points)
        return [c for c, points in now.items() if c in first and first[c] < points]

    wait_for(gained, 60)


def test_the_page_shows_nord_lists_numbers_once_the_run_ends(site):
    driver = site["driver"]
    assert site["runs"]["short"].wait(timeout=120) == 0
    driver.get(site["url"])
    row = wait_for(lambda: (lambda r: r if r and r["state"] == "finished" else None)(
        _row(driver, "short.db")), 20)
    listed = subprocess.run(NORD + ["list", str(site["folder"] / "short.db")], env=nord_env(),
                            capture_output=True, text=True, check=True).stdout.splitlines()[1]
    _, _, state, evaluations, failed, best = listed.split()[:6]
    assert (row["state"], row["evaluations"], row["failed"]) == (state, evaluations, failed)
    assert row["best"] == f"{100 * float(best):.2f} %"


def test_a_run_killed_with_sigkill_shows_as_crashed(site):
    driver = site["driver"]
    doomed = site["runs"]["doomed"]
    driver.get(site["url"])
    wait_for(lambda: (_row(driver, "doomed.db") or {}).get("state") == "running", 30)
    doomed.send_signal(signal.SIGKILL)
    doomed.wait()
    state = wait_for(lambda: (lambda r: r["state"] if r["state"] != "running" else None)(
        _row(driver, "doomed.db")), 30)   # the heartbeat window (3 x 10 s) at the most
    assert state.startswith("killed") and "crashed" in state
    assert (_row(driver, "junk.db") or {}).get("state") == "unreadable"


def test_markup_in_a_journal_shows_as_text(site):
    driver = site["driver"]
    driver.get(site["url"])
    run_id = wait_for(lambda: next((line["id"] for line in driver.execute_script(
        "return window.nordRuns.lines") if line["path"].endswith("marked.db")), None), 10)
    driver.get(f"{site['url']}run/{run_id}/candidate/0")
    labels = wait_for(lambda: driver.execute_script(
        "return [...document.querySelectorAll('#drawing svg text')].map(t => t.textContent)"), 10)
    assert XSS in labels
    assert driver.execute_script("return document.scripts.length") == 3   # the page's own
    assert XSS in driver.find_element("id", "descriptor").text
    assert not [entry for entry in driver.get_log("browser") if "alert" in entry["message"]]


def test_another_host_than_loopback_is_served_with_a_warning(tmp_path):
    server = serve_process([tmp_path], "--host", "0.0.0.0")
    try:
        line = server.stdout.readline()
        assert "http://0.0.0.0:" in line
    finally:
        stop_process(server)
    assert "warning: serving on 0.0.0.0, not loopback" in server.stderr.read()


def test_a_slurm_job_prints_the_command_that_opens_its_view():
    env = {**os.environ, "SLURM_SUBMIT_HOST": "login1", "SLURM_SUBMIT_DIR": "/home/ada/nord",
           "USER": "ada"}
    printed = subprocess.run(
        ["bash", str(ROOT / "slurm" / "serve_hint.sh"), ".venv/bin/nord", "run", "--journal",
         "runs/async.db"], env=env, capture_output=True, text=True, check=True).stdout
    assert ".venv/bin/nord serve /home/ada/nord/runs/async.db --port 8265" in printed
    assert "ssh -N -L 8265:127.0.0.1:8265 ada@login1" in printed
    for template in ("srun.sbatch", "mpirun.sbatch"):
        assert 'bash slurm/serve_hint.sh "$@"' in (ROOT / "slurm" / template).read_text()


def test_the_candidates_table_sorts_and_filters_and_runs_overlay(site):
    driver = site["driver"]
    driver.get(site["url"])
    ids = wait_for(lambda: {line["path"].rsplit("/", 1)[1]: line["id"] for line in
                            driver.execute_script("return window.nordRuns.lines")
                            if line["state"] != "unreadable"}, 10)
    for name in ("table.db", "marked.db"):
        driver.find_element("css selector", f'tr[data-run="{ids[name]}"] input').click()
    wait_for(lambda: driver.execute_script(
        "return document.getElementById('overlay').data.length") == 2, 10)
    driver.get(f"{site['url']}run/{ids['table.db']}")

    def column(index):
        return [row.find_elements("css selector", "td")[index].text for row in
                driver.find_elements("css selector", "#candidates tbody tr")]

    wait_for(lambda: column(0) == ["0", "1", "2"], 10)
    driver.find_element("xpath", "//table[@id='candidates']//th[text()='accuracy']").click()
    assert column(3) == ["50.00 %", "70.00 %", "-"]   # missing values last
    driver.find_element("xpath", "//table[@id='candidates']//th[text()='accuracy']").click()
    assert column(3) == ["70.00 %", "50.00 %", "-"]
    driver.find_element("id", "filter").send_keys("failed")
    assert column(0) == ["1"]
    assert driver.find_element("css selector", "#failures tbody").text.endswith("synthetic failure")
