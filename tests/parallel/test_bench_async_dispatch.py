"""bench/async_dispatch.py runs on the engine under mpirun, at a tiny size.

The benchmark imports the search machinery inside the mpirun job, so only running it shows
that it still works; its figures are not judged here (a shared machine makes them noisy).
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.mpi   # the benchmark starts mpirun itself
def test_the_dispatch_benchmark_measures_both_modes_on_two_workers(tmp_path):
    out = tmp_path / "figures.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "async_dispatch.py"), "--workers", "2",
         "--evaluations", "8", "--mean", "0.01", "--overhead-evaluations", "10",
         "--overhead-repeats", "1", "--timeout", "60", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    records = {record["name"]: record for record in json.loads(out.read_text())["records"]}
    for name in ("async", "sync", "async prefetch=1"):
        assert records[name]["evaluations"] == 8 and records[name]["workers"] == 2
        assert records[name]["trained"] + records[name]["cached"] == 8
        assert records[name]["busy"] > 0 and records[name]["gap"] >= 0
    assert {"2w journal on", "1w journal on", "1w journal off"} <= set(records)
    assert "target async utilisation" in done.stdout
