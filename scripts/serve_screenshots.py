"""Take the README's screenshots of the live view again (docs/serve-run.png and
docs/serve-candidate.png): a real ASHA run of regularized evolution on digits, its page while
it runs (a candidate's curve growing) and its first candidate's page, in the headless
Chromium and driver the browser tests use, 1,200 px wide.

    .venv/bin/python scripts/serve_screenshots.py              # about two minutes
    .venv/bin/python scripts/serve_screenshots.py --out /tmp   # somewhere else than docs/
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.browser import chromium_driver, wait_for  # noqa: E402
from tests.helpers.serving import nord_env, serve_process, stop_process  # noqa: E402

WIDTH = 1200


def _run(folder: Path) -> subprocess.Popen:
    """The run shown: async regularized evolution with ASHA and the per-layer callbacks, its
    epochs paced to half a second so that a page sees candidates training."""
    return subprocess.Popen(
        [sys.executable, "-m", "nord", "run", "--algorithm", "regularized_evolution",
         "--mode", "async", "--scheduler", "asha", "--min-epochs", "1", "--max-epochs", "9",
         "--budget", "40", "--workers", "2", "--threads", "1", "--seed", "3",
         "--plugin", "tests.helpers.pacing",
         "--callbacks", "grad_norm,weight_norm,dead_relu,pace",
         "--journal", "runs/rea-asha.db"],
        cwd=folder, env={**nord_env(), "NORD_EPOCH_SECONDS": "0.5"},
        stdout=subprocess.DEVNULL, stderr=open(folder / "run.log", "w"))


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="nord-screenshots-") as name:
        folder = Path(name)
        (folder / "runs").mkdir()
        run = _run(folder)
        os.chdir(folder)   # the page names the journal as given: runs/rea-asha.db
        server = serve_process(["runs"])
        url = re.search(r"http://127\.0\.0\.1:\d+/", server.stdout.readline()).group(0)
        driver = chromium_driver(folder / "profile", width=WIDTH, height=1500)
        try:
            driver.get(url)
            run_id = wait_for(lambda: next((line["id"] for line in driver.execute_script(
                "return window.nordRuns.lines") if line.get("evaluations")), None), 120)
            driver.get(f"{url}run/{run_id}")
            # a dozen results in, and the page showing a candidate that has trained three
            # epochs or more (the list and its plot are drawn together)
            wait_for(lambda: driver.execute_script(
                "return window.nordRun.rows.length >= 12 && [...document.querySelectorAll("
                "'#training li[data-points]')].some(li => +li.dataset.points >= 3)"), 600, 0.05)
            driver.save_screenshot(str(out / "serve-run.png"))
            run.wait(timeout=900)
            driver.set_window_size(WIDTH, 1400)
            driver.get(f"{url}run/{run_id}/candidate/0")
            wait_for(lambda: driver.find_elements("css selector", "#signals .js-plotly-plot"), 30)
            time.sleep(1.5)
            driver.save_screenshot(str(out / "serve-candidate.png"))
        finally:
            driver.quit()
            stop_process(server)
            if run.poll() is None:
                run.kill()
                run.wait()
    print(f"wrote {out / 'serve-run.png'} and {out / 'serve-candidate.png'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs",
                        help="folder of the two PNG files (default: docs)")
    main(parser.parse_args().out.resolve())
