"""nord's weight-sharing methods against the benchmark authors' code (xautodl 1.0.0): the same
supernet weights, the same batches and the same random draws give the same weights and
architecture parameters after search steps, in float64; ENAS's controller scores and samples
as the reference's does; DARTS's second-order gradient is the exact one's, up to its finite
difference.

The reference's search loops live in its repository's scripts, not in the package; the steps
they take are restated below in a few lines each (weights, then architecture, as the scripts
order them), with the differences docs/oneshot.md lists.
"""
import pytest

torch = pytest.importorskip("torch")
from tests.helpers import supernets  # noqa: E402  (puts the reference on the path)
cell_searchs = pytest.importorskip("xautodl.models.cell_searchs",
                                   reason="scripts/setup.sh installs xautodl in "
                                          ".venv/references")
enas_utils = pytest.importorskip("xautodl.models.cell_searchs.search_model_enas_utils")

from torch.nn import functional as F  # noqa: E402

from nord.benchmarks.nasbench201.cells import genome_to_cell  # noqa: E402
from nord.benchmarks.nasbench201.supernet import Mixture, Supernet  # noqa: E402
from nord.oneshot.controller import Controller  # noqa: E402
from nord.oneshot.methods import make_method  # noqa: E402
from tests.helpers.supernets import (batch, copied, reference_arch_step,  # noqa: E402
                                     reference_weight_step, virtual_step_of_the_reference,
                                     weights_of)

# float64 steps of both supernets side by side: in make test, not the fast lane
pytestmark = pytest.mark.slow

TOLERANCE = 1e-5
WEIGHTS = dict(lr=0.025, momentum=0.9, nesterov=True, weight_decay=5e-4)


def pair(name, seed):
    """The reference supernet ``name`` and nord's method on a copy of it, both in float64 with
    the benchmark's optimizers, nord's architecture parameters those of the reference."""
    torch.manual_seed(seed)
    ours, ref = copied(supernets.reference(cell_searchs, name))
    method_name = {"DARTS-V1": "darts-v1", "GDAS": "gdas", "SETN": "setn"}[name]
    method = make_method(method_name, ours, torch.optim.SGD(ours.parameters(), **WEIGHTS),
                         torch.Generator().manual_seed(seed))
    with torch.no_grad():
        method.alphas.copy_(ref.arch_parameters)
    ref_weights = torch.optim.SGD([p for _, p in weights_of(ref)], **WEIGHTS)
    ref_arch = torch.optim.Adam([ref.arch_parameters], lr=3e-4, betas=(0.5, 0.999),
                                weight_decay=1e-3)
    return method, ref, ref_weights, ref_arch


def assert_same_state(method, ref):
    for (name, mine), (_, theirs) in zip(weights_of(method.supernet), weights_of(ref)):
        torch.testing.assert_close(mine, theirs, atol=TOLERANCE, rtol=0, msg=name)
    torch.testing.assert_close(method.alphas, ref.arch_parameters, atol=TOLERANCE, rtol=0)


@pytest.mark.parametrize("seed", [0, 1])
def test_darts_first_order_steps_agree(seed):
    method, ref, ref_weights, ref_arch = pair("DARTS-V1", seed)
    for step in range(3):
        (wx, wy), (ax, ay) = batch(seed=10 * step), batch(seed=10 * step + 1)
        method.step((wx, wy), (ax, ay))
        reference_weight_step(ref, ref_weights, wx, wy)
        reference_arch_step(ref, ref_arch, ax, ay)
        assert_same_state(method, ref)


@pytest.mark.parametrize("seed", [0, 1])
def test_gdas_steps_agree_with_the_same_gumbel_draws(seed):
    method, ref, ref_weights, ref_arch = pair("GDAS", seed)
    method.generator.manual_seed(100 + seed)
    torch.manual_seed(100 + seed)        # the reference draws from the global generator
    for epoch, tau in ((0, 10.0), (1, 0.1)):
        method.start_epoch(epoch, 2)
        assert method.tau == pytest.approx(tau)
        ref.set_tau(method.tau)
        (wx, wy), (ax, ay) = batch(seed=epoch), batch(seed=epoch + 5)
        method.step((wx, wy), (ax, ay))
        reference_weight_step(ref, ref_weights, wx, wy)
        reference_arch_step(ref, ref_arch, ax, ay)
        assert_same_state(method, ref)


def test_setn_steps_agree_with_the_same_cells():
    method, ref, ref_weights, ref_arch = pair("SETN", 2)
    for step in range(2):
        (wx, wy), (ax, ay) = batch(seed=step), batch(seed=step + 5)
        state = method.generator.get_state()
        cell = method._uniform_cell()                 # the cell nord's step will draw
        method.generator.set_state(state)
        method.step((wx, wy), (ax, ay))
        ref.set_cal_mode("dynamic", cell_searchs.CellStructure.str2structure(genome_to_cell(cell)))
        reference_weight_step(ref, ref_weights, wx, wy)
        ref.set_cal_mode("joint")
        reference_arch_step(ref, ref_arch, ax, ay)
        assert_same_state(method, ref)


