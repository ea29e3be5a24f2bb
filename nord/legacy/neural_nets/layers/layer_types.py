"""The 2018 layer groups, ``Flatten``, and the 2018 layer classes made known to nord.

    from neural_nets.layers.layer_types import Flatten, find_layer_type
    d.add_layer(Flatten, [], 'flat')          # torch.nn.Flatten, nord's 'flatten'
    find_layer_type(torch.nn.Conv1d)          # 'convolutions'

A descriptor accepts only layer types in nord's registry (``nord.architecture.layers``). Importing this
module registers the single-input classes of the groups below that nord does not know yet
(``Conv1d``, ``ConvTranspose2d``, ``PReLU``, ``Softmax``, ``LPPool2d``, ``AlphaDropout``, ...)
under snake-case names (``conv1d``, ``conv_transpose2d``, ``prelu``, ...), with their
constructor parameters read from torch, so that 2018 descriptors using them build.
``inplace`` is fixed to False and ``return_indices`` to False, as for nord's own layers.
Losses and the ``MaxUnpool`` layers (which need a second input) stay out of the registry.
Any other ``torch.nn.Module`` subclass, one of the user's own included, is registered when a
2018 descriptor first adds it (:func:`register_module_class`), as 2018 accepted any class.
"""
from __future__ import annotations

import inspect
import re
from typing import Optional

import torch.nn as nn

from nord.errors import UnknownLayerError
from nord.architecture.layers import REQUIRED, get_layer_spec, list_layers, register_layer

__all__ = ["Flatten", "convolutions", "activations", "losses", "pooling", "dropout", "linear",
           "flatten", "layer_types", "find_layer_type", "register_module_class", "REGISTERED"]

Flatten = nn.Flatten
"""Flattens all but the batch dimension; 2018's own class did the same with ``view``."""

convolutions = [nn.Conv1d, nn.Conv2d, nn.Conv3d,
                nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d]

activations = [nn.Threshold, nn.ReLU, nn.Hardtanh, nn.ReLU6, nn.Sigmoid, nn.Tanh, nn.Softmax,
               nn.Softmax2d, nn.LogSoftmax, nn.ELU, nn.SELU, nn.Hardshrink, nn.LeakyReLU,
               nn.LogSigmoid, nn.Softplus, nn.Softshrink, nn.PReLU, nn.Softsign, nn.Softmin,
               nn.Tanhshrink, nn.RReLU, nn.GLU]

losses = [nn.L1Loss, nn.NLLLoss, nn.KLDivLoss, nn.MSELoss, nn.BCELoss, nn.BCEWithLogitsLoss,
          nn.CosineEmbeddingLoss, nn.HingeEmbeddingLoss, nn.MarginRankingLoss,
          nn.MultiLabelMarginLoss, nn.MultiLabelSoftMarginLoss, nn.MultiMarginLoss,
          nn.SmoothL1Loss, nn.SoftMarginLoss, nn.CrossEntropyLoss, nn.TripletMarginLoss,
          nn.PoissonNLLLoss]
if hasattr(nn, "NLLLoss2d"):  # deprecated in torch; kept while torch has it
    losses.append(nn.NLLLoss2d)

pooling = [nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d, nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d,
           nn.MaxUnpool1d, nn.MaxUnpool2d, nn.MaxUnpool3d, nn.FractionalMaxPool2d, nn.LPPool1d,
           nn.LPPool2d, nn.AdaptiveMaxPool1d, nn.AdaptiveMaxPool2d, nn.AdaptiveMaxPool3d,
           nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d]

dropout = [nn.Dropout, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout]

linear = [nn.Linear]

flatten = [Flatten]

layer_types = {"convolutions": convolutions, "activations": activations, "losses": losses,
               "pooling": pooling, "dropout": dropout, "linear": linear, "flatten": flatten}


def find_layer_type(layer) -> Optional[str]:
    """The group ('convolutions', 'pooling', ...) of a layer class; None when in none."""
    for group, classes in layer_types.items():
        if layer in classes:
            return group
    return None


