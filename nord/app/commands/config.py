"""``nord config``: a recorded run's settings, as TOML for ``nord run --config``.

    nord config runs/rea.db > run.toml
"""
from __future__ import annotations

import sys

from nord.errors import ConfigurationError

# Every other nord module is imported inside the command that needs it: `nord --help`,
# `nord list` and a refused flag must answer without loading torch, sqlite or matplotlib.


def _config(args) -> int:
    from dataclasses import asdict

    from nord.app.config_file import to_toml
    from nord.app.runner import recorded_config, stored_config
    try:
        values = asdict(stored_config(args.journal))
    except ConfigurationError as error:   # its code cannot be loaded: the settings as recorded
        values = recorded_config(args.journal)
        print(f"nord config: note: {error}; the settings are printed as recorded",
              file=sys.stderr)
    values.pop("journal", None)
    sys.stdout.write(to_toml(values, comment=(
        f"the configuration of the run in {args.journal}\n"
        "repeat it with: nord run --config THIS.toml --journal NEW.db")))
    return 0


def register(commands) -> None:
    """Add ``nord config`` to the ``nord`` command's subcommands."""
    config = commands.add_parser(
        "config", help="print a recorded run's settings as TOML",
        description="Print the settings a run was started with, as TOML for "
                    "'nord run --config': nord config a.db > a.toml && "
                    "nord run --config a.toml --journal b.db")
    config.add_argument("journal", help="the run's journal (.db)")
    config.set_defaults(handler=_config)