def test_setn_ranks_cells_by_the_reference_log_probability():
    method, ref, _, _ = pair("SETN", 3)
    with torch.no_grad():
        method.alphas.copy_(torch.randn(6, 5, dtype=torch.float64))
        ref.arch_parameters.copy_(method.alphas)
    cells = method.most_likely_cells(20)
    scores = [ref.get_log_prob(cell_searchs.CellStructure.str2structure(genome_to_cell(c)))
              for c in cells]
    assert scores == sorted(scores, reverse=True)
    top = ref.return_topK(20)
    assert {genome_to_cell(c) for c in cells} == {s.tostr() for s in top}


def copied_controller(seed):
    torch.manual_seed(seed)
    theirs = enas_utils.Controller(6, 5).double()
    ours = Controller().double()
    mapping = {"start": "input_vars", "lstm": "w_lstm", "embedding": "w_embd",
               "decoder": "w_pred"}
    their_state = theirs.state_dict()
    ours.load_state_dict({key: their_state[mapping[key.split(".")[0]]
                                           + key[len(key.split(".")[0]):]]
                          for key in ours.state_dict()})
    return ours, theirs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_controller_samples_and_scores_as_the_reference(seed):
    ours, theirs = copied_controller(seed)
    torch.manual_seed(50 + seed)
    their_log_prob, their_entropy, their_cell = theirs()
    cell, log_prob, entropy = ours.sample(torch.Generator().manual_seed(50 + seed))
    assert list(cell) == their_cell
    torch.testing.assert_close(log_prob, their_log_prob, atol=1e-10, rtol=0)
    torch.testing.assert_close(entropy, their_entropy, atol=1e-10, rtol=0)
    (their_log_prob + their_entropy).backward()
    (log_prob + entropy).backward()
    for (name, mine), theirs_grad in zip(ours.named_parameters(),
                                         [p.grad for p in theirs.parameters()]):
        torch.testing.assert_close(mine.grad, theirs_grad, atol=1e-10, rtol=0, msg=name)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_darts_second_order_architecture_step_agrees(seed):
    torch.manual_seed(seed)
    ours, ref = copied(supernets.reference(cell_searchs, "DARTS-V2"))
    optimizer = torch.optim.SGD(ours.parameters(), **WEIGHTS)
    method = make_method("darts-v2", ours, optimizer, torch.Generator().manual_seed(seed))
    with torch.no_grad():
        method.alphas.copy_(ref.arch_parameters)
    ref_weights = torch.optim.SGD([p for _, p in weights_of(ref)], **WEIGHTS)
    first = batch(seed=7)                # a weight step first: momentum buffers to unroll
    method._train_weights(first, method._weight_rule())
    reference_weight_step(ref, ref_weights, *first)
    (wx, wy), (ax, ay) = batch(seed=1), batch(seed=2)
    expected = virtual_step_of_the_reference(ref, ref_weights, (wx, wy), (ax, ay))
    method._train_architecture_unrolled((wx, wy), (ax, ay))
    torch.testing.assert_close(method.alphas.grad, expected, atol=TOLERANCE, rtol=0)


def test_darts_second_order_gradient_converges_to_the_exact_one():
    """The architecture gradient after the virtual step, against the same gradient by double
    back-propagation: equal once the finite difference's radius is small (DARTS's own radius,
    0.01, steps over the ReLUs' kinks of so small a network and is only an estimate)."""
    torch.manual_seed(4)
    supernet = Supernet(**supernets.SIZES).double()
    optimizer = torch.optim.SGD(supernet.parameters(), **WEIGHTS)
    method = make_method("darts-v2", supernet, optimizer, torch.Generator().manual_seed(4))
    (wx, wy), (ax, ay) = batch(seed=1), batch(seed=2)
    method.step((wx, wy), batch(seed=3))       # a momentum buffer for the virtual step
    parameters = dict(supernet.named_parameters())
    buffers = {name: b.clone() for name, b in supernet.named_buffers()}
    alphas = method.alphas.detach().clone().requires_grad_(True)
    lr = optimizer.param_groups[0]["lr"]

    def loss(weights, x, y, rule):
        logits = torch.func.functional_call(supernet, (weights, dict(buffers)), (x, rule))
        return F.cross_entropy(logits, y)
    train = loss(parameters, wx, wy, Mixture(alphas.softmax(dim=-1)))
    gradients = torch.autograd.grad(train, list(parameters.values()), create_graph=True)
    stepped = {name: w - lr * (0.9 * optimizer.state[w]["momentum_buffer"] + g + 5e-4 * w)
               for (name, w), g in zip(parameters.items(), gradients)}
    (exact,) = torch.autograd.grad(loss(stepped, ax, ay, Mixture(alphas.softmax(dim=-1))),
                                   [alphas])
    method.finite_difference = 1e-7
    method._train_architecture_unrolled((wx, wy), (ax, ay))
    torch.testing.assert_close(method.alphas.grad, exact, atol=1e-6, rtol=0)
