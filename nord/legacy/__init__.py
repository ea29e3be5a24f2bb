"""Run code written for NORD 2018 on nord: its module names, signatures and defaults.

A 2018 program imported the modules ``neural_nets`` and ``utils`` by those top-level
names. One added line makes them importable again::

    import nord.legacy                      # the only change
    from neural_nets import NeuralDescriptor, NeuralEvaluator
    from neural_nets.distributed import Environment
    from utils import get_logger

The 2018 examples, ported this way, are in ``experiments/legacy/``.
Details (the import hook, where the 2018 names differ from nord): docs/legacy.md.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["install", "installed", "LEGACY_MODULES", "DATA_ENV"]

LEGACY_MODULES = {"neural_nets": "nord.legacy.neural_nets", "utils": "nord.legacy.utils"}
"""2018 top-level module name -> the nord module that provides it."""

DATA_ENV = "NORD_LEGACY_DATA"
"""Environment variable: a folder with CIFAR-10 files in the official python format (possibly
a small or modified copy, so not checked against the official checksums) that the 2018
evaluators read instead of the official CIFAR-10 in ``$NORD_DATA_ROOT``."""


class _AliasLoader(importlib.abc.Loader):
    """Loads a 2018 name by putting the nord module in its place in ``sys.modules``."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return None  # a placeholder, replaced in exec_module

    def exec_module(self, module) -> None:
        # The import system returns whatever sys.modules holds under the name after this
        # call, so the 2018 name and the nord name become one module object: classes,
        # registrations and module state exist once.
        sys.modules[module.__name__] = importlib.import_module(self.target)


class _LegacyNames(importlib.abc.MetaPathFinder):
    """Finds the 2018 module names when no other finder does."""

    def find_spec(self, fullname, path=None, target=None):
        top, _, rest = fullname.partition(".")
        base = LEGACY_MODULES.get(top)
        if base is None:
            return None
        if not rest:
            if self._found_elsewhere(fullname):
                return None
        elif getattr(sys.modules.get(top), "__name__", None) != base:
            return None  # a package of the user's own under the 2018 name
        name = base + ("." + rest if rest else "")
        try:
            if importlib.util.find_spec(name) is None:
                return None
        except ModuleNotFoundError:  # a submodule of a module that is no package
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(name))

    def _found_elsewhere(self, fullname: str) -> bool:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            if finder.find_spec(fullname, None) is not None:
                return True
        return False


def installed() -> bool:
    """Whether the 2018 module names are importable through nord.legacy's hook."""
    return any(isinstance(finder, _LegacyNames) for finder in sys.meta_path)


def install() -> None:
    """Make ``neural_nets`` and ``utils`` importable as in 2018 (idempotent; done on import).

    The hook goes first in ``sys.meta_path`` so that ``neural_nets.layers`` resolves to the
    same module as ``nord.legacy.neural_nets.layers`` instead of loading a second copy, and
    it defers to every other finder for the top-level names.
    """
    if not installed():
        sys.meta_path.insert(0, _LegacyNames())


install()
