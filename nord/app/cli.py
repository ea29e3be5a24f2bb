"""The nord command: run and resume searches, report, list and export runs, compare algorithms.

    nord run --algorithm regularized_evolution --budget 50 --journal runs/rea.db
    nord run --config run.toml --journal runs/b.db        # flags override the file
    nord config runs/rea.db > run.toml                      # a recorded run's settings
    mpirun -np 3 nord run --evaluation distributed --mode async --journal runs/async.db
    nord resume runs/rea.db
    nord export runs/rea.db backup/rea.db          # a consistent copy, also of a live run
    nord report runs/rea.db runs/async.db --out reports/
    nord list runs/
    nord compare --benchmark nasbench201 --dataset cifar10 --algorithms random,rea \\
        --budget 100 --seeds 500 --json compare.json
    nord compare --workers 8 --mode async --seeds 100 --report out/   # in simulated time
    nord data download cifar10 --root data          # resumable, checked, read once

Argument parsing lives here, in nord/app/commands/ (one module a command) and in experiments/;
everything else takes plain arguments.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import List, Optional

from nord.app.commands import (compare, config, export, layers, listing, report, resume, run,
                               serve)
from nord.errors import NordError, RunInterrupted
from nord.version import __version__

# Every other nord module is imported inside the command that needs it: `nord --help`,
# `nord list` and a refused flag must answer without loading torch, sqlite or matplotlib.

DESCRIPTION = "nord: neural architecture search, from a laptop to an MPI or SLURM cluster."


def build_parser() -> argparse.ArgumentParser:

    parser = argparse.ArgumentParser(
        prog="nord", description=DESCRIPTION,
        epilog="'nord COMMAND --help' explains a command and its flags.")
    parser.add_argument("--version", action="version", version=f"nord {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for command in (run, resume, config, report, listing, export, compare, layers, serve):
        command.register(commands)

    from nord.app.data_commands import register as register_data
    register_data(commands)
    _say_defaults(parser)
    return parser


def _say_defaults(parser: argparse.ArgumentParser) -> None:
    """End every flag's help with its default, where it has one and does not say it yet."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                _say_defaults(subparser)
            continue
        default = action.default
        if (not action.option_strings or action.help in (None, argparse.SUPPRESS)
                or default in (None, False, argparse.SUPPRESS) or "default" in action.help):
            continue
        shown = ",".join(map(str, default)) if isinstance(default, list) else default
        action.help = f"{action.help} (default: {shown})"


BROKEN_PIPE = 128 + 13
"""The exit status of a command whose reader went away (as a shell reports SIGPIPE)."""


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush of what the closed pipe
    did not take writes nothing (and no second BrokenPipeError at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):   # no file descriptor (stdout replaced, e.g. in tests)
        pass


QUIET_RANKS_WAIT = 2.0
"""Seconds a rank that does not speak waits before it exits with a refusal every rank shares."""


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        refuse_unknown(parser, args, unknown)
    if args.verbose:
        import logging
        logging.getLogger("nord").setLevel(logging.DEBUG)
    from nord.parallel import launcher_rank
    speak = (launcher_rank() or 0) == 0   # under mpirun every rank fails alike: one says why
    try:
        return args.handler(args)
    except RunInterrupted as stop:
        if speak and args.command == "compare":   # a run says itself how to resume
            print(f"nord compare: interrupted by {stop.signal_name}; nothing was printed or "
                  "saved (runs are not journaled: run the command again)", file=sys.stderr)
        return stop.exit_code
    except KeyboardInterrupt:   # a command that writes no run (report, list, config)
        if speak:
            print(f"nord {args.command}: interrupted", file=sys.stderr)
        return 130
    except NordError as error:
        if speak:
            print(f"nord {args.command}: {error}", file=sys.stderr)
        else:   # the others fail alike; the first to exit makes mpirun end the job, rank 0 too
            time.sleep(QUIET_RANKS_WAIT)   # so rank 0 says why before they do
        return 2
    except BrokenPipeError:   # `nord list | head`: the reader has what it wanted
        _silence_stdout()
        return BROKEN_PIPE
    except OSError as error:  # a journal or report path that cannot be written
        if speak:
            print(f"nord {args.command}: {error.strerror or error}: {error.filename or ''}; "
                  "choose a path in a folder you can write", file=sys.stderr)
        return 2


def refuse_unknown(parser, args, unknown: List[str]) -> None:
    """Flags the command does not take, refused in the command's words (argparse would answer
    with the usage of ``nord`` itself); for ``nord resume``, a setting of what the run
    measures, which a resume keeps."""
    command = getattr(args, "command", None)
    if command == "resume":
        from nord.app.commands.resume import RESUME_FLAGS
        flags = [word.split("=")[0] for word in unknown if word.startswith("--")]
        parser.exit(2, (
            f"nord resume: {', '.join(flags or unknown)} cannot change on resume: the run keeps "
            "the settings its journal holds, so that one journal never mixes results measured "
            f"differently; a resume may change only --budget, {', '.join(RESUME_FLAGS)}. To "
            f"run with other settings, start a new run from these: nord config "
            f"{args.journal} > run.toml, edit it, then nord run --config run.toml --journal "
            "NEW.db\n"))
    subcommands = next((action.choices for action in parser._actions
                        if isinstance(action, argparse._SubParsersAction)), {})
    (subcommands.get(command) or parser).error(f"unrecognized arguments: {' '.join(unknown)}")


if __name__ == "__main__":
    sys.exit(main())
