"""The view's web application (Starlette): pages, their scripts, and JSON endpoints that
read the catalogue's journals and nothing else.

    app = make_app(Catalogue(["runs/"]), host="127.0.0.1", port=8265)   # nord.serve.server

Every URL names a run by its catalogue id, never by a path, so a request cannot reach any
other file; an id, cursor or candidate that is not one gets a 4xx, never a 500. A request
whose ``Host`` or ``Origin`` names another site than this view is refused (403) on every
route (``hosts``).
"""
from __future__ import annotations

import gzip
import json
import logging
import re
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route

import plotly

from nord.errors import JournalError
from nord.serve.candidate import candidate_view
from nord.serve.catalogue import Catalogue, Entry
from nord.serve.comparison import comparison_view
from nord.serve.hosts import ServedNames
from nord.serve.prerender import run_facts, runs_table
from nord.serve.runs import Cursor, CursorError, run_delta, run_line, signature_token

__all__ = ["make_app"]

logger = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
FILES = {name: STATIC / name for name in ("view.js", "runs.js", "run.js", "search.js",
                                          "candidate.js", "style.css")}
FILES["plotly.min.js"] = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
PAGES = {"runs": STATIC / "runs.html", "run": STATIC / "run.html",
         "candidate": STATIC / "candidate.html"}
