"""bench/evaluation_setup.py runs, checks that both set-ups give the same figures and weights,
and prints the paired ratio."""
from bench.evaluation_setup import main


def test_the_setup_bench_pairs_one_pass_against_two(capsys):
    assert main(pairs=3) == 0
    out = capsys.readouterr().out
    for name in ("two passes", "one pass", "nn.Sequential", "ratio one pass / two passes"):
        assert name in out
