"""The GPU parts of a recipe, precision and memory format: on CUDA, and what a CPU can check.

Tests marked ``gpu`` need CUDA (skipped, saying so, where torch sees none); on a GPU machine
scripts/gpu_checks.sh runs them (``python3 -m pytest -m gpu tests/unit``). The others run
anywhere: the precision refusals, fp32 as a plain step, channels-last on the CPU, and the fp16
loss scaler through a resume and through data-parallel steps, with CPU autocast standing in
for a GPU's. nord refuses fp16 on a CPU (it gains nothing there); those tests lift the refusal,
since the scaler's bookkeeping, the checkpoint and the data-parallel step are the same code on
both. Checks that need deterministic CUDA kernels or NCCL run in a fresh Python process each,
as in tests/unit/test_gpu.py, so that the process-wide settings reach no other test. Written
and run on CPUs; the gpu tests have not yet run on a GPU.
"""
import json
import math
import os
import socket
import subprocess
import sys
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest
import torch
import torch.distributed as dist
from torch import nn

import nord.nn.precision as precision_module
from nord.data import Digits, TensorCurator
from nord.errors import ConfigurationError
from nord.evaluators.base import Leg
from nord.evaluators.callbacks import TrainingCallback
from nord.evaluators.distributed import _GradientAveraging
from nord.evaluators.local import LocalEvaluator
from nord.evaluators.result import EvaluationResult
from nord.nn.precision import Precision, precision_refusal
from nord.nn.recipe import PRECISIONS, Recipe
from nord.nn.training import TrainingStep, make_optimizer, train_epoch
from tests.helpers.journals import conv_descriptor
from tests.mpirun import REPO

CPU = torch.device("cpu")
EPOCHS = 5
CHOICES = f"(choices: {', '.join(PRECISIONS)})"

LOSS_TOLERANCE = 0.05
"""How far a reduced-precision run's validation loss may end from fp32's. bf16 keeps 8 bits of
mantissa and fp16 11, so products are rounded by up to 0.4% and 0.05%, and the weights drift
apart step by step. With CPU autocast standing in, 5 epochs on Digits ended within 5e-4 of
fp32's loss (seeds 0 to 3), while changing the seed moved it by up to 0.17: 0.05 is a hundred
times the first and under a third of the second."""

ACCURACY_TOLERANCE = 0.05
"""How far channels-last accuracy may be from contiguous: the kernels for channels-last add in
another order, so rounding moves the weights apart and now and then a prediction near the
boundary (2 of bright_quadrants' 48 validation images, 6 of its 120 test images). On the CPU
the two runs were equal to the bit when this was written."""


# --- data, networks and what they are trained with ----------------------------------------------
@pytest.fixture(autouse=True)
def torch_threads_put_back():
    """Training here pins torch to one CPU thread (CPU figures compared within a test come from
    the same arithmetic); the other tests get torch's count back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def digits() -> Digits:
    return Digits(seed=0)


def bright_quadrants(n: int = 600, seed: int = 0) -> TensorCurator:
    """3x16x16 noise in which one channel's top-left quadrant is brighter; that channel is the
    class. Three channels make the memory formats differ (for one channel they coincide), and a
    small convolutional network learns it in a few epochs."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    x = rng.normal(size=(n, 3, 16, 16)).astype("float32")
    x[np.arange(n), y, :8, :8] += 0.5
    cut = n * 4 // 5
    return TensorCurator(x[:cut], y[:cut], x[cut:], y[cut:], name="bright-quadrants")


def channels_last(tensor: torch.Tensor) -> bool:
    return tensor.dim() == 4 and tensor.is_contiguous(memory_format=torch.channels_last)


class MemoryFormats(TrainingCallback):
    """Whether, at every training step, the network's 4-d weights and its inputs are
    channels-last."""

    name = "memory_formats"
    every_steps = 1

    def __init__(self):
        self.weights: List[bool] = []
        self.inputs: List[bool] = []

    def on_candidate_start(self, state):
        state.model.register_forward_pre_hook(self._seen_input)

    def _seen_input(self, model, args):
        if model.training:   # validation and test inputs are not prepared: not the subject
            self.inputs.append(channels_last(args[0]))

    def on_step(self, state):
        self.weights.append(all(channels_last(p) for p in state.model.parameters()
                                if p.dim() == 4))


def train(curator, device, callbacks=(), epochs=EPOCHS, **recipe) -> EvaluationResult:
    """A small convolutional network trained by the default recipe with ``recipe``'s parts
    replaced (``callbacks``: instances, kept across the evaluation)."""
    evaluator = LocalEvaluator(curator=curator, epochs=epochs, seed=0, device=device, threads=1,
                               callbacks=[lambda kept=kept: kept for kept in callbacks],
                               recipe=Recipe(**recipe))
    result = evaluator.descriptor_evaluate(conv_descriptor(8))
    assert result.ok, result.error
    assert "diagnostics" not in result.metrics, result.metrics["diagnostics"]
    return result


