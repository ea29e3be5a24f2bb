"""nord's NAS-Bench-201 supernet against the benchmark authors' own (xautodl 1.0.0,
``cell_searchs``): with the reference's weights copied into nord's and the same batch, the
logits, the weights' gradients and the architecture parameters' gradients agree, for each way
an edge combines its operations (DARTS's mixture, GDAS's hard sample, one path as SETN, ENAS
and random search with parameter sharing train and evaluate).
"""
import re

import pytest

torch = pytest.importorskip("torch")
from tests.helpers import supernets  # noqa: E402  (puts the reference on the path)
cell_searchs = pytest.importorskip("xautodl.models.cell_searchs",
                                   reason="scripts/setup.sh installs xautodl in "
                                          ".venv/references")

from nord.benchmarks.nasbench201.cells import genome_to_cell  # noqa: E402
from nord.benchmarks.nasbench201.supernet import (HardMixture, Mixture, Path,  # noqa: E402
                                                  Supernet)
from nord.errors import ConfigurationError  # noqa: E402
from tests.helpers.supernets import SIZES, batch, copied, redundant_bias  # noqa: E402

# float64 passes of both supernets side by side: in make test, not the fast lane
pytestmark = pytest.mark.slow

TOLERANCE = 1e-5


def reference(name, affine, track_running_stats):
    return supernets.reference(cell_searchs, name, affine, track_running_stats)


def weight_gradients(net):
    return [(name, p.grad) for name, p in supernets.weights_of(net)]


def assert_gradients_agree(ours, ref):
    for name, p in ref.named_parameters():
        if redundant_bias(name) and p.grad is not None:     # the batch norm cancels it
            torch.testing.assert_close(p.grad, torch.zeros_like(p.grad), atol=TOLERANCE, rtol=0)
    mine, theirs = weight_gradients(ours), weight_gradients(ref)
    assert len(mine) == len(theirs)
    for (name, grad), (_, their_grad) in zip(mine, theirs):
        if their_grad is None:          # an operation the pass never ran
            assert grad is None or not grad.any(), name
            continue
        torch.testing.assert_close(grad, their_grad, atol=TOLERANCE, rtol=0, msg=name)


BATCH_NORMS = [(False, True), (False, False), (True, True)]


@pytest.mark.parametrize("affine,track_running_stats", BATCH_NORMS)
@pytest.mark.parametrize("name", ["DARTS-V1", "DARTS-V2"])
def test_the_darts_mixture_agrees_with_the_reference(name, affine, track_running_stats):
    torch.manual_seed(1)
    ours, ref = copied(reference(name, affine, track_running_stats), affine, track_running_stats)
    alphas = ref.arch_parameters.detach().clone().requires_grad_(True)
    images, labels = batch()
    _, their_logits = ref(images)
    logits = ours(images, Mixture(alphas.softmax(dim=-1)))
    torch.testing.assert_close(logits, their_logits, atol=TOLERANCE, rtol=0)
    torch.nn.functional.cross_entropy(their_logits, labels).backward()
    torch.nn.functional.cross_entropy(logits, labels).backward()
    assert_gradients_agree(ours, ref)
    torch.testing.assert_close(alphas.grad, ref.arch_parameters.grad, atol=TOLERANCE, rtol=0)


def test_in_float32_the_mixture_is_the_reference_to_the_last_bit():
    """Same operations in the same order: float32 needs no tolerance (affine batch norms, so
    that the reference's convolutions have no bias either)."""
    torch.manual_seed(2)
    ours, ref = copied(reference("DARTS-V1", True, True), True, True, dtype=torch.float32)
    images, _ = batch(torch.float32)
    _, their_logits = ref(images)
    assert torch.equal(ours(images, Mixture(ref.arch_parameters.softmax(dim=-1))), their_logits)


@pytest.mark.parametrize("seed", [0, 3])
def test_the_gdas_hard_sample_agrees_with_the_reference(seed):
    torch.manual_seed(seed)
    ours, ref = copied(reference("GDAS", False, True), False, True)
    ref.set_tau(10)
    alphas = ref.arch_parameters.detach().clone().requires_grad_(True)
    images, labels = batch(seed=seed)
    torch.manual_seed(100 + seed)
    _, their_logits = ref(images)
    # the same Gumbel draw, from the same generator state, the way the reference draws it
    torch.manual_seed(100 + seed)
    gumbels = -torch.empty_like(alphas).exponential_().log()
    probabilities = ((alphas.log_softmax(dim=1) + gumbels) / 10).softmax(dim=1)
    chosen = probabilities.argmax(dim=-1)
    hard = torch.zeros_like(probabilities).scatter_(-1, chosen[:, None], 1.0)
    weights = hard - probabilities.detach() + probabilities
    logits = ours(images, HardMixture(weights, chosen.tolist()))
    torch.testing.assert_close(logits, their_logits, atol=TOLERANCE, rtol=0)
    torch.nn.functional.cross_entropy(their_logits, labels).backward()
    torch.nn.functional.cross_entropy(logits, labels).backward()
    assert_gradients_agree(ours, ref)
    torch.testing.assert_close(alphas.grad, ref.arch_parameters.grad, atol=TOLERANCE, rtol=0)
    assert alphas.grad.abs().sum() > 0         # every parameter is trained, not only the chosen


@pytest.mark.parametrize("name,attribute", [("SETN", "dynamic_cell"), ("ENAS", "sampled_arch"),
                                            ("RANDOM", "arch_cache")])
@pytest.mark.parametrize("genome", [(3, 3, 4, 1, 3, 1), (1, 0, 2, 4, 0, 3), (0, 0, 0, 0, 0, 0)])
def test_one_path_agrees_with_the_reference(name, attribute, genome):
    torch.manual_seed(4)
    ours, ref = copied(reference(name, False, True), False, True)
    structure = cell_searchs.CellStructure.str2structure(genome_to_cell(genome))
    if name == "SETN":
        ref.set_cal_mode("dynamic", structure)
    else:
        setattr(ref, attribute, structure)
    images, labels = batch(seed=5)
    _, their_logits = ref(images)
    logits = ours(images, Path(genome))
    torch.testing.assert_close(logits, their_logits, atol=TOLERANCE, rtol=0)
    torch.nn.functional.cross_entropy(their_logits, labels).backward()
    torch.nn.functional.cross_entropy(logits, labels).backward()
    assert_gradients_agree(ours, ref)


def test_a_path_runs_only_its_own_operations():
    ours = Supernet(**SIZES)
    images, labels = batch(torch.float32)
    torch.nn.functional.cross_entropy(ours(images, Path((3, 3, 3, 3, 3, 3))), labels).backward()
    for cell in ours.cells():
        for edge in cell.edges:
            assert all(p.grad is None for op in (edge.ops[2],) for p in op.parameters())
            assert all(p.grad is not None for p in edge.ops[3].parameters())


@pytest.mark.parametrize("weights,said", [
    (torch.ones(5, 5), "(5, 5)"), ([[0.2] * 5] * 6, "list")])
def test_edge_weights_of_the_wrong_shape_are_refused(weights, said):
    with pytest.raises(ConfigurationError, match=r"shape \(6 edges, 5 operations\).*" + re.escape(said)):
        Mixture(weights)


@pytest.mark.parametrize("settings,said", [
    (dict(channels=0), "channels"), (dict(cells_per_stage=2.5), "cells_per_stage"),
    (dict(affine="no"), "affine")])
def test_bad_supernet_settings_are_refused(settings, said):
    with pytest.raises(ConfigurationError, match=said):
        Supernet(**settings)
