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
from typing import Iterable, List, Optional

from nord.app.commands import (compare, config, export, layers, listing, report, resume, run,
                               serve)
from nord.checks import nearest
from nord.errors import NordError, RunInterrupted
from nord.version import __version__

# Every other nord module is imported inside the command that needs it: `nord --help`,
# `nord list` and a refused flag must answer without loading torch, sqlite or matplotlib.

DESCRIPTION = "nord: neural architecture search, from a laptop to an MPI or SLURM cluster."


def _guess(word: str, known: Iterable[str]) -> str:
    guess = nearest(word, known)
    return f" (did you mean {guess}?)" if guess is not None else ""


class CommandParser(argparse.ArgumentParser):
    """argparse's parser, refusing in one line: what was wrong, the nearest valid word, and
    where the rest is (``--help``), instead of the usage of every flag."""

    def error(self, message: str):
        refuse(f"{self.prog}: {message}; see '{self.prog} --help'")

    def _check_value(self, action, value):
        if action.choices is None or value in action.choices:
            return
        if isinstance(action, argparse._SubParsersAction):
            raise argparse.ArgumentError(
                None, f"unknown command {value!r}{_guess(value, action.choices)}; the commands "
                      f"are {', '.join(action.choices)}")
        raise argparse.ArgumentError(
            None, f"{'/'.join(action.option_strings) or action.dest} takes one of "
                  f"{', '.join(map(str, action.choices))}; got {value!r}"
                  f"{_guess(str(value), map(str, action.choices))}")


def refuse(line: str) -> None:
    """Exit with status 2 saying ``line``: under mpirun, where every rank refuses alike, rank 0
    alone says it (the others wait first, so that mpirun does not end the job before it has)."""
    from nord.parallel import launcher_rank
    if (launcher_rank() or 0) != 0:
        time.sleep(QUIET_RANKS_WAIT)
    else:
        print(line, file=sys.stderr)
    sys.exit(2)


def build_parser() -> argparse.ArgumentParser:

    parser = CommandParser(
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


def chosen(parser: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``args`` were parsed for: ``nord data download``'s,
    not ``nord``'s."""
    while True:
        commands = next((action for action in parser._actions
                         if isinstance(action, argparse._SubParsersAction)), None)
        if commands is None or getattr(args, commands.dest, None) not in commands.choices:
            return parser
        parser = commands.choices[getattr(args, commands.dest)]


def refuse_unknown(parser, args, unknown: List[str]) -> None:
    """Words the command does not take, refused in one line in the command's words (argparse
    would answer with the usage of ``nord`` itself), each flag with the nearest one the
    command has; for ``nord resume``, a ``nord run`` setting of what the run measures, which
    a resume keeps."""
    command = getattr(args, "command", None)
    refuser = chosen(parser, args)
    flags = [word.split("=")[0] for word in unknown if word.startswith("-")]
    if command == "resume":
        from nord.app.commands.resume import RESUME_FLAGS
        from nord.app.commands.run import run_arguments
        run_flags = {"--config", *(flag for _, flag, _ in run_arguments())}
        settings = [flag for flag in flags if flag in run_flags]
        if settings:
            refuse(f"nord resume: {', '.join(settings)} cannot change on resume: the run keeps "
                   "the settings its journal holds, so that one journal never mixes results "
                   f"measured differently; a resume may change only --budget, "
                   f"{', '.join(RESUME_FLAGS)}. To run with other settings, start a new run "
                   f"from these: nord config {args.journal} > run.toml, edit it, then nord "
                   "run --config run.toml --journal NEW.db")
    if not flags:
        refuser.error(f"unexpected argument{'s' if len(unknown) > 1 else ''} "
                      f"{' '.join(unknown)}")
    known = [option for action in refuser._actions for option in action.option_strings]
    refuser.error(f"unknown flag{'s' if len(flags) > 1 else ''} " + ", ".join(
        flag + _guess(flag, known) for flag in flags))


if __name__ == "__main__":
    sys.exit(main())
