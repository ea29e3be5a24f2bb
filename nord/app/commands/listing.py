"""``nord list``: the runs journaled in files or folders, one line each.

    nord list runs/
"""
from __future__ import annotations

import datetime
import os
import sys

# Every other nord module is imported inside the command that needs it: `nord --help`,
# `nord list` and a refused flag must answer without loading torch, sqlite or matplotlib.


def _list(args) -> int:
    from nord.app.search_progress import resumed_line
    from nord.journal import list_runs
    from nord.journal.listing import in_legs
    from nord.report.protocol import protocol_of
    runs, skipped = list_runs(args.paths)
    named = {os.path.realpath(path) for path in args.paths if os.path.isfile(path)}
    status = 0
    for path, reason in skipped:   # a file named on its own that is no journal is an error
        if os.path.realpath(path) in named:
            status = 2
            print(f"nord list: {reason}", file=sys.stderr)
        else:
            print(f"skipped {path}: {reason}", file=sys.stderr)
    if not runs:
        if not status:
            print(f"no run journals in {', '.join(args.paths)}")
        return status
    width = max(len("journal"), *(len(str(run["path"])) for run in runs))
    print(f"{'journal':{width}s} {'algorithm':22s} {'state':11s} {'evals':>9s} {'failed':>6s} "
          f"{'best':>7s}  created")
    for run in runs:
        created = datetime.datetime.fromtimestamp(run["created"]).strftime("%Y-%m-%d %H:%M")
        best = run["best_accuracy"]
        best = None if best is None or best != best else best  # no successful evaluation yet
        print(f"{str(run['path']):{width}s} {run['algorithm']:22s} {run['state']:11s} "
              f"{run['evaluations']:>4d}/{run['budget'] or '?':<4} {run['failed']:>6d} "
              f"{'-' if best is None else format(best, '.4f'):>7s}  {created}")
        if run.get("search_epochs_done"):
            planned = (run.get("evaluator") or {}).get("search_epochs") or "?"
            latest = "final" if run["state"] == "finished" else "latest"
            print(f"  weight-sharing search: {run['search_epochs_done']} of {planned} search "
                  f"epochs; its {latest} cell {run['latest_cell']}")
        if protocol_of(run).scores and best is not None:
            proxy = (run.get("evaluator") or {}).get("proxy") or "a zero-cost proxy"
            print(f"  best is the {proxy} score mapped into (0, 1), not an accuracy")
        if run.get("diagnosed"):
            print(f"  {run['diagnosed']} candidate(s) with a training callback's diagnostic"
                  f"{in_legs(run['diagnosed_legs'])} (a callback raised or returned a name it "
                  f"may not, the result unchanged; or it changed the training), the first: "
                  f"candidate {run['first_diagnosed']}")
        if run.get("stopped_by_rules"):
            print(f"  {run['stopped_by_rules']} candidate(s) ended early by a stopping rule "
                  f"(--stop-when){in_legs(run['stopped_legs'])}")
        if run["resumed"]:
            print(f"  {resumed_line(run['resumed'])}")
    return status


def register(commands) -> None:
    """Add ``nord list`` to the ``nord`` command's subcommands."""
    listing = commands.add_parser(
        "list", help="the runs journaled in files or folders",
        description="List the runs journaled in the files and folders given (folders with "
                    "their sub-folders), one line each: the journal, the algorithm, the "
                    "run's state, evaluations done of its budget, failed ones, the best "
                    "search-signal accuracy and when it was created; indented lines under "
                    "a run say what else a reader must know (a proxy score, diagnostics, "
                    "early stops, resumes).")
    listing.add_argument("paths", nargs="*", default=["runs"],
                         help="journals, or folders searched with their sub-folders (default: runs)")
    listing.set_defaults(handler=_list)
