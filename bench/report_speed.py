"""How long `nord report` takes on a long run, against merely loading its journal.

    .venv/bin/python bench/report_speed.py            # 15,000 evaluations, about 30 s
    .venv/bin/python bench/report_speed.py --quick    # 2,000 evaluations, a few seconds

Generates a NAS-Bench-201 run (regularized evolution, asynchronous mode, table look-ups: no
training) into a temporary folder, then times, in this process:

* the baseline: reading the journal's evaluations (``Journal.evaluations()``), which any
  report must do at least once;
* ``write_report`` of that run (Markdown) and of it as one self-contained HTML page.

Prints the seconds of each and their ratio to the baseline. The report of a 15,000-evaluation
run took about 50 s when every generation of the asynchronous run was drawn as a box.
"""
import argparse
import tempfile
import time
from pathlib import Path


def generate(path: Path, evaluations: int, seed: int) -> float:
    """Write the run's journal; returns the seconds it took."""
    from nord.benchmarks import BenchmarkEvaluator, NASBench201Space
    from nord.search.engine import run_search
    from nord.search.algorithms.evolution import RegularizedEvolution

    started = time.perf_counter()
    run_search(RegularizedEvolution(NASBench201Space(), seed=seed),
               BenchmarkEvaluator("cifar10"), budget=evaluations, mode="async", journal=path)
    return time.perf_counter() - started


def best_of(repeats: int, function) -> float:
    """The fastest of ``repeats`` calls, in seconds (the least disturbed by other work)."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def main(evaluations: int, repeats: int, seed: int) -> None:
    from nord.journal import Journal
    from nord.report import write_report

    with tempfile.TemporaryDirectory(prefix="nord-report-speed-") as folder:
        journal = Path(folder) / "nasbench201.db"
        made = generate(journal, evaluations, seed)
        print(f"journal of {evaluations:,} evaluations written in {made:.1f} s")

        def load():
            with Journal(journal) as opened:
                opened.evaluations()

        baseline = best_of(repeats, load)
        markdown = best_of(repeats, lambda: write_report([journal], Path(folder) / "md"))
        page = best_of(repeats, lambda: write_report([journal], Path(folder) / "html",
                                                     fmt="html"))
        print(f"load the evaluations (baseline)  {baseline:7.2f} s   1.0 x")
        print(f"write_report, Markdown           {markdown:7.2f} s {markdown / baseline:5.1f} x")
        print(f"write_report, HTML               {page:7.2f} s {page / baseline:5.1f} x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, default=15000)
    parser.add_argument("--repeats", type=int, default=2, help="timings keep the fastest")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="2,000 evaluations, one repeat")
    args = parser.parse_args()
    if args.quick:
        args.evaluations, args.repeats = 2000, 1
    main(args.evaluations, args.repeats, args.seed)
