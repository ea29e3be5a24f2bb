"""bench/checkpoint_cost.py runs, pairs the two searches and finds their results equal."""
from bench.checkpoint_cost import compare
from nord.data import Digits


def test_the_checkpoint_bench_pairs_searches_with_and_without_checkpoints(capsys):
    compare("digits", Digits(seed=0), repeats=1, budget=2, epochs=2)
    line = capsys.readouterr().out
    assert line.startswith("digits       ratio (every 1 / none) median ")
    assert "2 checkpoints" in line and "folder peak" in line and "folder peak 0 KB" not in line
