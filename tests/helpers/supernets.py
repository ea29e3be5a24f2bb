"""The benchmark authors' supernets (xautodl 1.0.0) beside nord's, for the tests that check
nord's weight sharing against them: the reference built at a size, and nord's supernet holding
its weights."""
import torch

from nord.benchmarks.nasbench201.cells import OPS
from nord.benchmarks.nasbench201.supernet import Supernet

SIZES = dict(channels=4, cells_per_stage=2, num_classes=10)


def reference(cell_searchs, name, affine=False, track_running_stats=True, sizes=SIZES):
    """The reference supernet ``name`` (a key of xautodl's ``nas201_super_nets``)."""
    net_class = cell_searchs.nas201_super_nets[name]
    return net_class(sizes["channels"], sizes["cells_per_stage"], 4, sizes["num_classes"],
                     list(OPS), affine, track_running_stats)


def redundant_bias(name):
    """The reference's cell convolutions have a bias when their batch norm is not affine
    (``bias=not affine``); the batch norm right after subtracts it again, so nord's have none
    (docs/oneshot.md)."""
    return name.endswith(".op.1.bias")


def copied(ref, affine=False, track_running_stats=True, dtype=torch.float64, sizes=SIZES):
    """nord's supernet holding ``ref``'s weights and batch-norm buffers, both in ``dtype``."""
    ours = Supernet(**sizes, affine=affine, track_running_stats=track_running_stats)
    theirs = [(key, value) for key, value in ref.state_dict().items()
              if not key.startswith("arch") and not redundant_bias(key)]
    mine = list(ours.state_dict().items())
    assert len(mine) == len(theirs)
    state = {}
    for (key, value), (their_key, their_value) in zip(mine, theirs):
        assert value.shape == their_value.shape, (key, their_key)
        state[key] = their_value.clone()
    ours.load_state_dict(state)
    return ours.to(dtype), ref.to(dtype)


def weights_of(net):
    """The weights, in order, without architecture parameters and the redundant biases."""
    return [(name, p) for name, p in net.named_parameters()
            if not name.startswith("arch") and not redundant_bias(name)]


def batch(dtype=torch.float64, seed=0, size=6, classes=SIZES["num_classes"]):
    generator = torch.Generator().manual_seed(seed)
    images = torch.randn(size, 3, 8, 8, generator=generator, dtype=dtype)
    labels = torch.randint(0, classes, (size,), generator=generator)
    return images, labels