# --- registration in nord's layer registry ---------------------------------------------------
_NAMES = {
    nn.Conv1d: "conv1d", nn.Conv3d: "conv3d", nn.ConvTranspose1d: "conv_transpose1d",
    nn.ConvTranspose2d: "conv_transpose2d", nn.ConvTranspose3d: "conv_transpose3d",
    nn.Threshold: "threshold", nn.Hardtanh: "hardtanh", nn.Softmax: "softmax",
    nn.Softmax2d: "softmax2d", nn.LogSoftmax: "log_softmax", nn.SELU: "selu",
    nn.Hardshrink: "hardshrink", nn.LogSigmoid: "log_sigmoid", nn.Softplus: "softplus",
    nn.Softshrink: "softshrink", nn.PReLU: "prelu", nn.Softsign: "softsign",
    nn.Softmin: "softmin", nn.Tanhshrink: "tanhshrink", nn.RReLU: "rrelu", nn.GLU: "glu",
    nn.AvgPool1d: "avg_pool1d", nn.AvgPool3d: "avg_pool3d", nn.MaxPool1d: "max_pool1d",
    nn.MaxPool3d: "max_pool3d", nn.FractionalMaxPool2d: "fractional_max_pool2d",
    nn.LPPool1d: "lp_pool1d", nn.LPPool2d: "lp_pool2d",
    nn.AdaptiveMaxPool1d: "adaptive_max_pool1d", nn.AdaptiveMaxPool3d: "adaptive_max_pool3d",
    nn.AdaptiveAvgPool1d: "adaptive_avg_pool1d", nn.AdaptiveAvgPool3d: "adaptive_avg_pool3d",
    nn.Dropout3d: "dropout3d", nn.AlphaDropout: "alpha_dropout",
}
# torch's own arguments that are no layer settings: where the weights live, and internals
_SKIPPED = {"self", "device", "dtype"}
_FIXED = {"inplace": False, "return_indices": False}


def _signature_params(cls):
    params = []
    for name, parameter in inspect.signature(cls.__init__).parameters.items():
        if (name in _SKIPPED or name.startswith("_")
                or parameter.kind not in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)):
            continue
        params.append((name, REQUIRED if parameter.default is parameter.empty else parameter.default))
    return params


def _register_2018_layers():
    """Register the classes nord lacks; returns {class: registry name} of what it added."""
    added = {}
    for cls, name in _NAMES.items():
        try:
            get_layer_spec(cls)
            continue  # nord knows this class already
        except UnknownLayerError:
            pass
        if name in list_layers():
            name = "legacy_" + name
        params = _signature_params(cls)
        names = {p for p, _ in params}
        register_layer(name, f"torch.nn.{cls.__name__}", params=params,
                       shape_param="in_channels" if "in_channels" in names else None,
                       forced=[(p, v) for p, v in _FIXED.items() if p in names])
        added[cls] = name
    return added


REGISTERED = _register_2018_layers()
"""The 2018 layer classes this module added to nord's registry, with their names."""


def register_module_class(layer) -> str:
    """Make any ``torch.nn.Module`` subclass a layer type, as 2018 accepted any class.

    A class nord knows keeps its name; another is registered under the snake-case form of
    its class name (``MyBlock`` -> ``my_block``; ``legacy_<module>_my_block`` when that is
    taken), its parameters read from its constructor. Returns the registry name.

    Raises:
        UnknownLayerError: ``layer`` is not a ``torch.nn.Module`` subclass.
    """
    try:
        return get_layer_spec(layer).name
    except UnknownLayerError:
        if not (isinstance(layer, type) and issubclass(layer, nn.Module)):
            raise
    taken = set(list_layers())
    name = _snake_case(layer.__name__)
    if name in taken:
        base = name = _snake_case(f"legacy_{layer.__module__}_{layer.__name__}")
        count = 1
        while name in taken:  # a class defined again under the same name
            count += 1
            name = f"{base}_{count}"
    params = _signature_params(layer)
    names = {p for p, _ in params}
    register_layer(name, layer, params=params,
                   forced=[(p, v) for p, v in _FIXED.items() if p in names],
                   description=f"{layer.__module__}.{layer.__qualname__} (added by nord.legacy)")
    return name


def _snake_case(text: str) -> str:
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text)
    text = re.sub(r"\W+", "_", text).strip("_").lower() or "layer"
    return text if text[0].isalpha() else "layer_" + text
