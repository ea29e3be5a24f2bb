"""``nord export``: a consistent copy of a journal, also of a live run.

    nord export runs/rea.db backup/rea.db
"""
from __future__ import annotations

# Every other nord module is imported inside the command that needs it: `nord --help`,
# `nord list` and a refused flag must answer without loading torch, sqlite or matplotlib.


def _export(args) -> int:
    from nord.journal import Journal
    with Journal(args.journal) as journal:
        journal.metadata()   # a clear error when it is not a journal
        written = journal.export(args.out)
    print(f"exported: {written}")
    return 0


def register(commands) -> None:
    """Add ``nord export`` to the ``nord`` command's subcommands."""
    export = commands.add_parser(
        "export", help="a consistent copy of a journal, also of a live run",
        description="Copy a run's journal to a new file with SQLite's backup API: the copy "
                    "holds every result committed when it was taken, also of a run still "
                    "being written (which goes on undisturbed; its copy says 'interrupted' "
                    "and can be resumed on its own). An existing file is never overwritten.")
    export.add_argument("journal", help="the run's journal")
    export.add_argument("out", help="the copy's path (a new file)")
    export.set_defaults(handler=_export)
