"""The data sets nord knows by name, without importing torch or reading any file.

    from nord.data.registry import get_curator, list_curators, register_curator

    list_curators()                         # ['cifar10', 'digits', 'fashion-mnist', 'mnist']
    data = get_curator('fashion_mnist', root='data')   # any spelling of a name
    @register_curator('noise')              # a DataCurator subclass of your own
    class Noise(DataCurator): ...

Built-in data sets are registered by their import path, so that the command line can check
a name before anything heavy is imported.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, List, Type, Union

from nord.registry import Registry

__all__ = ["CURATORS", "register_curator", "list_curators", "get_curator", "curator_class"]

CURATORS: Registry[Union[str, type]] = Registry(
    "data set", hint="Register yours with @nord.data.register_curator(name)")
"""Data set name -> its DataCurator class (or the class's dotted import path)."""

for _name, _path, _description in (
        ("digits", "nord.data.builtin.Digits", "scikit-learn's 8x8 digits, built in (no files)"),
        ("mnist", "nord.data.datasets.MNIST", "MNIST, official IDX files"),
        ("fashion-mnist", "nord.data.datasets.FashionMNIST", "Fashion-MNIST, official IDX files"),
        ("cifar10", "nord.data.datasets.CIFAR10", "CIFAR-10, official python pickles")):
    CURATORS.register(_name, _path, description=_description)


def register_curator(name: str) -> Callable[[type], type]:
    """Class decorator: make a DataCurator subclass available as ``get_curator(name)``."""

    def decorate(cls: type) -> type:
        existing = CURATORS.find(name)
        if existing is not None and curator_class(name) is not cls:
            from nord.errors import ConfigurationError
            raise ConfigurationError(
                f"a data set named {name!r} is already registered ({existing.value}); pick "
                "another name")
        if existing is None:
            CURATORS.register(name, cls)
        return cls

    return decorate


def list_curators() -> List[str]:
    """Names accepted by :func:`get_curator` (case, '-' and '_' do not matter there)."""
    return CURATORS.names()


def curator_class(name: str) -> Type:
    """The DataCurator class registered as ``name`` (imports it).

    Raises:
        ConfigurationError: unknown name; the message lists the valid ones.
    """
    target = CURATORS.get(name)
    if isinstance(target, str):
        module, _, attribute = target.rpartition(".")
        target = getattr(importlib.import_module(module), attribute)
    return target


def get_curator(name: str, **kwargs: Any):
    """A curator by name, constructed with ``kwargs``: ``get_curator('mnist', root='data')``.

    Raises:
        ConfigurationError: unknown name; the message lists the valid ones.
    """
    return curator_class(name)(**kwargs)
