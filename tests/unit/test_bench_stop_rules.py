"""bench/stop_rules.py: a small run prints both sides' figures, and the rules save epochs."""
import importlib.util
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "stop_rules.py"


@pytest.mark.slow
def test_a_small_run_compares_epochs_and_accuracy_with_and_without_rules(capsys):
    spec = importlib.util.spec_from_file_location("bench_stop_rules", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(seeds=2, count=3, epochs=2) == 0
    printed = capsys.readouterr().out
    spent = [float(x) for x in re.findall(r"epochs +([\d.]+) \+-", printed)]
    assert len(spent) == 2 and spent[0] == 3 * 2 and spent[1] <= spent[0]
    assert "best test accuracy" in printed and "epochs saved" in printed