def assert_same_accuracy(result: EvaluationResult, reference: EvaluationResult) -> None:
    assert abs(result.accuracy - reference.accuracy) <= ACCURACY_TOLERANCE, (
        result.accuracy, reference.accuracy)
    assert abs(result.reported_accuracy - reference.reported_accuracy) <= ACCURACY_TOLERANCE, (
        result.reported_accuracy, reference.reported_accuracy)


# --- the fp16 loss scaler: a resume, and data-parallel steps -------------------------------------
def fp16_resume(device: str, folder: str) -> Dict[str, Any]:
    """A candidate trained at fp16 for 4 epochs straight, and for 2 then, from the checkpoint,
    2 more: what a test compares, as JSON (a fresh process prints it)."""
    curator = Digits(seed=0)
    straight_path = os.path.join(folder, "straight.pt")
    paused_path = os.path.join(folder, "paused.pt")

    def evaluator() -> LocalEvaluator:
        return LocalEvaluator(curator=curator, epochs=4, batch_size=64, data_fraction=0.25,
                              seed=3, device=device, threads=1, keep_model=True,
                              recipe=Recipe(precision="fp16"))

    straight = evaluator()
    whole = straight.descriptor_evaluate(conv_descriptor(8), Leg(checkpoint=straight_path))
    first = evaluator().descriptor_evaluate(conv_descriptor(8),
                                            Leg(epochs=2, checkpoint=paused_path))
    at_pause = torch.load(paused_path, weights_only=True)["parts"].get("precision")
    resumed = evaluator()
    rest = resumed.descriptor_evaluate(conv_descriptor(8), Leg(epochs=4, checkpoint=paused_path))
    theirs = resumed.model.state_dict()
    return {
        "errors": [result.error for result in (whole, first, rest)],
        "epochs_resumed": rest.metrics["epochs_resumed"],
        "different_tensors": [name for name, tensor in straight.model.state_dict().items()
                              if not torch.equal(tensor, theirs[name])],
        "results": [[r.accuracy, r.loss, r.reported_accuracy] for r in (whole, rest)],
        "fresh_scaler": torch.amp.GradScaler(torch.device(device).type).state_dict(),
        "scaler_at_pause": at_pause,
        "scalers_at_end": [torch.load(path, weights_only=True)["parts"].get("precision")
                           for path in (straight_path, paused_path)]}


def assert_resume_equals_straight(figures: Dict[str, Any]) -> None:
    assert figures["errors"] == ["", "", ""], figures["errors"]
    assert figures["epochs_resumed"] == 2
    assert figures["different_tensors"] == []
    straight, resumed = figures["results"]
    assert straight == resumed
    assert figures["scaler_at_pause"], "the checkpoint keeps no state of the loss scaler"
    straight_scaler, resumed_scaler = figures["scalers_at_end"]
    assert resumed_scaler == straight_scaler
    # the paused scaler had moved on from a fresh one, so a resume that lost it would differ
    assert figures["scaler_at_pause"] != figures["fresh_scaler"]


START_SCALE = 1024.0
"""The first step's loss scale: small enough that Linear(16, 4)'s fp16 gradients fit."""
OVERFLOWING_SCALE = 2.0 ** 30
"""Set after the first step: the loss's gradient, times this, is beyond fp16's 65,504."""
LR = 0.1


class ReducedGradients:
    """A data-parallel optimizer that keeps a copy of each step's all-reduced gradients (still
    scaled: the scaler unscales them after) and failure flag."""

    def __init__(self, averaging: _GradientAveraging):
        self.averaging = averaging
        self.reduced: List[torch.Tensor] = []

    def __getattr__(self, name):
        return getattr(self.averaging, name)

    def reduce(self, failed: bool = False) -> torch.Tensor:
        flag = self.averaging.reduce(failed)
        gradients = [p.grad.flatten() for group in self.param_groups for p in group["params"]]
        self.reduced.append(torch.cat(gradients + [flag.reshape(1)]).clone())
        return flag


def _raise(error):
    """A one-rank group's ``agree``: this rank's error is the group's."""
    raise error


