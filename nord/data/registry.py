"""The data sets nord knows by name, without importing torch or reading any file.

    from nord.data.registry import get_curator, list_curators, register_curator

    list_curators()                         # ['cifar10', 'digits', 'fashion-mnist', 'mnist']
    data = get_curator('fashion_mnist', root='data')   # any spelling of a name
    register_curator('noise', Noise)        # a DataCurator subclass, or its dotted path

Built-in data sets are registered by their import path, so that the command line can check
a name before anything heavy is imported. Other packages add data sets through the
``nord.datasets`` entry-point group (see :mod:`nord.registry`).
"""
from __future__ import annotations

from typing import Any, List, Sequence, Type, Union

from nord.registry import Registry

__all__ = ["CURATORS", "register_curator", "list_curators", "get_curator", "curator_class"]

CURATORS: Registry[Union[str, type]] = Registry(
    "data set",
    hint="Register yours with nord.data.register_curator(name, cls) (for nord run: in a "
         "module given to --plugin, or an entry point of 'nord.datasets')",
    plugins="nord.datasets")
"""Data set name -> its DataCurator class (or the class's dotted import path)."""


def register_curator(name: str, cls: Union[type, str, None] = None, *,
                     aliases: Sequence[str] = (), description: str = "",
                     overwrite: bool = False):
    """Make the DataCurator subclass ``cls`` (or its ``'module.Class'`` path, imported on
    first use) available to :func:`get_curator` as ``name``; without ``cls``, a class
    decorator (``@register_curator("noise")``). The class is not checked here, so that this
    module needs no torch. Returns ``cls``; arguments and errors as
    :meth:`nord.registry.Registry.add`."""
    return CURATORS.add(name, cls, aliases=aliases, description=description,
                        overwrite=overwrite)



def list_curators() -> List[str]:
    """Names accepted by :func:`get_curator` (case, '-' and '_' do not matter there)."""
    return CURATORS.names()


def curator_class(name: str) -> Type:
    """The DataCurator class registered as ``name`` (imports it).

    Raises:
        ConfigurationError: unknown name; the message lists the valid ones.
    """
    return CURATORS.load(name)


def get_curator(name: str, **kwargs: Any):
    """A curator by name, constructed with ``kwargs``: ``get_curator('mnist', root='data')``.

    Raises:
        ConfigurationError: unknown name; the message lists the valid ones.
    """
    return curator_class(name)(**kwargs)


for _name, _path, _description in (
        ("digits", "nord.data.builtin.Digits",
         "scikit-learn's 8x8 digits, built in (no download; its splits are kept in "
         "$NORD_DATA_ROOT/digits, else ~/.cache/nord/data/digits)"),
        ("mnist", "nord.data.datasets.MNIST", "MNIST, official IDX files"),
        ("fashion-mnist", "nord.data.datasets.FashionMNIST", "Fashion-MNIST, official IDX files"),
        ("cifar10", "nord.data.datasets.CIFAR10", "CIFAR-10, official python pickles")):
    register_curator(_name, _path, description=_description)
