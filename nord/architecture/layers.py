"""The layer registry: the names a NeuralDescriptor may use, and how each maps to torch.

The registry is pure data (a dotted import path per layer), so descriptors can be
built, validated and serialised without importing torch::

    from nord.architecture.layers import list_layers, register_layer
    list_layers()                       # ['adaptive_avg_pool2d', 'avg_pool2d', ...]
    register_layer('my_block', 'mypackage.blocks.MyBlock',
                   params=[('in_channels', REQUIRED), ('width', 16)],
                   shape_param='in_channels', input_kind='spatial')

    @register_layer('scale', params=[('factor', 2.0)])    # or as a class decorator
    class Scale(torch.nn.Module): ...
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from nord.errors import ConfigurationError, UnknownLayerError
from nord.registry import Registry, import_dotted, normalise_name


class _Required:
    def __repr__(self):
        return "REQUIRED"


REQUIRED = _Required()
"""Marks a parameter that has no default."""

INPUT_KINDS = ("spatial", "flat", "any")


@dataclass(frozen=True)
class LayerSpec:
    """What nord knows about one layer type.

    Attributes:
        name: the registry name used in descriptors and JSON ('conv2d').
        target: dotted import path of the ``torch.nn.Module`` subclass, or the class itself.
        params: ``(name, default)`` pairs in the constructor's positional order;
            ``REQUIRED`` marks parameters without a default.
        shape_param: the parameter inferred from the incoming tensor when omitted
            (``in_channels``, ``in_features`` or ``num_features``), or None.
        input_kind: 'spatial' (N, C, H, W), 'flat' (N, F; a Flatten is inserted in front
            of a spatial input) or 'any'.
        forced: parameters whose value nord fixes when building, with why (e.g. ``inplace``
            is always False, since a tensor in a graph may feed several layers).
    """

    name: str
    target: Any
    params: Tuple[Tuple[str, Any], ...] = ()
    shape_param: Optional[str] = None
    input_kind: str = "any"
    forced: Tuple[Tuple[str, Any], ...] = ()

    @property
    def param_names(self) -> Tuple[str, ...]:
        return tuple(name for name, _ in self.params)

    @property
    def defaults(self) -> Dict[str, Any]:
        return {name: default for name, default in self.params if default is not REQUIRED}

    def resolve(self):
        """Import and return the torch class (imports torch)."""
        return import_dotted(self.target) if isinstance(self.target, str) else self.target


LAYERS: Registry[LayerSpec] = Registry(
    "layer type", hint="Use one of these (a name or its torch.nn class), or register yours with "
                      "nord.architecture.layers.register_layer(name, cls, params=...)")
"""Every layer type descriptors may use, by registry name (and torch class name)."""


def register_layer(
    name: str,
    target: Union[str, type, None] = None,
    *,
    params: Sequence[Tuple[str, Any]] = (),
    shape_param: Optional[str] = None,
    input_kind: str = "any",
    forced: Sequence[Tuple[str, Any]] = (),
    aliases: Sequence[str] = (),
    description: str = "",
    overwrite: bool = False,
):
    """Add a layer type to the registry so descriptors can use it by name or class.

    The torch class's name is accepted too (``'MaxPool2d'`` for ``'max_pool2d'``). Without
    ``target``, a class decorator: ``@register_layer("scale", params=[("factor", 2.0)])``.

    Args:
        name: the registry name descriptors use, a Python identifier.
        target: the ``torch.nn.Module`` subclass, or its ``'module.Class'`` path (imported
            when a network is built, so that descriptors need no torch).
        params, shape_param, input_kind, forced: see :class:`LayerSpec`.
        aliases: other names for the same layer type.
        description: one line for ``nord layers``.
        overwrite: replace a layer type of the same name.

    Returns:
        ``target``.

    Raises:
        ConfigurationError: the name is taken (pass ``overwrite=True``), the input kind is
            unknown, or the shape parameter is not among the parameters.
    """
    if target is None:
        return functools.partial(register_layer, name, params=params, shape_param=shape_param,
                                 input_kind=input_kind, forced=forced, aliases=aliases,
                                 description=description, overwrite=overwrite)
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigurationError(
            f"a layer name must be a Python identifier such as 'my_block'; got {name!r}")
    if input_kind not in INPUT_KINDS:
        raise ConfigurationError(
            f"input_kind must be one of {INPUT_KINDS}; got {input_kind!r} for layer '{name}'")
    params = tuple((str(p), d) for p, d in params)
    if shape_param is not None and shape_param not in {p for p, _ in params}:
        raise ConfigurationError(
            f"shape_param '{shape_param}' of layer '{name}' is not one of its parameters "
            f"{[p for p, _ in params]}")
    spec = LayerSpec(name, target, params, shape_param, input_kind, tuple(forced))
    existing = LAYERS.find(name)
    if existing is not None and existing.value == spec and not overwrite:
        return target   # registered again as it is: a module imported twice
    if existing is not None and not overwrite:
        raise ConfigurationError(
            f"layer name '{name}' is already registered for {existing.value.target}; "
            "choose another name or pass overwrite=True")
    if existing is not None:
        LAYERS.unregister(existing.name)
    class_name = _class_name(target)
    if normalise_name(class_name) != normalise_name(name) and class_name not in LAYERS:
        aliases = (*aliases, class_name)
    LAYERS.register(name, spec, aliases=aliases, description=description)
    return target


def list_layers() -> List[str]:
    """Names of every registered layer type, sorted."""
    return LAYERS.names()


def get_layer_spec(layer: Union[str, type, LayerSpec]) -> LayerSpec:
    """The spec of a layer given by registry name, by class, or as a spec.

    Raises:
        UnknownLayerError: the name or class is not registered; the message lists the
            valid names.
    """
    if isinstance(layer, LayerSpec):
        return layer
    if isinstance(layer, str):
        found = LAYERS.find(layer)
        if found is not None:
            return found.value
        given = repr(layer)
    elif isinstance(layer, type):
        for spec in (entry.value for entry in LAYERS.entries()):
            if spec.target is layer:
                return spec
            if isinstance(spec.target, str) and _class_name(spec.target) == layer.__name__:
                try:
                    if spec.resolve() is layer:
                        return spec
                except (ImportError, AttributeError):  # a stale dotted path: not this class
                    continue
        given = f"class {layer.__module__}.{layer.__qualname__}"
    else:
        given = repr(layer)
    raise UnknownLayerError(
        f"unknown layer type {given}; valid layer types are: {', '.join(list_layers())}. "
        f"{LAYERS.hint}")


def _class_name(target) -> str:
    return target.rpartition(".")[2] if isinstance(target, str) else target.__name__


# --- the built-in layers -----------------------------------------------------------------
_NO_INPLACE = (("inplace", False),)
_CONV = (("in_channels", REQUIRED), ("out_channels", REQUIRED), ("kernel_size", REQUIRED),
         ("stride", 1), ("padding", 0), ("dilation", 1), ("groups", 1), ("bias", True),
         ("padding_mode", "zeros"))
_NORM = (("num_features", REQUIRED), ("eps", 1e-5), ("momentum", 0.1), ("affine", True),
         ("track_running_stats", True))

register_layer("conv2d", "torch.nn.Conv2d", params=_CONV, shape_param="in_channels",
               input_kind="spatial")
register_layer("max_pool2d", "torch.nn.MaxPool2d",
               params=(("kernel_size", REQUIRED), ("stride", None), ("padding", 0),
                       ("dilation", 1), ("return_indices", False), ("ceil_mode", False)),
               input_kind="spatial", forced=(("return_indices", False),))
register_layer("avg_pool2d", "torch.nn.AvgPool2d",
               params=(("kernel_size", REQUIRED), ("stride", None), ("padding", 0),
                       ("ceil_mode", False), ("count_include_pad", True),
                       ("divisor_override", None)),
               input_kind="spatial")
register_layer("adaptive_avg_pool2d", "torch.nn.AdaptiveAvgPool2d",
               params=(("output_size", REQUIRED),), input_kind="spatial")
register_layer("adaptive_max_pool2d", "torch.nn.AdaptiveMaxPool2d",
               params=(("output_size", REQUIRED), ("return_indices", False)),
               input_kind="spatial", forced=(("return_indices", False),))
register_layer("batch_norm2d", "torch.nn.BatchNorm2d", params=_NORM, shape_param="num_features",
               input_kind="spatial")
register_layer("batch_norm1d", "torch.nn.BatchNorm1d", params=_NORM, shape_param="num_features",
               input_kind="flat")
register_layer("linear", "torch.nn.Linear",
               params=(("in_features", REQUIRED), ("out_features", REQUIRED), ("bias", True)),
               shape_param="in_features", input_kind="flat")
register_layer("flatten", "torch.nn.Flatten", params=(("start_dim", 1), ("end_dim", -1)))
register_layer("identity", "torch.nn.Identity")
register_layer("relu", "torch.nn.ReLU", params=(("inplace", False),), forced=_NO_INPLACE)
register_layer("relu6", "torch.nn.ReLU6", params=(("inplace", False),), forced=_NO_INPLACE)
register_layer("leaky_relu", "torch.nn.LeakyReLU",
               params=(("negative_slope", 0.01), ("inplace", False)), forced=_NO_INPLACE)
register_layer("elu", "torch.nn.ELU", params=(("alpha", 1.0), ("inplace", False)),
               forced=_NO_INPLACE)
register_layer("gelu", "torch.nn.GELU", params=(("approximate", "none"),))
register_layer("silu", "torch.nn.SiLU", params=(("inplace", False),), forced=_NO_INPLACE)
register_layer("sigmoid", "torch.nn.Sigmoid")
register_layer("tanh", "torch.nn.Tanh")
register_layer("dropout", "torch.nn.Dropout", params=(("p", 0.5), ("inplace", False)),
               forced=_NO_INPLACE)
register_layer("dropout2d", "torch.nn.Dropout2d", params=(("p", 0.5), ("inplace", False)),
               input_kind="spatial", forced=_NO_INPLACE)
# nord's own modules (nord/nn/modules.py), e.g. the operations of NAS-Bench-201 cells.
register_layer("zero", "nord.nn.modules.Zero")
register_layer("relu_conv_bn", "nord.nn.modules.ReLUConvBN",
               params=(("in_channels", REQUIRED), ("out_channels", REQUIRED),
                       ("kernel_size", REQUIRED), ("stride", 1), ("padding", 0), ("dilation", 1),
                       ("affine", True), ("track_running_stats", True)),
               shape_param="in_channels", input_kind="spatial")

# --- what the built-in layers' parameters may be ------------------------------------------
# Checked when a descriptor is built, naming the layer and the parameter, so that a candidate
# with 4.5 output channels is refused then, not failed by torch's misleading message later.


def _whole(value, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _whole_or_pair(least: int) -> Callable[[Any], bool]:
    return lambda value: _whole(value, least) or (
        isinstance(value, (list, tuple)) and len(value) in (1, 2, 3)
        and all(_whole(item, least) for item in value))


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_COUNT = (lambda value: _whole(value, 1), "a whole number >= 1")
_SIZE = (_whole_or_pair(1), "a whole number >= 1, or a list of them (one per dimension)")
_FLAG = (lambda value: isinstance(value, bool), "true or false")
PARAMETER_RULES: Dict[str, Tuple[Callable[[Any], bool], str]] = {
    "in_channels": _COUNT, "out_channels": _COUNT, "in_features": _COUNT,
    "out_features": _COUNT, "num_features": _COUNT, "groups": _COUNT,
    "kernel_size": _SIZE, "dilation": _SIZE,
    "stride": (lambda value: value is None or _whole_or_pair(1)(value),
               "a whole number >= 1, a list of them, or none (the kernel size)"),
    "padding": (lambda value: _whole_or_pair(0)(value) or value in ("same", "valid"),
                "a whole number >= 0, a list of them, 'same' or 'valid'"),
    "output_size": (lambda value: _whole_or_pair(1)(value) or (
        isinstance(value, (list, tuple)) and all(v is None or _whole(v, 1) for v in value)),
        "a whole number >= 1, or a list of them (none keeps that dimension)"),
    "p": (lambda value: _number(value) and 0 <= value <= 1, "a probability in [0, 1]"),
    "eps": (lambda value: _number(value) and value > 0, "a number > 0"),
    "momentum": (lambda value: value is None or (_number(value) and 0 <= value <= 1),
                 "a number in [0, 1], or none"),
    "negative_slope": (_number, "a number"), "alpha": (_number, "a number"),
    "start_dim": (lambda value: _whole(value, -64), "a whole number"),
    "end_dim": (lambda value: _whole(value, -64), "a whole number"),
    "bias": _FLAG, "affine": _FLAG, "track_running_stats": _FLAG, "ceil_mode": _FLAG,
    "count_include_pad": _FLAG, "inplace": _FLAG, "return_indices": _FLAG,
    "divisor_override": (lambda value: value is None or _whole(value, 1),
                         "a whole number >= 1, or none"),
    "padding_mode": (lambda value: value in ("zeros", "reflect", "replicate", "circular"),
                     "'zeros', 'reflect', 'replicate' or 'circular'"),
    "approximate": (lambda value: value in ("none", "tanh"), "'none' or 'tanh'"),
}
"""Parameter name -> (the test a value passes, the rule in words), for nord's own layers."""

BUILT_IN = {name: LAYERS.get(name).target for name in LAYERS.names()}
"""The layers registered here, by name and target: their parameters follow the rules above
(a layer registered by a user, even under a parameter name found here, is not checked)."""


def parameter_refusal(spec: LayerSpec, parameter: str, value: Any) -> Optional[str]:
    """Why ``value`` cannot be ``parameter`` of a built-in layer ``spec`` (the rule and what
    was given), or None when it can or nord does not know the layer."""
    if BUILT_IN.get(spec.name) != spec.target or parameter not in PARAMETER_RULES:
        return None
    test, rule = PARAMETER_RULES[parameter]
    if test(value):
        return None
    return f"parameter {parameter!r} must be {rule}; got {type(value).__name__} {value!r}"
