"""Plain JSON for what nord stores and reports: one conversion, used by journals, reports and
comparison files alike.

    from nord.jsonable import dumps, plain
    plain({"a": np.float32(0.5), "b": (1, 2), "c": float("nan")})   # {'a': 0.5, 'b': [1, 2], 'c': None}
    dumps(value)                      # strict JSON text: no NaN, keys sorted

NaN and infinities become ``null`` (JSON has neither); numpy scalars and arrays become Python
numbers and lists; tuples and sets become lists; paths become strings; anything else its
``str``.
"""
from __future__ import annotations

import json
import math
from pathlib import PurePath
from typing import Any

__all__ = ["plain", "dumps"]


def plain(value: Any) -> Any:
    """``value`` as plain JSON-compatible Python (see the module docstring)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return [plain(item) for item in sorted(value, key=repr)]
    if isinstance(value, PurePath):
        return str(value)
    if hasattr(value, "tolist"):          # numpy arrays and scalars
        return plain(value.tolist())
    if hasattr(value, "item"):
        return plain(value.item())
    return str(value)


def dumps(value: Any, indent: Any = None, sort_keys: bool = True) -> str:
    """Strict JSON text of ``plain(value)``."""
    return json.dumps(plain(value), indent=indent, sort_keys=sort_keys, allow_nan=False)
