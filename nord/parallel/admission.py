"""Admission by memory: whether one more candidate may start on a GPU that others share.

Several worker processes train on one GPU (``nord run --workers N``); each candidate's memory
is estimated before it is built (``nord.nn.memory``), and it starts only where the estimates
of those already running leave room for it::

    admits(need=3 * GB, running=[2 * GB, 4 * GB], capacity=10 * GB)     # True: 9 <= 9
    admits(need=3 * GB, running=[2 * GB, 5 * GB], capacity=10 * GB)     # False: it waits

A candidate that is alone on its GPU is always admitted: whether it fits at all is the
evaluator's own check (a candidate too large for the device is a failed result), and a rule
that kept it waiting for room that never comes would stall the run. Pure functions, tested
without a GPU.
"""
from __future__ import annotations

from typing import Optional, Sequence

from nord.errors import ConfigurationError

__all__ = ["HEADROOM", "admits", "check_headroom"]

HEADROOM = 0.1
"""The share of a GPU's free memory kept out of the estimates: the caching allocator's
fragmentation and cuDNN's workspaces, which the meta-device estimate does not count."""


def check_headroom(headroom: float) -> float:
    """``headroom`` as a float in [0, 1), or a ConfigurationError."""
    if isinstance(headroom, bool) or not isinstance(headroom, (int, float)) \
            or not 0 <= headroom < 1:
        raise ConfigurationError(
            f"headroom is the share of a GPU's memory kept free, in [0, 1); got {headroom!r}")
    return float(headroom)


def admits(need: Optional[int], running: Sequence[Optional[int]], capacity: Optional[int],
           headroom: float = HEADROOM) -> bool:
    """Whether a candidate needing ``need`` bytes may start beside ``running``.

    Args:
        need: its estimate in bytes (None: unknown, so nothing is held back for it).
        running: the estimates of the candidates running on the same device (None counts
            as 0: an estimate that failed is not a reason to stall others).
        capacity: the device's free memory when the workers started (None: not measured,
            as on the CPU: no limit but the number of workers).
        headroom: the share of ``capacity`` never handed out.
    """
    if not running or need is None or capacity is None:
        return True
    budget = capacity * (1.0 - headroom)
    return sum(size or 0 for size in running) + need <= budget
