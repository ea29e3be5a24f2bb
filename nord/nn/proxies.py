"""Zero-cost proxies: scores of an untrained network that predict how well it will train.

    from nord.nn.proxies import score
    value = score("synflow", net, inputs)              # data-free: only the shape is read
    value = score("snip", net, inputs, targets)        # one labelled mini-batch

Every proxy is a function ``proxy(net, inputs, targets) -> float`` that works on a copy of
``net`` in training mode, as Abdelfattah et al. (ICLR 2021) compute them (flops runs ``net``
itself, without gradients, and restores its modes): the network given is never changed.
Higher means "predicted to be better" for every proxy. Sums run over the weights of
convolution and linear layers (biases and batch-norm scales excluded), the choice of
Abdelfattah et al. ``score`` raises ``ProxyError`` when a score cannot be computed
(no such weights, a NaN or infinite score). Which proxy needs data and labels: ``PROXIES``.
Details (each proxy, batch norm, overflow, agreement with published scores): docs/proxies.md.
"""
from __future__ import annotations

import copy
import math
from typing import Callable, Dict, List, NamedTuple, Optional

import torch
from torch import nn
from torch.nn import functional as F

from nord.checks import check_choice
from nord.errors import ConfigurationError, ProxyError

_WEIGHTED = (nn.modules.conv._ConvNd, nn.Linear)
"""The layers whose weights the proxies sum over."""


def synflow(net: nn.Module, inputs: torch.Tensor, targets=None) -> float:
    """Synaptic flow (Tanaka et al., "Pruning neural networks without any data by iteratively
    conserving synaptic flow", NeurIPS 2020): needs neither data nor labels.

    Every parameter is replaced by its absolute value, the input by a single all-ones sample
    (only ``inputs``' shape is read), and R = sum of the outputs; the score is the sum of
    |theta * dR/dtheta| over the weights. All in double precision: the products of absolute
    weights grow with depth (up to about 7e50 for NAS-Bench-201 networks), and float32
    overflows past 3e38. A score that overflows even double precision (about 1e308, networks
    of hundreds of layers) raises ``ProxyError`` rather than ranking as infinitely good.

    Batch norm is bypassed (each batch-norm layer passes its input through unchanged), which
    is what Abdelfattah et al. do by building their networks without batch norm for synflow:
    with it, the all-ones sample (one sample, constant over space) would be normalised to the
    layer's bias, and the score would lose the weights' magnitudes.
    """
    net = copy.deepcopy(net).double()
    _weights(net)
    for module in net.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            module.eval()  # no statistics of a single sample, which may be one value
            module.register_forward_hook(_pass_input_through)
    with torch.no_grad():
        for parameter in net.parameters():
            parameter.abs_()
    ones = torch.ones((1,) + tuple(inputs.shape[1:]), dtype=torch.float64,
                      device=_device_of(net, inputs))
    net(ones).sum().backward()
    return _sum_over_weights(net, lambda weight: (weight * weight.grad).abs().sum())


