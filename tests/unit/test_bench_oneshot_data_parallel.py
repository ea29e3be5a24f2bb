"""bench/oneshot_data_parallel.py: its compute-alone baseline makes the data-parallel search's
steps without a collective, and its --quick size runs both parts under mpirun and prints and
writes figures that hang together."""
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from bench.oneshot_data_parallel import (CALLS, OVERHEAD_TARGET, SCALING_TARGET, SIZES,
                                         ShardOnly, balanced_ratio, curator, timed_search)
from nord.evaluators.group import Alone

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench" / "oneshot_data_parallel.py"
QUICK = SIZES["quick"]["overhead"]


@pytest.mark.parametrize("rank", [0, 1])
@pytest.mark.slow
def test_the_compute_alone_takes_a_ranks_shard_and_makes_the_epochs_group_calls(rank):
    data = curator(QUICK["samples"], QUICK["side"])
    _, alone_steps, _, alone_calls = timed_search("gdas", QUICK, data, Alone())
    seconds, steps, call_seconds, calls = timed_search("gdas", QUICK, data, ShardOnly(rank, 2))
    assert steps == math.ceil(alone_steps / 2)
    assert len(seconds) == QUICK["epochs"] and all(s > 0 for s in seconds)
    # the calls of a data-parallel epoch, answered locally: the checks at the epoch's end,
    # which one process skips, and the averaging and draws of each step
    assert calls["check_same"] == 2 * QUICK["epochs"] and alone_calls["check_same"] == 0
    assert calls["share_root_buffers"] == QUICK["epochs"]
    assert calls["average_gradients"] >= 2 * steps * QUICK["epochs"]   # weights, architecture
    assert calls["root_decides"] >= steps * QUICK["epochs"]           # the Gumbel noise
    assert set(call_seconds) == set(CALLS) and sum(call_seconds.values()) < sum(seconds)


def test_the_ratio_balances_the_order_of_the_rounds():
    assert balanced_ratio([1.2]) == 1.2
    assert balanced_ratio([1.0, 4.0, 1.0, 4.0]) == pytest.approx(2.0)


METHODS = ("gdas", "darts-v1")


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "figures.json"
    # one backend and two methods, a draw and a mixture (the bench's loops are alike for all)
    done = subprocess.run([sys.executable, str(BENCH), "--quick", "--backend", "torch",
                           "--methods", ",".join(METHODS), "--json", str(path)],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(path.read_text()), done.stdout


@pytest.mark.mpi
@pytest.mark.slow
def test_quick_overhead_times_each_method_asked_for_against_its_compute(quick):
    figures, printed = quick
    rows = figures["overhead"]
    assert [(r["backend"], r["method"]) for r in rows] == [
        ("torch", method) for method in METHODS]
    samples = figures["sizes"]["overhead"]["samples"]
    batch = figures["sizes"]["overhead"]["batch"]
    for row in rows:
        assert row["steps_per_epoch"] == math.ceil(samples // 2 / (2 * batch))
        assert row["parallel_epoch_s"] > 0 and row["compute_epoch_s"] > 0
        assert row["ratios"] == [row["parallel_epoch_s"] / row["compute_epoch_s"]]
        assert row["ratio"] == row["ratios"][0]
        assert 0 < row["calls_share"] == pytest.approx(sum(row["shares"].values()))
        calls = row["calls_per_epoch"]
        assert calls["average_gradients"] >= row["steps_per_epoch"]
        assert calls["check_same"] == 2 and calls["share_root_buffers"] == 1
        verdict = "met" if row["ratio"] <= OVERHEAD_TARGET else "NOT met"
        assert f"{row['method']:<10}{row['backend']:<9}" in printed
        assert f"{row['ratio']:>8.3f}  {verdict:<9}" in printed
    assert f"target <= {OVERHEAD_TARGET}" in printed


@pytest.mark.mpi
@pytest.mark.slow
def test_quick_scaling_pairs_two_ranks_with_one_on_the_same_samples(quick):
    figures, printed = quick
    rows = figures["scaling"]
    assert [r["backend"] for r in rows] == ["torch"]
    for row in rows:
        assert row["steps_two_ranks"] == math.ceil(row["steps_one_rank"] / 2)
        assert row["ratio"] == statistics.median(row["ratios"])
        assert row["ratios"] == [row["two_ranks_one_thread_s"] / row["one_rank_two_threads_s"]]
        assert row["one_rank_one_thread_s"] > 0 and 0 < row["calls_share"] < 1
        verdict = "met" if row["ratio"] <= SCALING_TARGET else "NOT met"
        assert (f"ratio 2 ranks / 1 rank: {row['ratio']:.3f} (rounds: {row['ratios'][0]:.3f}); "
                f"target <= {SCALING_TARGET}: {verdict}") in printed
