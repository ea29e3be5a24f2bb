"""``nord report``: plots and a summary page comparing runs, and the warnings they carry.

    nord report runs/rea.db runs/async.db --out reports/
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from nord.app.commands.flags import check_output

# Every other nord module is imported inside the command that needs it: `nord --help`,
# `nord list` and a refused flag must answer without loading torch, sqlite or matplotlib.


def _report(args) -> int:
    from nord.report import write_report
    check_output(args.out, "--out", folder=True)
    skipped = []
    page = write_report(args.journals, args.out, title=args.title, fmt=args.format,
                        pareto=True if args.pareto else None, best_count=args.best,
                        skipped=skipped)
    for path, reason in skipped:
        print(f"skipped {path}: {reason}", file=sys.stderr)
    summary = Path(args.out) / "summary.json"
    if summary.is_file():
        biased = json.loads(summary.read_text()).get("selected_on_test") or []
        for label in biased:
            print(f"warning: {label} selected its architectures on TEST data: its best test "
                  "accuracy is optimistically biased (the report says so at the top)",
                  file=sys.stderr)
        unlike = json.loads(summary.read_text()).get("unlike") or {}
        if unlike:
            print("warning: these runs measure different things, so their accuracies do not "
                  "compare (the report says so at the top): " + "; ".join(
                      f"{', '.join(labels)}: {what}" for what, labels in unlike.items()),
                  file=sys.stderr)
    print(f"report written: {page}")
    return 0


def register(commands) -> None:
    """Add ``nord report`` to the ``nord`` command's subcommands."""
    report = commands.add_parser(
        "report", help="plots and a summary page comparing runs",
        description="Write plots and a page comparing the runs of the journals given (or of "
                    "the folders given) into --out: report.md with PNG files beside it, or one "
                    "report.html (--format), and summary.json; warnings at the top name runs "
                    "that selected on test data, or that measure different things.")
    report.add_argument("journals", nargs="+", help="run journals, or folders of them")
    report.add_argument("--out", required=True, metavar="DIR", help="folder for the report")
    report.add_argument("--title", default=None,
                        help="the page's title (default: 'Comparison of N runs')")
    report.add_argument("--format", default="markdown", choices=["markdown", "html"],
                        help="report.md with PNG files beside it, or one self-contained "
                             "report.html")
    report.add_argument("--pareto", action="store_true", help="Pareto front for every run")
    report.add_argument("--best", type=int, default=3, metavar="N",
                        help="best architectures drawn per run")
    report.set_defaults(handler=_report)
