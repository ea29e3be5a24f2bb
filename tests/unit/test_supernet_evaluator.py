"""A trained supernet as an evaluator: a cell's score is its stand-alone network's with the
inherited weights and its own recalibrated batch statistics; it does not depend on which cells
were scored before, leaves the supernet as it was, and serves any search algorithm."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nord.benchmarks.nasbench201 import cell_to_descriptor, network_to_descriptor  # noqa: E402
from nord.benchmarks.nasbench201.supernet import Path, Supernet  # noqa: E402
from nord.data.builtin import TensorCurator  # noqa: E402
from nord.data.curator import TensorLoader  # noqa: E402
from nord.errors import ConfigurationError  # noqa: E402
from nord.nn.network import NeuralNet  # noqa: E402
from nord.oneshot.evaluator import SupernetEvaluator, save_supernet  # noqa: E402
from nord.search.algorithms.registry import make_algorithm  # noqa: E402
from nord.search.engine import run_search  # noqa: E402
from nord.search.spaces import make_space  # noqa: E402

CELLS = [(3, 3, 4, 1, 3, 1), (1, 0, 2, 4, 0, 3), (2, 2, 2, 2, 2, 2)]


def data(samples=120, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, samples)
    x = rng.normal(size=(samples, 2, 8, 8)).astype(np.float32)
    x[:, :, :2, :2] += y[:, None, None, None]
    return TensorCurator(x, y, x[:20], y[:20], name="tiny", valid_fraction=0.25)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A supernet trained a little on uniformly drawn cells, saved as a search saves it."""
    torch.manual_seed(0)
    curator = data()
    supernet = Supernet(channels=3, cells_per_stage=1, num_classes=3, input_channels=2)
    optimizer = torch.optim.SGD(supernet.parameters(), lr=0.1, momentum=0.9)
    x, y = curator.tensors("train")
    generator = torch.Generator().manual_seed(0)
    for step in range(20):
        cell = tuple(torch.randint(0, 5, (6,), generator=generator).tolist())
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(supernet(x[:32], Path(cell)), y[:32]).backward()
        optimizer.step()
    path = tmp_path_factory.mktemp("supernet") / "rsps.supernet.pt"
    save_supernet(supernet, str(path), method="rsps")
    return path, curator


def standalone_accuracy(path, curator, cell, batches=10, batch_size=256):
    """The cell's network built by NeuralNet with the inherited weights, its batch norms
    recalibrated over the same batches, scored on the validation split."""
    state = torch.load(path, weights_only=False)
    supernet = Supernet(**state["settings"])
    supernet.load_state_dict(state["state"])
    network = NeuralNet(network_to_descriptor(cell, 3, 1), input_shape=(2, 8, 8), num_classes=3)
    network.load_state_dict(supernet.inherited_state(cell))
    for module in network.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.reset_running_stats()
            module.momentum = None
    x, y = curator.tensors("train")
    network.train()
    with torch.no_grad():
        for number, (inputs, _) in enumerate(TensorLoader(x, y, batch_size, shuffle=True,
                                                          seed=0)):
            if number == batches:
                break
            network(inputs)
    network.eval()
    vx, vy = curator.tensors("valid")
    with torch.no_grad():
        return float((network(vx).argmax(dim=-1) == vy).float().mean())


def test_a_cell_scores_as_its_network_with_inherited_weights(trained):
    path, curator = trained
    evaluator = SupernetEvaluator.from_checkpoint(str(path), curator)
    for cell in CELLS:
        result = evaluator.descriptor_evaluate(cell_to_descriptor(cell))
        assert result.status == "ok", result.error
        assert result.accuracy == pytest.approx(standalone_accuracy(path, curator, cell),
                                                abs=1e-6)


def test_scores_do_not_depend_on_the_order_and_leave_the_supernet_alone(trained):
    path, curator = trained
    evaluator = SupernetEvaluator.from_checkpoint(str(path), curator)
    before = {k: v.clone() for k, v in evaluator.supernet.state_dict().items()}
    forward = [evaluator.descriptor_evaluate(cell_to_descriptor(c)).accuracy for c in CELLS]
    backward = [evaluator.descriptor_evaluate(cell_to_descriptor(c)).accuracy
                for c in reversed(CELLS)]
    assert forward == list(reversed(backward))
    after = evaluator.supernet.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_any_algorithm_searches_with_it(trained):
    path, curator = trained
    evaluator = SupernetEvaluator.from_checkpoint(str(path), curator)
    space = make_space("nasbench201")
    summary = run_search(make_algorithm("rea", space, seed=0, population_size=4, sample_size=2),
                         evaluator, budget=8)
    assert summary.evaluations == 8 and summary.failed == 0
    best = summary.best_result
    assert best.accuracy == evaluator.descriptor_evaluate(
        cell_to_descriptor(tuple(summary.best.genome))).accuracy


def test_a_file_without_a_supernet_is_refused(tmp_path, trained):
    _, curator = trained
    other = tmp_path / "other.pt"
    torch.save({"weights": 1}, other)
    with pytest.raises(ConfigurationError, match="holds no trained supernet"):
        SupernetEvaluator.from_checkpoint(str(other), curator)


def test_another_data_set_is_refused(trained):
    path, _ = trained
    rng = np.random.default_rng(1)
    three_channels = TensorCurator(rng.normal(size=(40, 3, 8, 8)), rng.integers(0, 3, 40),
                                   rng.normal(size=(8, 3, 8, 8)), rng.integers(0, 3, 8))
    with pytest.raises(ConfigurationError, match="trained on images of 2 channel"):
        SupernetEvaluator.from_checkpoint(str(path), three_channels)
