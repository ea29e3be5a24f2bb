"""Run configurations as TOML files: ``nord run --config run.toml`` and ``nord config RUN.db``.

A file sets :class:`~nord.app.settings.RunConfig`'s fields by name; flags given on the command
line override it::

    algorithm = "regularized_evolution"
    budget = 200
    scheduler = "asha"
    max_epochs = 27

    [algorithm_params]
    population_size = 20

``nord config RUN.db`` prints the configuration a recorded run was started with in this form,
so ``nord config a.db > a.toml && nord run --config a.toml --journal b.db`` repeats a run.
Files are read with the standard library's ``tomllib``; nothing but plain values is written.
"""
from __future__ import annotations

import difflib
import json
import math
import os
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional

from nord.errors import ConfigurationError

__all__ = ["read_config", "to_toml"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def read_config(path: str, known: Iterable[str],
                moved: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """The settings in the TOML file ``path``, whose keys must be among ``known``;
    ``moved`` maps a key that belongs in a table to where (``"table.key"``), for the message.

    Raises:
        ConfigurationError: a missing or unreadable file, bad TOML, or an unknown key (with the
            closest known one).
    """
    import tomllib

    known, moved = list(known), moved or {}
    try:
        with open(path, "rb") as handle:
            values = tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigurationError(f"the configuration file {path} does not exist") from None
    except OSError as error:
        raise ConfigurationError(
            f"the configuration file {path} cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ConfigurationError(
            f"the configuration file {path} is not UTF-8 text (byte {error.start} is "
            f"{error.object[error.start:error.start + 1]!r}): a TOML file is UTF-8; save it as "
            "UTF-8, e.g. with 'nord config RUN.db > FILE.toml'") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigurationError(f"{path} is not valid TOML: {error}") from None
    for key in values:
        if key in moved and key not in known:
            table, name = moved[key].split(".")
            raise ConfigurationError(
                f"{path}: {key!r} is a flag's name (--{key}); in a file it is {name!r} in the "
                f"[{table}] table: write '[{table}]' and below it '{name} = "
                f"{json.dumps(values[key])}'")
        if key not in known:
            close = difflib.get_close_matches(key.replace("-", "_"), known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigurationError(
                f"{path}: unknown setting {key!r}; {hint}the settings are the names of "
                f"'nord run' flags with underscores: {', '.join(known)}")
    return values


def to_toml(values: Mapping[str, Any], comment: str = "") -> str:
    """``values`` as TOML: plain settings first, then one table per dict; None is left out
    (it means "the default")."""
    lines: List[str] = [f"# {line}" if line else "#" for line in comment.splitlines()]
    if lines:
        lines.append("")
    tables = {key: value for key, value in values.items() if isinstance(value, Mapping)}
    for key, value in values.items():
        if value is not None and key not in tables:
            lines.append(f"{_key(key)} = {_value(value)}")
    for name, table in tables.items():
        _table(lines, [name], table)
    return "\n".join(lines) + "\n"


def _table(lines: List[str], path: List[str], table: Mapping[str, Any]) -> None:
    lines.append("")
    lines.append(f"[{'.'.join(_key(part) for part in path)}]")
    inner = {key: value for key, value in table.items() if isinstance(value, Mapping)}
    for key, value in table.items():
        if value is not None and key not in inner:
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in inner.items():
        _table(lines, path + [key], value)


def _key(key: Any) -> str:
    key = str(key)
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, os.PathLike):
        return json.dumps(os.fspath(value), ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()
                               if v is not None) + "}"
    raise ConfigurationError(f"cannot write {value!r} ({type(value).__name__}) as TOML")
