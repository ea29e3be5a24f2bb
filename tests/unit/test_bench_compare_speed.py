"""bench/compare_speed.py prints, per algorithm, the CPU per result it measured."""
import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "compare_speed.py"


def test_the_bench_prints_cpu_per_result_and_results_per_cpu_second(capsys):
    spec = importlib.util.spec_from_file_location("compare_speed", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["random", "rea"], seeds=3, budget=None, dataset="cifar10", simulated=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:5] == ["algorithm", "results", "CPU", "(s)", "µs/result"]
    for name, line in zip(("random", "rea"), lines[2:4]):
        fields = line.split()
        told, cpu, per_result, per_second = (int(fields[1].replace(",", "")), float(fields[2]),
                                             float(fields[3]),
                                             int(fields[4].replace(",", "")))
        assert fields[0] == name and told > 3 * 1000   # 8 workers x 20,000 s each
        assert cpu > 0 and per_result * per_second == pytest.approx(1e6, rel=0.02)
