"""The benchmark authors' supernets (xautodl 1.0.0) beside nord's, for the tests and the bench
that check nord's weight sharing against them: the reference built at a size, nord's supernet
holding its weights, and the steps the reference's search scripts take, restated on its
supernets (the scripts are not in the package)."""
import copy
import sys
from pathlib import Path

import torch
from torch.nn import functional as F

from nord.benchmarks.nasbench201.cells import OPS
from nord.benchmarks.nasbench201.supernet import Supernet

REFERENCES = Path(sys.prefix) / "references"
"""Where scripts/setup.sh installs the benchmark authors' package, apart from the environment's
own packages (its pinned dependencies are left out, and pip's check of the environment stays
clean)."""
if REFERENCES.is_dir() and str(REFERENCES) not in sys.path:
    sys.path.append(str(REFERENCES))

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


def reference_weight_step(ref, optimizer, images, labels, clip=5.0):
    optimizer.zero_grad()
    ref.zero_grad()
    F.cross_entropy(ref(images)[1], labels).backward()
    torch.nn.utils.clip_grad_norm_([p for _, p in weights_of(ref)], clip)
    optimizer.step()


def reference_arch_step(ref, optimizer, images, labels):
    optimizer.zero_grad()
    F.cross_entropy(ref(images)[1], labels).backward()
    optimizer.step()


def virtual_step_of_the_reference(ref, optimizer, weight_batch, arch_batch, radius=1e-2):
    """The reference's second-order architecture gradient, restated on its supernet: a virtual
    weight step (heavy-ball momentum and weight decay), the validation gradient there, and
    the Hessian-vector product by central differences on the weights, moved in place."""
    weights = [p for _, p in weights_of(ref)]
    group = optimizer.param_groups[0]
    lr, decay, momentum = group["lr"], group["weight_decay"], group["momentum"]
    gradients = torch.autograd.grad(F.cross_entropy(ref(weight_batch[0])[1], weight_batch[1]),
                                    weights)
    unrolled = copy.deepcopy(ref)
    with torch.no_grad():
        for (_, target), w, g in zip(weights_of(unrolled), weights, gradients):
            buffer = optimizer.state.get(w, {}).get("momentum_buffer")   # none before a step
            moment = momentum * buffer if buffer is not None else 0.0
            target.copy_(w - lr * (moment + g + decay * w))
    unrolled.zero_grad()
    F.cross_entropy(unrolled(arch_batch[0])[1], arch_batch[1]).backward()
    direct = unrolled.arch_parameters.grad
    vector = [p.grad for _, p in weights_of(unrolled)]
    step = radius / torch.cat([v.reshape(-1) for v in vector]).norm()
    sides = []
    for sign in (1, -2, 1):         # to w + R v, to w - R v, back to w
        with torch.no_grad():
            for w, v in zip(weights, vector):
                w.add_(sign * step * v)
        if sign != 1 or not sides:
            loss = F.cross_entropy(ref(weight_batch[0])[1], weight_batch[1])
            sides.append(torch.autograd.grad(loss, [ref.arch_parameters])[0])
    return direct - lr * (sides[0] - sides[1]) / (2 * step)