def data_parallel_fp16_steps(device: str, backend: str) -> Dict[str, Any]:
    """Two fp16 steps of data-parallel ``train_epoch`` on a one-rank ``backend`` group: one at
    ``START_SCALE``, then one whose scale (raised to ``OVERFLOWING_SCALE`` after the first)
    overflows every fp16 gradient. What a test compares, as JSON (a fresh process prints it)."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.set_device(device)   # NCCL works on the current device
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=0,
                            world_size=1)
    try:
        return _two_fp16_steps(device)
    finally:
        dist.destroy_process_group()


def _two_fp16_steps(device: torch.device) -> Dict[str, Any]:
    generator = torch.Generator().manual_seed(0)
    batches = [(torch.randn(64, 16, generator=generator).to(device),
                torch.randint(0, 4, (64,), generator=generator).to(device)) for _ in range(2)]
    torch.manual_seed(0)
    model = nn.Linear(16, 4).to(device)
    start = torch.cat([p.detach().flatten() for p in model.parameters()])
    inputs, targets = batches[0]
    exact = torch.cat([g.flatten() for g in torch.autograd.grad(
        nn.functional.cross_entropy(model(inputs), targets), list(model.parameters()))])
    precision = Precision("fp16", device)
    precision.load_state_dict({**precision.state_dict(), "scale": START_SCALE})
    optimizer = ReducedGradients(_GradientAveraging(
        make_optimizer("sgd", model.parameters(), LR), 1))
    after: List[Tuple[torch.Tensor, float]] = []

    def after_step(step: int, loss: float) -> None:
        after.append((torch.cat([p.detach().flatten() for p in model.parameters()]).clone(),
                      precision.state_dict()["scale"]))
        if step == 1:
            precision.load_state_dict({**precision.state_dict(), "scale": OVERFLOWING_SCALE})

    mean_loss = train_epoch(model, batches, optimizer, device, check_every=1,
                            progress=after_step, agree=_raise,
                            step=TrainingStep(precision=precision))
    first, second = optimizer.reduced
    largest = float(exact.abs().max())
    return {
        "mean_loss": mean_loss,
        "flags": [float(first[-1]), float(second[-1])],
        "first_reduced_over_scale_error":
            float((first[:-1] / START_SCALE - exact).abs().max()) / largest,
        "first_update_error": float(((start - after[0][0]) / LR - exact).abs().max()) / largest,
        "second_reduced_finite": bool(torch.isfinite(second[:-1]).all()),
        "second_step_kept_the_weights": bool(torch.equal(after[1][0], after[0][0])),
        "scales": [after[0][1], after[1][1]]}


def assert_scaled_then_skipped(figures: Dict[str, Any]) -> None:
    assert math.isfinite(figures["mean_loss"])
    assert figures["flags"] == [0.0, 0.0]         # an overflow is the scaler's, not a failure
    # the first step all-reduced the gradients scaled, and stepped by them unscaled (fp16's
    # rounding apart); an unscaled all-reduce or a scaled step would be 1024 times off
    assert figures["first_reduced_over_scale_error"] < 1e-2, figures
    assert figures["first_update_error"] < 1e-2, figures
    # the second overflowed: skipped, and the scale backed off by half
    assert not figures["second_reduced_finite"]
    assert figures["second_step_kept_the_weights"]
    assert figures["scales"] == [START_SCALE, OVERFLOWING_SCALE / 2]


@pytest.fixture
def fp16_on_the_cpu(monkeypatch):
    """Lift nord's refusal of reduced precision on the CPU: CPU autocast stands in for a GPU's."""
    monkeypatch.setattr(precision_module, "precision_refusal", lambda name, device: None)


FIGURES = "figures: "


def in_fresh_process(function: str, *args: str, timeout: float = 300) -> Dict[str, Any]:
    """``function(*args)`` of this module in a fresh Python process with deterministic CUDA
    kernels (and the cuBLAS workspace they need); its figures come back as JSON."""
    code = ("import json, torch\n"
            "torch.use_deterministic_algorithms(True)\n"
            "from tests.unit import test_gpu_recipes as checks\n"
            f"print({FIGURES!r} + json.dumps(checks.{function}(*{args!r})))\n")
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, text=True, capture_output=True,
                          timeout=timeout, env=dict(os.environ, PYTHONPATH=path,
                                                    CUBLAS_WORKSPACE_CONFIG=":4096:8"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    printed = [line for line in done.stdout.splitlines() if line.startswith(FIGURES)]
    assert printed, done.stdout[-3000:]
    return json.loads(printed[-1][len(FIGURES):])


def has_bf16_arithmetic() -> bool:
    """Whether the GPU computes in bf16 itself (Ampere and later): before, torch emulates it."""
    return torch.cuda.get_device_capability() >= (8, 0)


def the_card() -> str:
    major, minor = torch.cuda.get_device_capability()
    return f"{torch.cuda.get_device_name()} (compute capability {major}.{minor})"


# --- on the CPU ---------------------------------------------------------------------------------
@pytest.mark.parametrize("device", ["cpu", "cuda", "mps"])
def test_fp32_is_never_refused(device):
    assert precision_refusal("fp32", torch.device(device)) is None


def test_fp16_on_the_cpu_is_refused_before_any_candidate_naming_the_choices():
    refusal = precision_refusal("fp16", CPU)
    assert refusal.startswith("--precision fp16 trains in reduced precision on a GPU")
    assert "use --precision fp32" in refusal and CHOICES in refusal
    with pytest.raises(ConfigurationError, match="no fp16 units"):
        LocalEvaluator(device="cpu", recipe=Recipe(precision="fp16"))


def test_bf16_is_refused_on_a_cpu_without_amx_tiles_and_taken_on_one_with_them(monkeypatch):
    monkeypatch.setattr(precision_module, "_cpu_has_amx", lambda: False)
    refusal = precision_refusal("bf16", CPU)
    assert "the CPU, which has no AMX bf16 tiles" in refusal
    assert "use --precision fp32" in refusal and CHOICES in refusal
    monkeypatch.setattr(precision_module, "_cpu_has_amx", lambda: True)
    assert precision_refusal("bf16", CPU) is None


class CountingOptimizer:
    def __init__(self):
        self.steps = 0

    def step(self):
        self.steps += 1


def test_fp32_is_a_plain_step():
    precision = Precision("fp32", CPU)
    loss = torch.tensor(2.5, requires_grad=True)
    assert precision.scale(loss) is loss
    optimizer = CountingOptimizer()
    precision.unscale(optimizer)
    precision.step(optimizer)
    assert optimizer.steps == 1
    with precision.autocast():
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32
    assert not precision.reduced and precision.state_dict() == {}


def test_channels_last_on_the_cpu_trains_digits_as_contiguous_does(digits):
    contiguous = train(digits, "cpu", epochs=3)
    assert_same_accuracy(train(digits, "cpu", epochs=3, memory_format="channels-last"),
                         contiguous)


def test_fp16_resumed_equals_uninterrupted_training_with_cpu_autocast(fp16_on_the_cpu, tmp_path):
    assert_resume_equals_straight(fp16_resume("cpu", str(tmp_path)))


def test_data_parallel_fp16_takes_scaled_steps_and_skips_an_overflow_with_cpu_autocast(
        fp16_on_the_cpu):
    assert_scaled_then_skipped(data_parallel_fp16_steps("cpu", "gloo"))


# --- on the CPU, and on CUDA where there is one -------------------------------------------------
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_channels_last_keeps_weights_and_inputs_channels_last_and_trains_alike(device):
    curator = bright_quadrants()
    formats = {"contiguous": MemoryFormats(), "channels-last": MemoryFormats()}
    results = {name: train(curator, device, [seen], epochs=3, memory_format=name)
               for name, seen in formats.items()}
    seen, plain = formats["channels-last"], formats["contiguous"]
    assert seen.weights and all(seen.weights), seen.weights
    assert seen.inputs and all(seen.inputs), seen.inputs
    assert plain.weights and not any(plain.weights)   # the check tells the two apart
    assert plain.inputs and not any(plain.inputs)
    assert_same_accuracy(results["channels-last"], results["contiguous"])


# --- on CUDA ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fp32_on_cuda(digits) -> EvaluationResult:
    return train(digits, "cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_reduced_precision_on_cuda_learns_and_ends_near_the_fp32_loss(digits, fp32_on_cuda,
                                                                      precision):
    if precision == "bf16" and not has_bf16_arithmetic():
        pytest.skip(f"{the_card()} has no bf16 arithmetic: it needs 8.0 (Ampere) or later")
    result = train(digits, "cuda", precision=precision)
    assert result.accuracy > 0.5, result.accuracy      # chance is 0.1 (ten digits)
    assert abs(result.loss - fp32_on_cuda.loss) < LOSS_TOLERANCE, (result.loss,
                                                                   fp32_on_cuda.loss)


@pytest.mark.gpu
@pytest.mark.processes
def test_fp16_resumed_on_cuda_equals_uninterrupted_training_bit_for_bit(tmp_path):
    assert_resume_equals_straight(in_fresh_process("fp16_resume", "cuda", str(tmp_path)))


@pytest.mark.gpu
def test_bf16_is_refused_on_a_card_without_bf16_arithmetic(digits):
    if has_bf16_arithmetic():
        pytest.skip(f"{the_card()} has bf16 arithmetic: the refusal shows only on a card "
                    "before Ampere (compute capability below 8.0)")
    with pytest.raises(ConfigurationError, match="has no bf16 arithmetic; use --precision fp16"):
        LocalEvaluator(curator=digits, device="cuda", recipe=Recipe(precision="bf16"))


@pytest.mark.gpu
@pytest.mark.processes
def test_data_parallel_fp16_on_one_gpu_takes_scaled_steps_and_skips_an_overflow():
    assert_scaled_then_skipped(in_fresh_process("data_parallel_fp16_steps", "cuda:0", "nccl"))
