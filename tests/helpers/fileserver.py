"""A file server on 127.0.0.1 for the download tests: HTTP/1.0, in a thread, recording what it sends.

::

    with FileServer(folder, ranges=True) as server:
        download_file(server.url + "blob", ...)
        server.requests   # [Request(path='/blob', range='bytes=100-', status=206, sent=900)]

It answers ``Range: bytes=N-`` with 206 and the rest of the file (or 416 when ``N`` is
past the end), or, with ``ranges=False``, ignores the header and sends the whole file, as
servers without range support do; ``length=False`` leaves out ``Content-Length`` (the
body then ends when the connection closes). ``cut_after`` closes the connection after that many
body bytes of every answer; ``pause_at`` stops after that many and waits until
:meth:`resume` (``paused`` is set while it waits), so a test can act in the middle of a
transfer.
"""
from __future__ import annotations

import http.server
import re
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

_RANGE = re.compile(r"^bytes=(\d+)-$")


def closed_port() -> int:
    """A port of 127.0.0.1 that nothing listens on (connections to it are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Request:
    """One GET as the server saw it."""

    path: str
    range: Optional[str]
    status: int
    sent: int = 0


class FileServer:
    """Serves ``folder`` over HTTP on a free port of 127.0.0.1 until :meth:`close`.

    Args:
        folder: the files served, by their names relative to it.
        ranges: answer Range requests (False: send the whole file with 200).
        length: send Content-Length.
        cut_after: close the connection after this many body bytes.
        pause_at: wait for :meth:`resume` after this many body bytes.
        chunk: bytes written at a time.
    """

    def __init__(self, folder, ranges: bool = True, length: bool = True, cut_after: Optional[int] = None,
                 pause_at: Optional[int] = None, chunk: int = 4096):
        self.folder = Path(folder)
        self.ranges = ranges
        self.length = length
        self.cut_after = cut_after
        self.pause_at = pause_at
        self.chunk = chunk
        self.requests: List[Request] = []
        self.paused = threading.Event()
        self._resume = threading.Event()
        self._lock = threading.Lock()
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The base URL, ending in '/'."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/"

    @property
    def gets(self) -> List[Request]:
        """A copy of :attr:`requests`, taken under the lock."""
        with self._lock:
            return list(self.requests)

    def resume(self) -> None:
        """Let paused transfers go on."""
        self._resume.set()

    def close(self) -> None:
        self._resume.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "FileServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _handler(self):
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                wanted = self.headers.get("Range")
                record = Request(self.path, wanted, 0)
                with server._lock:
                    server.requests.append(record)
                path = server.folder / self.path.lstrip("/")
                if ".." in Path(self.path).parts or not path.is_file():
                    record.status = 404
                    self.send_error(404)
                    return
                content = path.read_bytes()
                match = _RANGE.match(wanted or "") if server.ranges else None
                if match and int(match.group(1)) >= len(content):
                    record.status = 416
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(content)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                first = int(match.group(1)) if match else 0
                record.status = 206 if match else 200
                self.send_response(record.status)
                if server.ranges:
                    self.send_header("Accept-Ranges", "bytes")
                if match:
                    self.send_header("Content-Range", f"bytes {first}-{len(content) - 1}/{len(content)}")
                if server.length:
                    self.send_header("Content-Length", str(len(content) - first))
                self.end_headers()
                body = content[first:]
                limit = len(body) if server.cut_after is None else min(len(body), server.cut_after)
                while record.sent < limit:
                    if server.pause_at is not None and record.sent == server.pause_at:
                        server.paused.set()
                        server._resume.wait()
                    stop = (limit if server.pause_at is None or record.sent >= server.pause_at
                        else min(limit, server.pause_at))
                    piece = body[record.sent:min(stop, record.sent + server.chunk)]
                    # counted before the write: a client that has read the whole body may
                    # look at the count before this thread runs again
                    record.sent += len(piece)
                    try:
                        self.wfile.write(piece)
                        self.wfile.flush()
                    except OSError:  # the client went away: this piece did not go out
                        record.sent -= len(piece)
                        return

        return Handler
