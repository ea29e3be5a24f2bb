"""Checks of plain arguments, shared so that every message reads the same way.

    from nord.checks import check_int
    budget = check_int(budget, "budget (evaluations per run)", minimum=1)
"""
from __future__ import annotations

import numbers
import re
from typing import Any, Optional

from nord.errors import ConfigurationError

__all__ = ["check_int", "check_valid_fraction", "check_device"]


def check_int(value: Any, name: str, minimum: Optional[int] = None) -> int:
    """``value`` as an int, when it is an integer (not a bool) of at least ``minimum``.

    Raises:
        ConfigurationError: naming ``name``, the rule and the value given.
    """
    rule = f"an integer >= {minimum}" if minimum is not None else "an integer"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigurationError(f"{name} must be {rule}; got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigurationError(f"{name} must be {rule}; got {value}")
    return int(value)


def check_valid_fraction(fraction: Any) -> float:
    """``fraction`` as a float in [0, 1): the share of a training split held out for
    validation.

    Raises:
        ConfigurationError: another value, with what 0 means.
    """
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) \
            or not 0 <= fraction < 1:
        raise ConfigurationError(
            f"valid_fraction (the share of the training split held out for validation) must be "
            f"a number in [0, 1), e.g. 0.1; got {fraction!r}. 0 selects on test data (not advised)")
    return float(fraction)


_DEVICE = re.compile(r"auto|cpu|cuda(:[0-9]+)?")


def check_device(device: Any) -> str:
    """``device`` when it is 'auto', 'cpu', 'cuda' or 'cuda:N' (any case), checked without
    torch: whether this machine has that GPU is known only where the device is used.

    Raises:
        ConfigurationError: a malformed name, naming the forms accepted.
    """
    if not isinstance(device, str) or not _DEVICE.fullmatch(device.lower()):
        raise ConfigurationError(
            f"unknown device {device!r}; use 'auto', 'cpu', 'cuda' or 'cuda:N' (N: the GPU's "
            "index, 0, 1, ...)")
    return device