def snip(net: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> float:
    """Connection sensitivity (Lee et al., "SNIP: Single-shot network pruning based on
    connection sensitivity", ICLR 2019): needs data and labels.

    The sum of |theta * dL/dtheta| for the cross-entropy loss L of one batch: the first-order
    change of the loss if each weight were removed.
    """
    net = _copy_for_gradients(net, inputs)
    F.cross_entropy(net(inputs), targets).backward()
    return _sum_over_weights(net, lambda weight: (weight * weight.grad).abs().sum())


def grasp(net: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> float:
    """Gradient signal preservation (Wang et al., "Picking winning tickets before training by
    preserving gradient flow", ICLR 2020): needs data and labels.

    The sum of -theta * (H g), with g the loss gradient and H the Hessian of the loss, both
    over the weights: how removing each weight would change the gradient's norm. H g is a
    Hessian-vector product (a second backward pass), never the Hessian itself.
    """
    net = _copy_for_gradients(net, inputs)
    weights = _weights(net)
    loss = F.cross_entropy(net(inputs), targets)
    gradient = [g.detach() for g in torch.autograd.grad(loss, weights, allow_unused=True,
                                                        materialize_grads=True)]
    loss = F.cross_entropy(net(inputs), targets)
    with_graph = torch.autograd.grad(loss, weights, create_graph=True, allow_unused=True,
                                     materialize_grads=True)
    z = sum((g * h).sum() for g, h in zip(gradient, with_graph))
    hessian_gradient = torch.autograd.grad(z, weights, allow_unused=True, materialize_grads=True)
    return float(sum((-w.detach() * hg).sum() for w, hg in zip(weights, hessian_gradient)))


def fisher(net: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> float:
    """Fisher information of the channels (Theis et al., "Faster gaze prediction with dense
    networks and Fisher pruning", 2018, as used for NAS by Turner et al., "BlockSwap", ICLR
    2020): needs data and labels.

    For each output channel of each convolution and linear layer, 0.5 * the batch mean of
    (sum over positions of activation * dL/dactivation) squared; the score is their sum.
    """
    net = _copy_for_gradients(net, inputs)
    activations: List[torch.Tensor] = []

    def keep(module, module_inputs, output):
        output.retain_grad()
        activations.append(output)

    handles = [module.register_forward_hook(keep) for module in net.modules()
               if isinstance(module, _WEIGHTED)]
    if not handles:
        raise ProxyError(_NO_WEIGHTS)
    F.cross_entropy(net(inputs), targets).backward()
    for handle in handles:
        handle.remove()
    total = 0.0
    for activation in activations:
        if activation.grad is None:  # a layer whose output does not reach the loss
            continue
        per_channel = activation * activation.grad
        if per_channel.dim() > 2:
            per_channel = per_channel.flatten(2).sum(2)
        total += float(per_channel.detach().pow(2).mean(0).mul(0.5).sum())
    return total


def grad_norm(net: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> float:
    """Gradient norm (the baseline proxy of Abdelfattah et al., "Zero-Cost Proxies for
    Lightweight NAS", ICLR 2021): needs data and labels.

    The sum over layers of the Euclidean norm of each layer's weight gradient of the
    cross-entropy loss of one batch.
    """
    net = _copy_for_gradients(net, inputs)
    F.cross_entropy(net(inputs), targets).backward()
    return _sum_over_weights(net, lambda weight: weight.grad.norm())


def jacov(net: nn.Module, inputs: torch.Tensor, targets=None) -> float:
    """Jacobian covariance (Mellor et al., "Neural Architecture Search without Training",
    arXiv v1, 2020; ICML 2021): needs data, not labels.

    Let J be each sample's gradient of the summed outputs with respect to its input, and C
    the correlation matrix of the J of a batch; the score is -sum(log(v + k) + 1 / (v + k))
    over the eigenvalues v of C, k = 1e-5: high when the samples' Jacobians are uncorrelated.
    Meaningful on real images only (on noise the Jacobians are all alike).
    """
    net = _copy_for_gradients(net, inputs)
    inputs = inputs.detach().clone().requires_grad_(True)
    outputs = net(inputs)
    outputs.backward(torch.ones_like(outputs))
    jacobians = inputs.grad.flatten(1).double()
    if inputs.shape[0] < 2:
        raise ProxyError("jacov needs a batch of at least 2 samples to correlate; "
                         f"was given {inputs.shape[0]}")
    correlation = torch.corrcoef(jacobians)
    eigenvalues = torch.linalg.eigvalsh(torch.nan_to_num(correlation, nan=0.0))
    k = 1e-5
    return float(-(torch.log(eigenvalues + k) + 1.0 / (eigenvalues + k)).sum())


def nwot(net: nn.Module, inputs: torch.Tensor, targets=None) -> float:
    """NASWOT, the activation-pattern score (Mellor et al., "Neural Architecture Search without
    Training", ICML 2021): needs data, not labels.

    Each ReLU's input gives each sample a binary code (which units are active). K[i, j]
    counts the units on which samples i and j agree, over all ReLUs; the score is log|det K|.
    Samples the network cannot tell apart make K singular: then the score is undefined and
    ``ProxyError`` is raised.
    """
    net = _copy_for_gradients(net, inputs)
    size = inputs.shape[0]
    kernel = torch.zeros((size, size), dtype=torch.float64, device=inputs.device)

    def count_agreements(module, module_inputs, output):
        codes = (module_inputs[0].detach().flatten(1) > 0).double()
        kernel.add_(codes @ codes.t() + (1.0 - codes) @ (1.0 - codes).t())

    handles = [module.register_forward_hook(count_agreements) for module in net.modules()
               if isinstance(module, nn.ReLU)]
    if not handles:
        raise ProxyError("nwot reads the inputs of ReLU layers, and the network has none")
    with torch.no_grad():
        net(inputs)
    for handle in handles:
        handle.remove()
    sign, log_determinant = torch.linalg.slogdet(kernel)
    if sign <= 0:
        raise ProxyError("nwot's kernel of activation codes is singular: two samples of the "
                         "batch activate the same units; use a batch of distinct samples")
    return float(log_determinant)


def params(net: nn.Module, inputs=None, targets=None) -> float:
    """Trainable parameters: the baseline every proxy must beat (Abdelfattah et al., ICLR
    2021). Needs neither data nor labels."""
    return float(sum(p.numel() for p in net.parameters() if p.requires_grad))


def flops(net: nn.Module, inputs: torch.Tensor, targets=None) -> float:
    """Multiply-accumulates of convolution and linear layers for one sample: the other
    baseline of Abdelfattah et al. (ICLR 2021). Needs neither data nor labels (only
    ``inputs``' shape is read). Runs the network itself in evaluation mode, without
    gradients, and restores each layer's mode: no copy, for speed."""
    total = [0]

    def count(module, module_inputs, output):
        if isinstance(module, nn.Linear):
            total[0] += output.numel() * module.in_features
        else:
            kernel = math.prod(module.kernel_size)
            total[0] += output.numel() * kernel * module.in_channels // module.groups

    modes = {module: module.training for module in net.modules()}
    handles = [module.register_forward_hook(count) for module in net.modules()
               if isinstance(module, _WEIGHTED)]
    try:
        with torch.no_grad():
            net.eval()(torch.zeros((1,) + tuple(inputs.shape[1:]), device=_device_of(net, inputs)))
    finally:
        for handle in handles:
            handle.remove()
        for module, training in modes.items():
            module.training = training
    return float(total[0])


class Proxy(NamedTuple):
    """A proxy and what it reads."""
    function: Callable[..., float]
    needs_data: bool
    needs_labels: bool


PROXIES: Dict[str, Proxy] = {
    "synflow": Proxy(synflow, needs_data=False, needs_labels=False),
    "snip": Proxy(snip, needs_data=True, needs_labels=True),
    "grasp": Proxy(grasp, needs_data=True, needs_labels=True),
    "fisher": Proxy(fisher, needs_data=True, needs_labels=True),
    "grad_norm": Proxy(grad_norm, needs_data=True, needs_labels=True),
    "jacov": Proxy(jacov, needs_data=True, needs_labels=False),
    "nwot": Proxy(nwot, needs_data=True, needs_labels=False),
    "params": Proxy(params, needs_data=False, needs_labels=False),
    "flops": Proxy(flops, needs_data=False, needs_labels=False),
}
"""The proxies by name. A data-free proxy reads only the shape of the inputs it is given."""


def check_proxy(name: str) -> str:
    """``name`` if it is a proxy's name; else a ConfigurationError that lists them."""
    return check_choice(name, "the zero-cost proxy (--proxy)", tuple(PROXIES))


def score(name: str, net: nn.Module, inputs: torch.Tensor,
          targets: Optional[torch.Tensor] = None, device: str = "cpu") -> float:
    """The proxy ``name`` of ``net`` for one batch, on ``device`` ("cpu", "cuda", ...).

    ``net`` is moved to ``device`` (``Module.to``); its weights and modes are left as they were.

    Raises:
        ConfigurationError: ``name`` is not a proxy, or it needs labels and none were given.
        ProxyError: the score cannot be computed (no weights, NaN or infinite).
    """
    proxy = PROXIES[check_proxy(name)]
    if proxy.needs_labels and targets is None:
        raise ConfigurationError(f"the proxy {name!r} needs labels (targets); give the "
                                 "batch's labels, or use a proxy that needs none "
                                 f"({', '.join(n for n, p in PROXIES.items() if not p.needs_labels)})")
    net = net.to(device)
    inputs = inputs.to(device)
    targets = targets.to(device) if targets is not None else None
    value = float(proxy.function(net, inputs, targets))
    if not math.isfinite(value):
        raise ProxyError(f"the proxy {name!r} is {value} for this network (an overflow or a "
                         "degenerate network); it cannot rank it")
    return value


# --- helpers ----------------------------------------------------------------------------
_NO_WEIGHTS = ("the network has no convolution or linear weights, which every "
               "gradient-based proxy sums over")


def _pass_input_through(module, module_inputs, output):
    return module_inputs[0]


def _device_of(net: nn.Module, inputs: torch.Tensor) -> torch.device:
    parameter = next(net.parameters(), None)
    return parameter.device if parameter is not None else inputs.device


def _weights(net: nn.Module) -> List[torch.Tensor]:
    weights = [module.weight for module in net.modules()
               if isinstance(module, _WEIGHTED) and module.weight is not None]
    if not weights:
        raise ProxyError(_NO_WEIGHTS)
    return weights


def _copy_for_gradients(net: nn.Module, inputs: torch.Tensor) -> nn.Module:
    """A copy of ``net`` in training mode, without gradients, whose weights exist."""
    net = copy.deepcopy(net).train()
    _weights(net)
    net.zero_grad(set_to_none=True)
    return net


def _sum_over_weights(net: nn.Module, per_weight: Callable[[torch.Tensor], torch.Tensor]) -> float:
    """The sum of ``per_weight`` over the weights that received a gradient (a weight that
    does not reach the output contributes 0)."""
    with torch.no_grad():
        return float(sum(float(per_weight(weight)) for weight in _weights(net)
                         if weight.grad is not None))
