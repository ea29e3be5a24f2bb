"""Checks of plain arguments, shared so that every message reads the same way.

    from nord.checks import check_instance, check_int
    budget = check_int(budget, "budget (evaluations per run)", minimum=1)
    space = check_instance(space, "space", SearchSpace, "a SearchSpace such as ConvSpace(...)")
"""
from __future__ import annotations

import difflib
import math
import numbers
import re
from typing import Any, Iterable, Optional, Sequence, Tuple, Union

from nord.errors import ConfigurationError

__all__ = ["check_int", "check_valid_fraction", "check_device", "check_instance", "check_bool",
           "check_number", "check_seed", "check_choice", "nearest", "given"]


def nearest(word: str, known: Iterable[str]) -> Optional[str]:
    """The name in ``known`` closest to a mistyped ``word`` (``_`` and ``-`` alike), or None
    when none is close."""
    spelled = {name.replace("_", "-").lower(): name for name in known}
    match = difflib.get_close_matches(str(word).replace("_", "-").lower(), spelled, n=1,
                                      cutoff=0.6)
    return spelled[match[0]] if match else None


def check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """``value`` when it is one of ``choices``; else a ConfigurationError that lists them and
    names the nearest one."""
    if isinstance(value, str) and value in choices:
        return value
    guess = nearest(value, choices) if isinstance(value, str) else None
    hint = f" (did you mean {guess!r}?)" if guess is not None else ""
    raise ConfigurationError(
        f"{name} must be one of {', '.join(choices)}; got {value!r}{hint}")


