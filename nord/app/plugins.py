"""Your own algorithms, spaces, data sets and schedulers on the command line: plug-in modules.

    nord run --plugin mypackage.nas --algorithm my_algorithm ...   # or plugins = [...] in TOML

A plug-in module registers its parts when imported (``register_algorithm(name, cls)`` and the
like). Modules named with ``--plugin`` are recorded in the run's configuration, so that
``nord resume`` and ``nord config`` import the same code. Installed packages declare theirs as
entry points instead (the registries' groups: ``nord.algorithms``, ``nord.spaces``, ...; see
docs/registry.md), found without a flag.
"""
from __future__ import annotations

import importlib
import logging
from typing import Sequence

from nord.errors import ConfigurationError

__all__ = ["load_modules"]

logger = logging.getLogger(__name__)

_loaded: set = set()


def load_modules(modules: Sequence[str]) -> None:
    """Import each module of ``modules`` (``--plugin``): it registers what it defines.

    Raises:
        ConfigurationError: a module that cannot be imported, with the reason.
    """
    for module in modules:
        if module in _loaded:
            continue
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ConfigurationError(
                f"cannot import the plug-in module {module!r} (--plugin, plugins=): {error}; "
                "give a module Python can import here (on PYTHONPATH, or installed with "
                "pip)") from error
        except Exception as error:  # noqa: BLE001 - any failure of foreign code is named
            raise ConfigurationError(
                f"the plug-in module {module!r} (--plugin, plugins=) failed while importing: "
                f"{type(error).__name__}: {error}") from error
        _loaded.add(module)
        logger.debug("plug-in module %s imported", module)
