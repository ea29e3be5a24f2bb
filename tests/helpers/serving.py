"""nord serve's application on a real socket, in a thread of the test process, and raw
HTTP requests to it (paths sent exactly as written, unnormalised); and ``nord serve`` as a
process of its own, for the browser tests.

    with ServedView(["runs/"]) as view:
        status, body = view.get("/api/runs")
    server = serve_process(["runs/"]); ...; stop_process(server)
"""
from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple

import uvicorn

from nord.serve.app import make_app
from nord.serve.catalogue import Catalogue
from nord.serve.server import bind


class ServedView:
    """The view of ``paths`` served on 127.0.0.1 at a free port until :meth:`stop`."""

    def __init__(self, paths: Sequence[Any]):
        self.catalogue = Catalogue(list(paths))
        self.socket = bind("127.0.0.1", 0)
        self.port = self.socket.getsockname()[1]
        config = uvicorn.Config(make_app(self.catalogue, host="127.0.0.1", port=self.port),
                                log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run,
                                       kwargs={"sockets": [self.socket]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)

    def __enter__(self) -> "ServedView":
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.socket.close()

    def request(self, method: str, path: str, headers: Optional[Dict[str, str]] = None
                ) -> Tuple[int, bytes]:
        """Status and body; ``headers`` are sent as given (``Host`` too: where it is not
        given, ``127.0.0.1:PORT``)."""
        headers = {"Host": f"127.0.0.1:{self.port}", **(headers or {})}
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for key, value in headers.items():
                connection.putheader(key, value)
            connection.endheaders()
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def get(self, path: str) -> Tuple[int, Any]:
        """Status and body (decoded JSON where it is JSON)."""
        status, body = self.request("GET", path)
        try:
            return status, json.loads(body)
        except ValueError:
            return status, body

    def raw(self, data: bytes) -> bytes:
        """Send bytes as they are (a malformed request) and return what came back."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(data)
            chunks = []
            try:
                while True:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    chunks.append(chunk)
            except socket.timeout:
                pass
            return b"".join(chunks)


ROOT = Path(__file__).resolve().parents[2]


def nord_env() -> Dict[str, str]:
    """The environment of a ``nord`` process that imports this checkout's nord."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def serve_process(paths: Sequence[Any], *flags: str) -> subprocess.Popen:
    """``nord serve PATHS --port 0 FLAGS`` started; its first line of output says where."""
    return subprocess.Popen([sys.executable, "-m", "nord", "serve", *map(str, paths), "--port",
                             "0", *flags], env=nord_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def stop_process(process: subprocess.Popen) -> None:
    """Stop a process as Ctrl-C does (killed after 10 s)."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
