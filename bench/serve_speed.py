"""How fast `nord serve` shows a long run, how much it costs, and whether it slows a writer.

    .venv/bin/python bench/serve_speed.py            # 15,625 evaluations, a few minutes
    .venv/bin/python bench/serve_speed.py --quick    # 2,000 evaluations, about a minute

Generates a NAS-Bench-201 run (regularized evolution, asynchronous, table look-ups) into a
temporary folder, starts `nord serve` on it (a process of its own) and a headless Chromium
(Selenium, Debian's chromedriver), then measures:

* paint: the run page of the whole run, cold (new browser profile), from navigation to the
  first paint of its numbers and tables and of its plots (the page's own
  ``performance.now()``), and from before the browser starts; the baseline, measured in the
  same run, is plotly.min.js alone loaded and run cold on a page of the server's;
* the server's memory (resident set, peak sampled every 50 ms while pages load);
* a new result: a writer commits results one at a time into a live journal whose page is
  open; the time from each commit until the page holds it (median and max);
* the server's CPU share idle (no page), with a finished run's page open, and while a
  writer commits with its page open;
* writer slowdown: the same writer (results committed one at a time, as a run does) alone,
  polled by a plain client process asking what the page asks (the server's reads alone), and with
  the page open in Chromium on the same machine (the browser's drawing too), in rotated
  order; the ratios of medians.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.browser import chromium_driver  # noqa: E402


def generate(path: Path, evaluations: int, seed: int) -> float:
    from nord.benchmarks import BenchmarkEvaluator, NASBench201Space
    from nord.search.algorithms.evolution import RegularizedEvolution
    from nord.search.engine import run_search

    started = time.perf_counter()
    run_search(RegularizedEvolution(NASBench201Space(), seed=seed),
               BenchmarkEvaluator("cifar10"), budget=evaluations, mode="async", journal=path)
    return time.perf_counter() - started


def run_id(path: Path) -> str:
    from nord.serve.catalogue import _id
    return _id(path)


class Writer:
    """A live journal, written as a run writes it: one commit per result."""

    def __init__(self, path: Path):
        from nord.journal import Journal, RunRecord
        self.journal = Journal(path)
        self.journal.start(RunRecord("random", {}, 1, {"space": "toy"}, evaluator={},
                                     dataset={"name": "synthetic"}, mode="async",
                                     budget=10 ** 6, extra={},
                                     execution={"ranks": 1, "groups": 1, "workers": 1}))
        self.count = 0

    def tell(self) -> float:
        from nord.evaluators.result import EvaluationResult
        from nord.journal import CandidateRecord, EvaluationRecord
        number = self.count
        result = EvaluationResult(accuracy=0.5 + (number % 97) / 200, n_params=1000 + number,
                                  train_time=1.0, epochs=1)
        now = time.time()
        self.journal.record([CandidateRecord(number, 0, [number], number)], [EvaluationRecord(
            number, number, 0, [number], str(number), None, 0, result, None, now, now)])
        self.count += 1
        return time.time()

    def close(self) -> None:
        self.journal.finish("finished")
        self.journal.close()


POLLER = """
import json, sys, time, urllib.parse, urllib.request
url, query = sys.argv[1], ""
while True:
    with urllib.request.urlopen(url + query, timeout=10) as response:
        data = json.loads(response.read())
    if not data.get("unchanged"):
        query = "?" + urllib.parse.urlencode({**data["cursor"], "seen": data["version"]})
    time.sleep(0.4)
"""
"""What a run's page asks, without a browser, in a process of its own as a client would be:
every 0.4 s, the rows after the cursor, sending back the version it was given."""


def cpu_share(process: psutil.Process, seconds: float) -> float:
    """The process's CPU use over ``seconds``, in percent of one core."""
    before = sum(process.cpu_times()[:2])
    time.sleep(seconds)
    return 100 * (sum(process.cpu_times()[:2]) - before) / seconds


class PeakMemory:
    """The process's peak resident set, sampled every 50 ms while in the with-block."""

    def __init__(self, process: psutil.Process):
        self.process, self.peak, self._stop = process, 0, threading.Event()

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.05)

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()


