"""The 2018 ``NeuralDescriptor``: nord's descriptor, read and named as in 2018.

    d = NeuralDescriptor()
    d.add_layer(torch.nn.Conv2d, [3, 10, 5], 'conv')       # class, positional parameters, name
    d.add_layer_sequential(torch.nn.ReLU6, [])             # named '1_Layer', connected to 'conv'
    d.first_layer, d.last_layer, d.current_layer           # 'conv', '1_Layer', 2
    cls, params = d.layers['conv']                         # torch.nn.Conv2d, [3, 10, 5]
    d.connections['conv']                                  # ['1_Layer']

As in 2018: generated names are ``<n>_<DEFAULT_SUFFIX>`` (this module's global, read when a
layer is added), any ``torch.nn.Module`` class can be a layer, ``layers`` maps a name to
``[class, parameters]`` and ``connections`` a name to the layers it feeds. Unlike 2018,
``layers`` and ``connections`` are copies that refuse to be edited (the message says which
method to call instead), since every change goes through the descriptor's methods.

It is nord's :class:`~nord.architecture.descriptor.NeuralDescriptor` otherwise, so every
nord evaluator takes it. Where nord is stricter or different than 2018: a repeated layer
name or connection, a connection to a missing layer and a cycle raise a ``DescriptorError``
at once (2018 accepted them silently); a layer with several inputs sums them (2018 kept only
one of them); and every layer without outgoing connections is an output (2018 used the
last layer added).
"""
from __future__ import annotations

from typing import Any, Dict, List

from nord.architecture.descriptor import Layer
from nord.architecture.descriptor import NeuralDescriptor as _NordDescriptor
from nord.errors import DescriptorError
from nord.legacy.neural_nets.layers.layer_types import register_module_class

__all__ = ["NeuralDescriptor", "DEFAULT_SUFFIX", "ReadOnlyError"]

DEFAULT_SUFFIX = "Layer"
"""Generated layer names are ``<number of layers added>_<DEFAULT_SUFFIX>``: '0_Layer', ..."""

_LAYERS_COPY = ("descriptor.layers is a copy (2018 let you edit it): add a layer with "
                "d.add_layer(cls, params, name) and remove one with d.remove_layer(name)")
_PARAMS_COPY = ("the parameters of layer {name!r} are a copy (2018 let you edit them in place): "
                "remove the layer with d.remove_layer({name!r}), add it again with the new "
                "parameters, d.add_layer(cls, params, {name!r}), and connect it again with "
                "d.connect_layers")
_CONNECTIONS_COPY = ("descriptor.connections is a copy (2018 let you edit it): connect layers "
                     "with d.connect_layers(from_layer, to_layer) and disconnect them with "
                     "d.disconnect_layers(from_layer, to_layer)")


class ReadOnlyError(DescriptorError, TypeError):
    """An edit of a 2018 view (``layers``, ``connections``) that nord makes through methods."""


class _ReadOnlyList(list):
    """A list that says which descriptor method to call instead of being edited."""

    def __init__(self, items, message: str):
        super().__init__(items)
        self._message = message

    def _refuse(self, *_args, **_kwargs):
        raise ReadOnlyError(self._message)

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = remove = pop = clear = sort = reverse = _refuse

    def __reduce__(self):  # copies and pickles are plain lists
        return list, (list(self),)


class _ReadOnlyDict(dict):
    """A dict that says which descriptor method to call instead of being edited."""

    def __init__(self, items, message: str):
        super().__init__(items)
        self._message = message

    def _refuse(self, *_args, **_kwargs):
        raise ReadOnlyError(self._message)

    __setitem__ = __delitem__ = __ior__ = _refuse
    pop = popitem = clear = update = setdefault = _refuse

    def __reduce__(self):  # copies and pickles are plain dicts
        return dict, (dict(self),)


class LegacyLayer(Layer):
    """A nord :class:`~nord.architecture.descriptor.Layer` that also reads as 2018's
    ``[layer_class, parameters]``: ``cls, params = d.layers[name]``, ``d.layers[name][0]``."""

    __slots__ = ()

    def _as_2018(self) -> List[Any]:
        spec = self.spec
        names = list(spec.param_names)
        given = list(self.params)
        message = _PARAMS_COPY.format(name=self.name)
        if given == names[:len(given)]:  # given by position, as 2018 did
            params = _ReadOnlyList([self.params[key] for key in given], message)
        else:
            params = _ReadOnlyDict(self.params, message)
        return [spec.resolve(), params]

    def __iter__(self):
        return iter(self._as_2018())

    def __getitem__(self, index):
        return self._as_2018()[index]

    def __len__(self) -> int:
        return 2


class NeuralDescriptor(_NordDescriptor):
    """A network as named layers and connections, with 2018's names and views."""

    def __init__(self):
        super().__init__()
        self._added = 0

    def add_layer(self, layer_class, parameters=None, name=None, merge: str = "sum") -> str:
        """Add a layer: a ``torch.nn.Module`` class (any, as in 2018) or a nord layer name,
        its parameters (a list in the constructor's order, or a dict) and an optional name
        (default ``'<n>_Layer'``). Returns the name."""
        if isinstance(layer_class, type):
            register_module_class(layer_class)
        if name is None:
            name = f"{self._added}_{DEFAULT_SUFFIX}"
        name = super().add_layer(layer_class, parameters, name, merge)
        self._added += 1
        return name

    # --- 2018's attributes -------------------------------------------------------------
    @property
    def first_layer(self) -> str:
        """The name of the first layer added ('' before any)."""
        return next(iter(self._layers), "")

    @first_layer.setter
    def first_layer(self, _value):
        raise AttributeError(
            "first_layer cannot be set: the network's input is the layer without incoming "
            "connections; to name another one, call d.set_input(name)")

    @property
    def last_layer(self) -> str:
        """The name of the last layer added, which add_layer_sequential connects from ('')."""
        return self._last_added or ""

    @last_layer.setter
    def last_layer(self, _value):
        raise AttributeError(
            "last_layer cannot be set: it is the layer added last (add_layer_sequential "
            "connects from it); the network's outputs are the layers without outgoing "
            "connections, or the one named with d.set_output(name)")

    @property
    def current_layer(self) -> int:
        """How many layers have been added (it numbers the generated names)."""
        return self._added

    @current_layer.setter
    def current_layer(self, _value):
        raise AttributeError(
            "current_layer cannot be set: it counts the layers added; to choose a layer's "
            "name, pass it: d.add_layer(cls, params, name)")

    @property
    def layers(self) -> Dict[str, LegacyLayer]:
        """Name -> the layer, which reads as 2018's ``[layer_class, parameters]`` (a copy)."""
        return _ReadOnlyDict(
            {name: LegacyLayer(layer.name, layer.type, dict(layer.params), layer.merge)
             for name, layer in super().layers.items()}, _LAYERS_COPY)

    @property
    def connections(self) -> Dict[str, List[str]]:
        """Name -> the names of the layers it feeds, for every layer, as in 2018 (a copy)."""
        return _ReadOnlyDict({name: _ReadOnlyList(self._outputs[name], _CONNECTIONS_COPY)
                              for name in self._layers}, _CONNECTIONS_COPY)