_MEDIA = {".js": "text/javascript", ".css": "text/css"}
_ID = re.compile(r"^[0-9a-f]{12}$")
_NUMBER = re.compile(r"^[0-9]{1,12}$")
HEADERS = {
    # scripts from this server only; plotly's WebGL traces compile shaders with Function()
    "Content-Security-Policy": ("default-src 'self'; script-src 'self' 'unsafe-eval'; "
                                "style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                                "object-src 'none'; base-uri 'none'; form-action 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


def _json(data: Any, status: int = 200) -> Response:
    body = json.dumps(data, allow_nan=False, separators=(",", ":"), default=str)
    return Response(body, status, media_type="application/json",
                    headers={**HEADERS, "Cache-Control": "no-store"})


def _error(status: int, message: str) -> Response:
    return _json({"error": message}, status)


def _not_found(what: str = "no such page") -> Response:
    return _error(404, f"{what}; the runs served are listed at /")


class _OnlyServedNames:
    """ASGI middleware: a request is answered only when its ``Host`` names this view and its
    ``Origin``, where it has one, is a page of this view; any other gets a 403 (a site that
    rebinds its name to this machine gets nothing, whatever the route)."""

    def __init__(self, app, names: ServedNames):
        self.app = app
        self.names = names

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {}
        for key, value in scope["headers"]:   # a repeated Host or Origin is refused below
            headers.setdefault(key, []).append(value.decode("latin-1"))
        hosts, origins = headers.get(b"host", []), headers.get(b"origin", [])
        problem = None
        if len(hosts) != 1 or not self.names.host_allowed(hosts[0]):
            problem = f"Host {', '.join(map(repr, hosts)) or 'missing'}"
        elif len(origins) > 1 or (origins and not self.names.origin_allowed(origins[0])):
            problem = f"Origin {', '.join(map(repr, origins))}"
        if problem is None:
            await self.app(scope, receive, send)
            return
        response = _error(403, (
            f"this view answers only to loopback names (localhost, 127.0.0.1, [::1]) and "
            f"--host {self.names.host} at port {self.names.port}, not to {problem}; open "
            f"{self.names.example()}"))
        await response(scope, receive, send)


def make_app(catalogue: Catalogue, host: str = "127.0.0.1", port: int = 8265) -> Starlette:
    """The application serving ``catalogue`` (its files only, read-only).

    Args:
        catalogue: what is served.
        host: the address the view listens on (``--host``): requests must name it or a
            loopback name in their ``Host``.
        port: the port it listens on: a ``Host`` or ``Origin`` with another port is refused.
    """

    def entry_of(request: Request, kind: Optional[str] = None) -> Optional[Entry]:
        entry_id = request.path_params.get("run", "")
        entry = catalogue.get(entry_id) if _ID.match(entry_id) else None
        return entry if entry is not None and (kind is None or entry.kind == kind) else None

    def page(name: str, kind: Optional[str] = None) -> Callable:
        async def handler(request: Request) -> Response:
            if name != "runs" and entry_of(request, kind) is None:
                return _not_found("no run with this id is served")
            if name == "candidate" and not _NUMBER.match(request.path_params["candidate"]):
                return _not_found("a candidate is named by its number")
            page = PAGES[name].read_text(encoding="utf-8")
            if name == "runs":   # the numbers are in the HTML before any script runs
                page = runs_table(page, [run_line(entry) for entry in catalogue.entries()])
            elif name == "run":
                page = run_facts(page, run_line(entry_of(request)))
            return HTMLResponse(page, headers={**HEADERS, "Cache-Control": "no-store"})
        return handler

    packed: Dict[str, bytes] = {}

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        path = FILES.get(name)
        if path is None:
            return _not_found()
        headers = {**HEADERS, "Cache-Control": "max-age=3600"}
        if "gzip" in request.headers.get("accept-encoding", ""):
            if name not in packed:   # compressed once, not on every cold page
                packed[name] = gzip.compress(path.read_bytes(), compresslevel=6)
            return Response(packed[name], media_type=_MEDIA[path.suffix], headers={
                **headers, "Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
        return FileResponse(path, headers=headers)

    async def runs(request: Request) -> Response:
        lines = [run_line(entry) for entry in catalogue.entries()]
        return _json({"runs": lines})

    async def run(request: Request) -> Response:
        entry = entry_of(request)
        if entry is None:
            return _not_found("no run with this id is served")
        try:
            cursor = Cursor.parse(request.query_params)
        except CursorError as error:
            return _error(400, str(error))
        if entry.kind != "journal":
            return _json({"run": run_line(entry), "cursor": cursor.to_json()})
        # seen=VERSION: nothing changed since the page's last answer costs two stat calls
        version = signature_token(entry)
        if request.query_params.get("seen") == version and cursor != Cursor():
            return _json({"run": run_line(entry), "cursor": cursor.to_json(),
                          "version": version, "unchanged": True})
        delta = run_delta(entry, cursor)
        delta["version"] = version
        return _json(delta)

    async def candidate(request: Request) -> Response:
        entry = entry_of(request, "journal")
        number = request.path_params["candidate"]
        if entry is None or not _NUMBER.match(number):
            return _not_found("no such run or candidate")
        try:
            view = candidate_view(entry, int(number))
        except JournalError as error:
            return _json({"error": str(error), "state": "unreadable"})
        if view is None:
            return _not_found(f"the run has no candidate {number}")
        return _json(view)

    async def comparison(request: Request) -> Response:
        entry = entry_of(request, "comparison")
        if entry is None:
            return _not_found("no comparison with this id is served")
        return _json(comparison_view(entry))

    async def no_icon(request: Request) -> Response:
        return Response(status_code=204, headers=HEADERS)

    async def not_found(request: Request, exc: Exception) -> Response:
        return _not_found()

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return _error(405, f"this view only reads: {request.method} is not served; use GET")

    async def failed(request: Request, exc: Exception) -> Response:
        logger.exception("a request failed: %s", request.url.path)
        return _error(500, f"the view failed to answer ({type(exc).__name__})")

    routes = [
        Route("/", page("runs")),
        Route("/run/{run}", page("run")),
        Route("/run/{run}/candidate/{candidate}", page("candidate", "journal")),
        Route("/static/{name}", static),
        Route("/favicon.ico", no_icon),
        Route("/api/runs", runs),
        Route("/api/run/{run}", run),
        Route("/api/run/{run}/candidate/{candidate}", candidate),
        Route("/api/comparison/{run}", comparison),
    ]
    return Starlette(routes=routes, middleware=[
        Middleware(_OnlyServedNames, names=ServedNames(host, port)),
        Middleware(GZipMiddleware, minimum_size=4096)],
                     exception_handlers={404: not_found, 405: not_allowed, 500: failed})