def main(evaluations: int, pairs: int, writes: int, seed: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory(prefix="nord-serve-speed-") as folder:
        folder = Path(folder)
        big = folder / "nasbench201.db"
        print(f"journal of {evaluations:,} evaluations written in "
              f"{generate(big, evaluations, seed):.1f} s")
        server = subprocess.Popen([sys.executable, "-m", "nord", "serve", str(folder),
                                   "--port", "0"], env=env, stdout=subprocess.PIPE, text=True)
        try:
            url = server.stdout.readline().split(" at ")[1].split()[0]
            process = psutil.Process(server.pid)
            time.sleep(1)
            print(f"server started: {process.memory_info().rss / 2**20:.0f} MB resident; "
                  f"idle, no page open: {cpu_share(process, 10):.2f} % of a core over 10 s")

            request = urllib.request.Request(f"{url}static/plotly.min.js",
                                             headers={"Accept-Encoding": "gzip"})
            urllib.request.urlopen(request).read()   # the server compresses it once, first
            baseline = chromium_driver(folder / "profile-baseline")
            baseline.get(f"{url}static/style.css")   # a page of the server's own origin
            baseline.set_script_timeout(60)
            alone = baseline.execute_async_script(
                "const done = arguments[0], s = document.createElement('script'), t = "
                "performance.now(); s.onload = () => done(performance.now() - t); s.src = "
                f"'{url}static/plotly.min.js'; document.head.append(s);")
            baseline.quit()
            print(f"baseline: plotly.min.js alone, loaded and run cold: {alone / 1000:.2f} s")

            started = time.perf_counter()
            with PeakMemory(process) as memory:
                driver = chromium_driver(folder / "profile-cold")
                opened = time.perf_counter()
                driver.get(f"{url}run/{run_id(big)}")
                painted = None
                while painted is None and time.perf_counter() - opened < 60:
                    painted = driver.execute_script(
                        "const r = window.nordRun; return r && r.plottedAt !== undefined ? "
                        "[r.paintedAt, r.plottedAt, r.rows.length] : null")
                    time.sleep(0.02)
                total = time.perf_counter() - started
            print(f"run page of {painted[2]:,} evaluations, cold: numbers and tables painted "
                  f"{painted[0] / 1000:.2f} s after navigation, plots {painted[1] / 1000:.2f} s; "
                  f"{total:.2f} s including the browser's start; plots {painted[1] / alone:.1f} x "
                  "the baseline")
            print(f"server peak while painting: {memory.peak / 2**20:.0f} MB resident")
            second = chromium_driver(folder / "profile-second")
            with PeakMemory(process) as memory:
                second.get(f"{url}run/{run_id(big)}")
                driver.get(f"{url}run/{run_id(big)}")
                time.sleep(4)
            second.quit()
            print(f"server peak with two pages of it loading: {memory.peak / 2**20:.0f} MB")
            print(f"finished run's page open: {cpu_share(process, 10):.2f} % of a core over 10 s")

            live = folder / "live.db"
            writer = Writer(live)
            writer.tell()
            time.sleep(6)   # the server finds a new journal in a folder within 5 s
            driver.get(f"{url}run/{run_id(live)}")
            time.sleep(2)
            delays = []
            before = sum(process.cpu_times()[:2])
            begun = time.perf_counter()
            for _ in range(10):
                committed = writer.tell()
                want = writer.count
                while driver.execute_script("return window.nordRun.rows.length") < want:
                    time.sleep(0.01)
                delays.append(time.time() - committed)
                time.sleep(0.5)
            share = 100 * (sum(process.cpu_times()[:2]) - before) / (time.perf_counter() - begun)
            writer.close()
            print(f"a new result shows on the page after {statistics.median(delays):.2f} s "
                  f"(median of 10; max {max(delays):.2f} s); server CPU meanwhile "
                  f"{share:.1f} % of a core")

            def write(path: Path, how: str) -> float:
                target = Writer(path)
                target.tell()
                driver.get("about:blank")
                time.sleep(6)   # the same pause every time: the server finds the journal
                poller = (subprocess.Popen([sys.executable, "-c", POLLER,
                                            f"{url}api/run/{run_id(path)}"])
                          if how == "requests" else None)
                if how == "page":
                    driver.get(f"{url}run/{run_id(path)}")
                time.sleep(1.5)
                started = time.perf_counter()
                for _ in range(writes):
                    target.tell()
                took = time.perf_counter() - started
                if poller is not None:
                    poller.kill()
                    poller.wait()
                target.close()
                return took

            times = {"alone": [], "requests": [], "page": []}
            for trial in range(pairs):   # rotated: no condition comes first every time
                order = list(times)[trial % 3:] + list(times)[:trial % 3]
                for how in order:
                    times[how].append(write(folder / f"{how}{trial}.db", how))
            alone = statistics.median(times["alone"])
            print(f"writer, {writes} results one commit each, {pairs} trials each, medians: "
                  f"alone {alone:.2f} s; polled as the page polls, by a plain client (the "
                  f"server's reads alone) {statistics.median(times['requests']):.2f} s "
                  f"({statistics.median(times['requests']) / alone:.2f} x); with the page open "
                  f"in Chromium on the same machine {statistics.median(times['page']):.2f} s "
                  f"({statistics.median(times['page']) / alone:.2f} x)")
            print(f"server at the end: {process.memory_info().rss / 2**20:.0f} MB resident")
            driver.quit()
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, default=15625)
    parser.add_argument("--pairs", type=int, default=6, help="writer trials per condition")
    parser.add_argument("--writes", type=int, default=500, help="results a writer commits")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="2,000 evaluations, 2 pairs")
    args = parser.parse_args()
    if args.quick:
        args.evaluations, args.pairs, args.writes = 2000, 2, 500
    main(args.evaluations, args.pairs, args.writes, args.seed)
