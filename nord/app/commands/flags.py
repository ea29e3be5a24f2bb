"""Flag values that several commands read: a JSON object, a path to write to.

    params = json_dict(args.params, "--params")         # {} when not given
    check_output(args.out, "--out", folder=True)         # refused before any work
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

from nord.errors import ConfigurationError


def json_dict(text: Optional[str], flag: str) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigurationError(f"{flag} must be a JSON object such as '{{\"layers\": 3}}'; "
                                 f"{text!r} does not parse: {error}") from error
    if not isinstance(value, dict):
        raise ConfigurationError(f"{flag} must be a JSON object (keyword arguments); got {text!r}")
    return value


def check_output(path: Optional[str], flag: str, folder: bool) -> None:
    """Refuse, before any work, an output path that cannot be written when the work is done."""
    if path is None:
        return
    target = Path(path)
    if folder and target.exists() and not target.is_dir():
        raise ConfigurationError(
            f"{flag} {path} names a folder to write into, but {path} is a file; give a folder "
            "path (it is created if missing)")
    if not folder and target.is_dir():
        raise ConfigurationError(
            f"{flag} {path} names a file to write, but {path} is a folder; give a file path, "
            f"e.g. {target / 'compare.json'}")
    if not folder and target.exists():
        if os.access(target, os.W_OK):
            return
        raise ConfigurationError(f"{flag} {path} cannot be written (no permission); choose "
                                 "another path")
    if not folder and not target.parent.exists():
        raise ConfigurationError(
            f"{flag} {path}: the folder {target.parent} does not exist; create it first "
            f"(mkdir -p {target.parent}), or choose a path in an existing folder")
    existing = next(parent for parent in (target, *target.parents) if parent.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigurationError(
            f"{flag} {path} cannot be written: {existing} is not a folder you can write; "
            "choose a path in one")
