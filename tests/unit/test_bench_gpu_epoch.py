"""bench/gpu.py's recipe-epoch part runs on the CPU at its --quick size and prints the lines
that bench/results/gpu.json's nb201_epoch_fp32_s, nb201_epoch_bf16_s and bf16_speedup come
from."""
import re

import pytest
import torch

from bench.gpu import NB201_EPOCH_QUICK, recipe_epoch
from nord.nn.precision import precision_refusal

CPU = torch.device("cpu")


@pytest.fixture
def one_thread():
    """One torch thread: quicker than two on a shared CPU; the other tests get theirs back."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_the_quick_epoch_is_timed_at_fp32_and_at_bf16_where_the_device_takes_it(capsys,
                                                                               one_thread):
    figures = recipe_epoch(CPU, NB201_EPOCH_QUICK)
    printed = capsys.readouterr().out
    assert printed.startswith("one epoch of a NAS-Bench-201 network (C 4, N 1), recipe "
                              "nasbench201 (batch 256), 64 images 3x32x32 on cpu\n"), printed
    assert figures["nb201_epoch_fp32_s"] > 0
    assert re.search(r"^nb201_epoch_fp32_s: \d+\.\d{3}$", printed, re.MULTILINE), printed
    if precision_refusal("bf16", CPU) is None:    # a CPU with AMX tiles
        assert figures["bf16_speedup"] == (figures["nb201_epoch_fp32_s"]
                                           / figures["nb201_epoch_bf16_s"])
        assert re.search(r"^bf16_speedup: \d+\.\d{3}$", printed, re.MULTILINE), printed
    else:
        assert set(figures) == {"nb201_epoch_fp32_s"}
        assert "\nnb201_epoch_bf16_s: not measured, refused: --precision bf16" in printed
        assert "bf16_speedup" not in printed


@pytest.mark.slow
def test_the_quick_oneshot_steps_are_timed_for_every_method(capsys, one_thread):
    from bench.gpu import ONESHOT_STEP_QUICK, oneshot_epoch
    from nord.oneshot.registry import METHODS
    figures = oneshot_epoch(CPU, ONESHOT_STEP_QUICK, repeats=1)
    printed = capsys.readouterr().out
    assert printed.startswith("a search step of each weight-sharing method: supernet C 4, N 1, "
                              "batches of 8 images 3x32x32, float32, on cpu"), printed
    for name in METHODS.names():
        step, epoch = figures[f"oneshot_{name}_step_ms"], figures[f"oneshot_{name}_epoch_s"]
        assert step > 0 and epoch == pytest.approx(step / 1e3 * 391)
        assert re.search(rf"^oneshot_{name}_step_ms: \d+\.\d$", printed, re.MULTILINE), printed
        assert f"oneshot_{name}_peak_gib" not in figures          # memory: on a GPU only
