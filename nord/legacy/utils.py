"""The 2018 ``utils`` module: file loggers, constructor inspection, random layer parameters.

    from utils import get_logger            # after `import nord.legacy`
    log = get_logger('Local')               # appends ./Local.log
    log.info('0;[3. 7.];-0.12')             # 2018-08-12 10:00:00;Local;INFO;0;[3. 7.];-0.12
"""
from __future__ import annotations

import inspect
import sys
import time
from typing import List, Optional

import numpy as np

from nord.legacy.logs import LOG_DATE_FORMAT, LOG_FORMAT, get_logger
from nord.legacy.neural_nets import layers

__all__ = ["get_logger", "get_convolution_out_size", "extract_params", "print_all_parameters",
           "get_random_value", "generate_layer_parameters", "progress_bar", "format_time",
           "LOG_FORMAT", "LOG_DATE_FORMAT"]

def get_convolution_out_size(in_size, filter_size, padding=0, stride=1) -> float:
    """Output length of a convolution along one dimension (a float, as in 2018)."""
    return (in_size - filter_size + 2 * padding) / stride + 1


def extract_params(object_class, non_empty_only: bool = False) -> List[str]:
    """Names of a class's constructor parameters (``self`` left out).

    Args:
        object_class: the class, e.g. ``torch.nn.Conv2d``.
        non_empty_only: only the parameters without a default value.
    """
    names = []
    for name, parameter in inspect.signature(object_class.__init__).parameters.items():
        if name == "self" or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if non_empty_only and parameter.default is not parameter.empty:
            continue
        names.append(name)
    return names


def print_all_parameters(layer_type) -> None:
    """Print the set of constructor parameter names of a list of layer classes."""
    names = set()
    for layer in layer_type:
        names.update(extract_params(layer))
    print(names)


def get_random_value(in_type):
    """A random int in [0, 64), float in [0, 1) or bool, from numpy's global generator."""
    if in_type is int:
        return np.random.randint(64)
    if in_type is float:
        return np.random.rand()
    if in_type is bool:
        return np.random.rand() > 0.5
    return None


def generate_layer_parameters(layer, mandatory_only: bool = True):
    """Random values for a layer class's constructor parameters.

    Parameters whose type the 2018 tables do not know (those torch added since, such as
    ``device``) are left out.

    Returns:
        ``(names, values)``, two lists in the constructor's order.
    """
    group = layers.find_layer_type(layer)
    types = layers.parameters.get(group, {})
    names, values = [], []
    for name in extract_params(layer, mandatory_only):
        kind = types.get(name)
        if kind in (int, float, bool):
            names.append(name)
            values.append(get_random_value(kind))
    return names, values


_BAR_WIDTH = 40
_bar_started = time.time()
_bar_last = _bar_started


def progress_bar(current: int, total: int, msg: Optional[str] = None) -> None:
    """Write a one-line progress bar for step ``current`` (from 0) of ``total`` to stdout."""
    global _bar_started, _bar_last
    now = time.time()
    if current == 0:
        _bar_started = _bar_last = now
    done = int(_BAR_WIDTH * (current + 1) / max(total, 1))
    line = (f" [{'=' * done}{'.' * (_BAR_WIDTH - done)}] {current + 1}/{total}"
            f"  step {format_time(now - _bar_last)} | total {format_time(now - _bar_started)}")
    if msg:
        line += " | " + msg
    _bar_last = now
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def format_time(seconds: float) -> str:
    """A short duration such as '1h5m', '3s120ms' or '0ms': its two largest non-zero units."""
    millis = int(round(max(seconds, 0.0) * 1000))
    units = (("D", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1))
    parts = []
    for suffix, size in units:
        count, millis = divmod(millis, size)
        if count and len(parts) < 2:
            parts.append(f"{count}{suffix}")
    return "".join(parts) or "0ms"
