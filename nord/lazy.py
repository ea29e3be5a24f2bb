"""Names a package face hands out on first use, so that importing it stays light.

    __getattr__, __dir__ = lazy_exports(__name__, {"LocalEvaluator": "nord.evaluators.local"},
                                        __all__)
"""
from __future__ import annotations

import importlib
import sys
from typing import Callable, List, Mapping, Sequence, Tuple

__all__ = ["lazy_exports"]


def lazy_exports(package: str, lazy: Mapping[str, str], names: Sequence[str]
                 ) -> Tuple[Callable[[str], object], Callable[[], List[str]]]:
    """A module ``__getattr__`` that imports ``lazy[name]`` and returns its ``name`` (kept in
    the package afterwards), and a ``__dir__`` that lists ``names``."""

    def __getattr__(name: str) -> object:
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> List[str]:
        return sorted(names)

    return __getattr__, __dir__
