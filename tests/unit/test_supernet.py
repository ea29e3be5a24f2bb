"""The NAS-Bench-201 supernet's paths are the benchmark's networks: a cell's stand-alone
network (``network_to_descriptor`` built by ``NeuralNet``) loaded with the weights it
inherits computes what the path through the supernet computes."""
import pytest

torch = pytest.importorskip("torch")

from nord.benchmarks.nasbench201 import network_to_descriptor  # noqa: E402
from nord.benchmarks.nasbench201.supernet import Mixture, Path, Supernet  # noqa: E402
from nord.nn.network import NeuralNet  # noqa: E402

SIZES = dict(channels=4, cells_per_stage=2, num_classes=7)
GENOMES = [(3, 3, 4, 1, 3, 1), (1, 0, 2, 4, 0, 3), (0, 0, 0, 0, 0, 0), (4, 4, 4, 4, 4, 4)]


def trained_a_little(supernet, images):
    """Move the weights and running statistics off their initial values."""
    optimizer = torch.optim.SGD(supernet.parameters(), lr=0.5)
    labels = torch.arange(len(images)) % SIZES["num_classes"]
    for step in range(3):
        rule = Mixture(torch.full((6, 5), 0.2)) if step % 2 else Path(GENOMES[step % 4])
        loss = torch.nn.functional.cross_entropy(supernet(images, rule), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


@pytest.mark.parametrize("affine,track_running_stats", [(False, True), (True, True),
                                                         (False, False)])
@pytest.mark.parametrize("genome", GENOMES)
def test_a_cell_inherits_what_its_path_computes(genome, affine, track_running_stats):
    torch.manual_seed(0)
    images = torch.randn(8, 3, 8, 8)
    supernet = Supernet(**SIZES, affine=affine, track_running_stats=track_running_stats)
    trained_a_little(supernet, images)
    network = NeuralNet(network_to_descriptor(genome, SIZES["channels"],
                                              SIZES["cells_per_stage"]),
                        input_shape=(3, 8, 8), num_classes=SIZES["num_classes"])
    network.load_state_dict(supernet.inherited_state(genome))      # strict: every key
    assert torch.equal(network(images), supernet(images, Path(genome)))
    if track_running_stats:
        network.eval(), supernet.eval()
        assert torch.equal(network(images), supernet(images, Path(genome)))


def test_the_inherited_weights_are_copies():
    supernet = Supernet(**SIZES)
    state = supernet.inherited_state(GENOMES[0])
    state["layer_modules.stem_conv.weight"].add_(1.0)
    assert not torch.equal(state["layer_modules.stem_conv.weight"], supernet.stem[0].weight)


def test_the_supernet_holds_every_operation_once_per_edge():
    supernet = Supernet(channels=16, cells_per_stage=5, num_classes=10)
    assert len(supernet.cells()) == 15
    # per cell: 6 edges x (1x1 and 3x3 convolutions at the stage's channels, no bias)
    convolutions = sum(6 * (c * c + 9 * c * c) for c in (16, 32, 64))
    reductions = sum(9 * c * 2 * c + 9 * 4 * c * c + 2 * 2 * 2 * c + c * 2 * c
                     for c in (16, 32))
    stem, last, classifier = 3 * 9 * 16 + 2 * 16, 2 * 64, 64 * 10 + 10
    assert sum(p.numel() for p in supernet.parameters()) == (
        5 * convolutions + reductions + stem + last + classifier)
