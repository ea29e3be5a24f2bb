"""The import hook of nord.legacy: the 2018 names ``neural_nets`` and ``utils`` resolve to nord.

    import nord.legacy            # installs the hook
    import neural_nets            # nord.legacy.neural_nets, unless a module of your own wins

For a top-level 2018 name the hook asks the other finders first, and what they find wins
unless it is one of two things a NORD 2018 checkout holds:

* a folder without ``__init__.py`` (a namespace package: ``neural_nets/data/`` where 2018
  kept CIFAR-10, or a partial copy), which is no module of anyone's: ignored;
* NORD 2018's own ``neural_nets`` package or ``utils.py``, recognised by what its files
  define (they are read, never run): replaced by nord's port, and a line on stderr says so,
  once per folder (on rank 0 only under mpirun).

Anything else named ``neural_nets`` or ``utils`` is a module of the user's own and wins.
docs/legacy.md says how a file is recognised as 2018's.
"""
from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.util
import os
import sys
from typing import Optional

from nord.parallel.launcher import launcher_rank

__all__ = ["LEGACY_MODULES", "LegacyNames", "is_nord2018", "install_finder", "finder_installed"]

LEGACY_MODULES = {"neural_nets": "nord.legacy.neural_nets", "utils": "nord.legacy.utils"}
"""2018 top-level module name -> the nord module that provides it."""

# What NORD 2018's neural_nets/__init__.py imports, relatively: (module, name).
_NEURAL_NETS_2018 = frozenset({
    ("layers", "*"), ("local.data_curator", "get_cifar10"),
    ("distributed.data_curator", "get_cifar10_distributed"), ("neural_builder", "NeuralNet"),
    ("local.neural_evaluator", "NeuralEvaluator"),
    ("distributed.neural_evaluator", "DistributedNeuralEvaluator"),
    ("neural_descriptor", "NeuralDescriptor")})
# The functions NORD 2018's utils.py defines, and the import that ties it to neural_nets.
_UTILS_2018 = frozenset({"get_logger", "get_convolution_out_size", "extract_params",
                         "print_all_parameters", "get_random_value", "generate_layer_parameters",
                         "progress_bar", "format_time"})
_UTILS_2018_IMPORT = ("neural_nets", "layers")

_announced = set()  # folders whose 2018 files were reported replaced


def _parse(path: Optional[str]) -> Optional[ast.Module]:
    if not path or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as handle:
            return ast.parse(handle.read(), path)
    except (OSError, SyntaxError, ValueError):
        return None


def _relative_imports(tree: ast.Module) -> set:
    found = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found.update((node.module or "", alias.name) for alias in node.names)
    return found


def is_nord2018(name: str, spec) -> bool:
    """Whether the module ``spec`` found for the 2018 name ``name`` is NORD 2018's own.

    ``neural_nets`` is 2018's when its ``__init__.py`` imports exactly 2018's seven names
    from 2018's modules; ``utils`` when its file defines exactly 2018's eight functions and
    imports ``layers`` from ``neural_nets``. A copy with anything added is the user's own.
    """
    tree = _parse(getattr(spec, "origin", None))
    if tree is None:
        return False
    if name == "neural_nets":
        return (spec.submodule_search_locations is not None
                and _relative_imports(tree) == _NEURAL_NETS_2018)
    if name == "utils":
        functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        imports = {(node.module, alias.name) for node in tree.body
                   if isinstance(node, ast.ImportFrom) and node.level == 0
                   for alias in node.names}
        return functions == _UTILS_2018 and _UTILS_2018_IMPORT in imports
    return False


def _is_namespace(spec) -> bool:
    """A folder without ``__init__.py``: Python makes it a namespace package."""
    return spec.submodule_search_locations is not None and spec.origin in (None, "namespace")


def _folder_of(name: str, spec) -> str:
    origin = os.path.abspath(spec.origin)
    folder = os.path.dirname(origin)
    return os.path.dirname(folder) if name == "neural_nets" else folder


def _quiet_rank() -> bool:
    """Whether this is a rank other than 0 of an MPI job (rank 0 speaks for all)."""
    return (launcher_rank() or 0) != 0


class LegacyNames(importlib.abc.MetaPathFinder):
    """Finds the 2018 module names: see the module documentation for who wins."""

    def find_spec(self, fullname, path=None, target=None):
        top, _, rest = fullname.partition(".")
        base = LEGACY_MODULES.get(top)
        if base is None:
            return None
        if not rest:
            other = self._find_elsewhere(fullname)
            if other is not None and not _is_namespace(other):
                if not is_nord2018(top, other):
                    return None  # a module of the user's own under the 2018 name
                self._announce(_folder_of(top, other))
        elif getattr(sys.modules.get(top), "__name__", None) != base:
            return None  # a package of the user's own under the 2018 name
        name = base + ("." + rest if rest else "")
        try:
            if importlib.util.find_spec(name) is None:
                return None
        except ModuleNotFoundError:  # a submodule of a module that is no package
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(name))

    def _find_elsewhere(self, fullname: str):
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, None)
            if spec is not None:
                return spec
        return None

    def _announce(self, folder: str) -> None:
        if folder in _announced:
            return
        _announced.add(folder)
        if _quiet_rank():
            return
        replaced = []
        for name, shown in (("neural_nets", "neural_nets/"), ("utils", "utils.py")):
            spec = self._find_elsewhere(name)
            if spec is not None and is_nord2018(name, spec) and _folder_of(name, spec) == folder:
                replaced.append(shown)
        sys.stderr.write(
            f"nord.legacy: NORD 2018's own {' and '.join(replaced)} in {folder} replaced by "
            "nord's port (their files do not run, so edits to them have no effect)\n")
        sys.stderr.flush()


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


def finder_installed() -> bool:
    """Whether the 2018 module names are importable through the hook."""
    return any(isinstance(finder, LegacyNames) for finder in sys.meta_path)


def install_finder() -> None:
    """Put the hook first in ``sys.meta_path`` (idempotent).

    First, so that ``neural_nets.layers`` resolves to the same module as
    ``nord.legacy.neural_nets.layers`` instead of loading a second copy; for the top-level
    names it asks every other finder before deciding (see the module documentation).
    """
    if not finder_installed():
        sys.meta_path.insert(0, LegacyNames())
