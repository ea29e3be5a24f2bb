"""Your own algorithms, spaces, data sets and schedulers on the command line: plug-in modules.

    nord run --plugin mypackage.nas --algorithm my_algorithm ...   # or plugins = [...] in TOML
    nord run --plugin ./mynas.py --algorithm my_algorithm ...      # a file: recorded by its path

A plug-in module registers its parts when imported (``register_algorithm(name, cls)`` and the
like). Modules named with ``--plugin`` are recorded in the run's configuration, so that
``nord resume`` and ``nord config`` import the same code. Installed packages declare theirs as
entry points instead (the registries' groups: ``nord.algorithms``, ``nord.spaces``, ...; see
docs/registry.md), found without a flag.
"""
from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
from typing import Sequence

from nord.errors import ConfigurationError

__all__ = ["load_modules", "is_file", "recorded"]

logger = logging.getLogger(__name__)

_loaded: set = set()


def is_file(plugin: str) -> bool:
    """Whether ``--plugin`` names a Python file (``./mynas.py``) rather than a module."""
    return plugin.endswith(".py") or os.sep in plugin


def recorded(plugin: str) -> str:
    """A plug-in as a run records it: a file by its absolute path (a resume from another
    folder imports the same file), a module by its name."""
    return os.path.abspath(os.path.expanduser(plugin)) if is_file(plugin) else plugin


def _import_file(path: str) -> None:
    """Import the Python file ``path`` as a module named after it."""
    if not os.path.isfile(path):
        raise ImportError(f"there is no file {path}")
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise


def load_modules(modules: Sequence[str]) -> None:
    """Import each module of ``modules`` (``--plugin``): it registers what it defines.

    Raises:
        ConfigurationError: a module that cannot be imported, with the reason.
    """
    for module in modules:
        if module in _loaded:
            continue
        try:
            if is_file(module):
                _import_file(module)
            else:
                importlib.import_module(module)
        except ImportError as error:
            raise ConfigurationError(
                f"cannot import the plug-in module {module!r} (--plugin, plugins=): {error}; "
                "give a module Python can import here (on PYTHONPATH, or installed with "
                "pip), or the path of a Python file (./mynas.py)") from error
        except Exception as error:  # noqa: BLE001 - any failure of foreign code is named
            raise ConfigurationError(
                f"the plug-in module {module!r} (--plugin, plugins=) failed while importing: "
                f"{type(error).__name__}: {error}") from error
        _loaded.add(module)
        logger.debug("plug-in module %s imported", module)
