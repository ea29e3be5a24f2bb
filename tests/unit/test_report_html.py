"""report.html opened from disk in headless Chromium: one self-contained file that loads
without console errors, whose tables sort, and that renders to a screenshot."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nord.report import write_report
from nord.report.page import Page
from nord.app.evaluation import TEST_SELECTION
from tests.helpers.journals import ev, write_journal

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium "
    "chromium-driver; scripts/setup.sh installs it)")


def chromium(page: Path, profile: Path, *arguments: str):
    """Chromium headless on ``page`` (a file URL, no server), isolated from the network and
    from any profile; its console messages go to stderr."""
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *arguments,
         page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120)


def console_messages(stderr: str):
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture(scope="module")
def html_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("html")
    paths = [write_journal(folder / "ga.db", [[ev(0.5, 1200, reported=0.45), ev(None)],
                                              [ev(0.7, 900, reported=0.66), ev(0.6, 3000)]]),
             write_journal(folder / "onTest.db", [[ev(0.4), ev(0.55, reported=0.5)]],
                           dataset={"name": "digits", "n_valid": 0},
                           extra={"warnings": [TEST_SELECTION]})]
    page = write_report(paths, folder / "out", fmt="html", best_count=1)
    # the page alone, away from the files beside it: it must not need them
    alone = folder / "alone"
    alone.mkdir()
    shutil.copy(page, alone / "report.html")
    return alone / "report.html"


@pytest.mark.processes
def test_the_page_loads_without_console_errors_and_runs_its_script(html_report, tmp_path):
    done = chromium(html_report, tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    assert console_messages(done.stderr) == []
    dom = done.stdout
    assert 'title="click to sort"' in dom          # set by the page's script: it ran
    assert dom.count("<img ") >= 4 and 'src="data:image/png;base64,' in dom
    assert "selected its architectures on TEST data" in dom


@pytest.mark.processes
def test_a_broken_script_would_be_caught(tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>")
    done = chromium(page, tmp_path / "profile", "--dump-dom")
    assert any("undefinedFunction" in line for line in console_messages(done.stderr))


def sorted_column(tmp_path, cells, clicks):
    """The column's cells, top to bottom, after ``clicks`` clicks on its header in Chromium."""
    page = Page("sorting")
    page.table(["wall time"], [[cell] for cell in cells], align=["right"])
    text = page.to_html().replace(
        "</body>", "<script>" + 'document.querySelector("th").click();' * clicks
        + "</script></body>")
    path = tmp_path / "sort.html"
    path.write_text(text)
    done = chromium(path, tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0 and console_messages(done.stderr) == [], done.stderr[-2000:]
    return re.findall(r'<td class="right">([^<]*)</td>', done.stdout)


@pytest.mark.processes
def test_a_click_sorts_durations_by_their_length_and_n_a_last(tmp_path):
    cells = ["4.5 min", "n/a", "50 s", "2 h", "12,000 ms", "90 s"]
    assert sorted_column(tmp_path, cells, 0) == cells
    assert sorted_column(tmp_path, cells, 1) == ["12,000 ms", "50 s", "90 s", "4.5 min", "2 h",
                                                 "n/a"]
    assert sorted_column(tmp_path, cells, 2) == ["2 h", "4.5 min", "90 s", "50 s", "12,000 ms",
                                                 "n/a"]


@pytest.mark.processes
def test_the_page_renders_to_a_screenshot(html_report, tmp_path):
    from matplotlib.image import imread

    shot = tmp_path / "report.png"
    done = chromium(html_report, tmp_path / "profile", "--window-size=1280,2000",
                    "--hide-scrollbars", f"--screenshot={shot}")
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    image = imread(str(shot))
    assert image.shape[:2] == (2000, 1280)
    assert float(image[..., :3].std()) > 0.05     # text, tables and figures, not a blank page
    keep = os.environ.get("NORD_REPORT_SCREENSHOT")
    if keep:   # for people who want to look at it
        shutil.copy(shot, keep)


def test_the_page_needs_nothing_beside_it(html_report):
    text = html_report.read_text()
    assert "http://" not in text and "https://" not in text
    assert '<img src="' in text and '<img src="accuracy.png"' not in text
    summary = json.loads((html_report.parent.parent / "out" / "summary.json").read_text())
    assert summary["selected_on_test"] == ["onTest"]
