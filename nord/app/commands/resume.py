"""``nord resume``: continue a run with the settings its journal holds.

    nord resume runs/rea.db
    nord resume runs/rea.db --budget 200 --workers 2   # only the budget and where it runs change
"""
from __future__ import annotations

import re

from nord.app.commands.run import run_arguments

RESUME_FLAGS = ("--time-budget", "--target", "--backend", "--device", "--threads", "--workers",
                "--mps", "--max-attempts", "--checkpoint-every")
"""What a resume may change besides --budget: where and how long it runs."""

# Every other nord module is imported inside the command that needs it: `nord --help`,
# `nord list` and a refused flag must answer without loading torch, sqlite or matplotlib.


def _resume(args) -> int:
    from nord.app.runner import resume
    resume(args.journal, budget=args.budget, device=args.device, threads=args.threads,
           backend=args.backend, worker_processes=args.workers, mps=args.mps,
           max_attempts=args.max_attempts, checkpoint_every=args.checkpoint_every,
           time_budget=args.time_budget, target=args.target)
    return 0


def register(commands) -> None:
    """Add ``nord resume`` to the ``nord`` command's subcommands."""
    resume = commands.add_parser("resume", help="continue a run from its journal",
                                 description="Continue a run with the settings stored in "
                                             "its journal (only its budget and where it runs "
                                             "may change).")
    resume.add_argument("journal", help="the run's journal (.db)")
    resume.add_argument("--budget", type=int, default=None, metavar="N",
                        help="extend the run to N evaluations in all, those in the journal "
                             "included (default: its own budget)")
    for _, flag, options in run_arguments():
        if flag in RESUME_FLAGS:   # where and how long it runs
            text = re.sub(r"\s*\(default: [^()]*(\([^()]*\)[^()]*)*\)$", "", options["help"])
            resume.add_argument(flag, **{**options, "help": f"{text} (default: the journal's)"})
    resume.set_defaults(handler=_resume)
