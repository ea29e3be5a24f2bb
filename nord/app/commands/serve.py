"""``nord serve``: a live, read-only web view of runs, their candidates and comparisons.

    nord serve runs/                       # http://127.0.0.1:8265/
    nord serve runs/a.db compare.json --port 8300
"""
from __future__ import annotations

# Every other nord module is imported inside the command that needs it: `nord --help`,
# `nord list` and a refused flag must answer without loading torch, sqlite or matplotlib.


def _serve(args) -> int:
    from nord.errors import MissingDependencyError
    try:
        from nord.serve.server import serve
    except ImportError as error:
        raise MissingDependencyError(
            f"nord serve needs the 'serve' extra ({error}); install it with "
            "`pip install -e '.[serve]'` (scripts/setup.sh does)") from error
    serve(args.paths, host=args.host, port=args.port)
    return 0


def register(commands) -> None:
    """Add ``nord serve`` to the ``nord`` command's subcommands."""
    serve = commands.add_parser(
        "serve", help="a live web view of runs (read-only)",
        description="A web page that shows runs, their candidates and comparisons as they "
                    "are written (a new result shows within a second); it only reads the "
                    "files given.")
    serve.add_argument("paths", nargs="*", default=["runs"],
                       help="journals, 'nord compare --json' files, or folders searched with "
                            "their sub-folders (default: runs)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on; another than loopback lets other machines "
                            "read the journals (a warning says so)")
    serve.add_argument("--port", type=int, default=8265, help="port (0: any free one)")
    serve.set_defaults(handler=_serve)