def check_int(value: Any, name: str, minimum: Optional[int] = None,
              maximum: Optional[int] = None, rule: Optional[str] = None) -> int:
    """``value`` as an int, when it is an integer (not a bool) in ``[minimum, maximum]``.

    Args:
        value: what was given.
        name: what it is, for the message: ``'budget (evaluations per run)'``.
        minimum: the least value accepted (None: no bound).
        maximum: the greatest value accepted (None: no bound).
        rule: the rule in words, where the bounds alone would not say why (by default
            'an integer >= minimum' or 'an integer in [minimum, maximum]').

    Raises:
        ConfigurationError: naming ``name``, the rule and the value given.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        given = repr(value)
    elif (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        given = str(value)
    else:
        return int(value)
    if rule is None and minimum is not None and maximum is not None:
        rule = f"an integer in [{minimum}, {maximum}]"
    elif rule is None:
        rule = ("an integer" + (f" >= {minimum}" if minimum is not None else "")
                + (f" <= {maximum}" if maximum is not None else ""))
    raise ConfigurationError(f"{name} must be {rule}; got {given}")


def given(value: Any) -> str:
    """What was given, for a message: a value as its type and repr (cut at 80 characters),
    a class as a class (the usual slip is a class where an instance of it goes)."""
    if isinstance(value, type):
        return f"the class {value.__qualname__} itself (not an instance of it)"
    return f"{type(value).__name__}: {value!r:.80}"


def check_instance(value: Any, name: str, types: Union[type, Tuple[type, ...]], takes: str,
                   none: bool = False) -> Any:
    """``value`` when it is an instance of ``types`` (or None, where ``none`` allows it).

    Args:
        value: what was given.
        name: the parameter, for the message: ``'evaluator'``.
        types: the class (or classes) it must be an instance of.
        takes: what the parameter takes, in words, with an example:
            ``'an Evaluator such as LocalEvaluator(epochs=2)'``.
        none: whether None is accepted.

    Raises:
        ConfigurationError: naming ``name``, what it takes and what was given; a class given
            where its instance goes is told to make one.
    """
    if isinstance(value, types) or (none and value is None):
        return value
    fix = ""
    if isinstance(value, type) and issubclass(value, types):
        fix = f"; make one first: {value.__qualname__}(...)"
    raise ConfigurationError(f"{name} takes {takes}{' or None' if none else ''}; got "
                             f"{given(value)}{fix}")


def check_bool(value: Any, name: str) -> bool:
    """``value`` when it is True or False (not 1, 'no' or None, which read ambiguously).

    Raises:
        ConfigurationError: naming ``name`` and what was given.
    """
    if not isinstance(value, bool):
        raise ConfigurationError(f"{name} takes True or False; got {given(value)}")
    return value


def check_number(value: Any, name: str, rule: str, low: float = -math.inf,
                 high: float = math.inf, low_open: bool = False) -> float:
    """``value`` as a float when it is a real number (not a bool) in ``[low, high]``
    (``(low, high]`` when ``low_open``).

    Args:
        rule: the rule in words, with an example: ``'a number in (0, 1], e.g. 0.5'``.

    Raises:
        ConfigurationError: naming ``name``, the rule and what was given.
    """
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value) or not (low < value if low_open else low <= value)
            or not value <= high):
        shown = value if isinstance(value, numbers.Real) and not isinstance(value, bool) else (
            given(value))
        raise ConfigurationError(f"{name} must be {rule}; got {shown}")
    return float(value)


def check_seed(seed: Any, name: str = "seed", none: bool = True) -> Optional[int]:
    """``seed`` as an int in [0, :data:`MAX_SEED`] (or None where ``none`` allows it:
    fresh entropy).

    Raises:
        ConfigurationError: naming ``name``, the rule and what was given.
    """
    if seed is None and none:
        return None
    return check_int(seed, name, 0, MAX_SEED,
                     rule=f"an integer in [0, {MAX_SEED}]{' or None' if none else ''} (numpy "
                          "and scikit-learn take 32-bit seeds)")


def check_valid_fraction(fraction: Any) -> float:
    """``fraction`` as a float in [0, 1): the share of a training split held out for
    validation.

    Raises:
        ConfigurationError: another value, with what 0 means.
    """
    if (isinstance(fraction, bool) or not isinstance(fraction, numbers.Real)
            or not 0 <= fraction < 1):
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


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def check_duration(text: Any, what: str = "--time-budget") -> float:
    """Seconds from ``'90s'``, ``'30m'``, ``'8h'``, ``'1.5d'`` or a plain number of seconds.

    Raises:
        ConfigurationError: anything else, naming ``what`` and the forms it takes.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        seconds = float(text)
    else:
        raw = str(text).strip().lower()
        unit = _UNITS.get(raw[-1:]) if raw else None
        number = raw[:-1] if unit is not None else raw
        try:
            seconds = float(number) * (unit or 1.0)
        except ValueError:
            seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ConfigurationError(
            f"{what} takes a positive duration such as 90s, 30m, 8h or 1.5d (a plain number "
            f"is seconds); got {text!r}")
    return seconds


MAX_BUDGET = 2 ** 63 - 1
"""The largest evaluation budget: the journal stores counts as 64-bit integers."""
MAX_SEED = 2 ** 32 - 1
"""The largest seed a run takes (numpy's RandomState, which scikit-learn uses, takes 32 bits)."""
MAX_SEEDS = 100_000
"""The most seeds one comparison runs per algorithm: far more than any published table, few
enough that a mistyped count (--seeds for --seed) is refused instead of filling the memory."""


def check_seeds(seeds: Any, base_seed: Any) -> Tuple[int, int]:
    """A comparison's seed count and first seed, ``(seeds, base_seed)``: at most
    :data:`MAX_SEEDS` runs per algorithm, seeded ``base_seed .. base_seed + seeds - 1``,
    each a seed ``nord run`` takes.

    Raises:
        ConfigurationError: naming the flag, the rule and the value given.
    """
    seeds = check_int(seeds, "--seeds", 1, MAX_SEEDS,
                      rule=f"an integer from 1 to {MAX_SEEDS:,} (seeds=, runs per algorithm; "
                           "to start at another seed, give --base-seed (base_seed=))")
    last = MAX_SEED - seeds + 1
    base_seed = check_int(base_seed, "--base-seed", 0, last,
                          rule=f"an integer from 0 to {last:,} (base_seed=): the seeds "
                               f"base_seed .. base_seed + {seeds - 1} must each be at most "
                               f"{MAX_SEED:,}, as nord run's --seed")
    return seeds, base_seed
