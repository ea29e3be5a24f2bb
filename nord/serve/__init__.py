"""A live, read-only web view of runs: ``nord serve runs/`` (docs/serve.md).

    from nord.serve.server import serve
    serve(["runs/"], host="127.0.0.1", port=8265)   # until Ctrl-C

``catalogue`` finds the files, ``runs`` and ``candidate`` read them (SQLite ``mode=ro``),
``comparison`` reads ``nord compare --json`` results, ``app`` answers requests and
``server`` binds and runs it; ``static/`` holds the pages and their scripts. The web server
and plotly come with the ``serve`` extra and are imported by ``app`` and ``server`` only.
"""
