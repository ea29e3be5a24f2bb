"""Run the view: bind a socket (loopback unless told otherwise), say where, and serve until
stopped.

    serve(["runs/"], host="127.0.0.1", port=8265)
"""
from __future__ import annotations

import logging
import socket
import sys
from typing import Iterable, TextIO

import uvicorn

from nord.errors import ConfigurationError
from nord.serve.app import make_app
from nord.serve.catalogue import Catalogue
from nord.serve.hosts import is_loopback

__all__ = ["serve", "is_loopback", "bind"]

logger = logging.getLogger(__name__)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free one).

    Raises:
        ConfigurationError: the address cannot be bound (in use, not this machine's).
    """
    if not 0 <= port <= 65535:
        raise ConfigurationError(f"--port must be between 0 and 65535 (0 picks a free one), "
                                 f"not {port}")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise ConfigurationError(
            f"cannot listen on {host}:{port} ({error.strerror or error}); give a free port "
            "with --port (0 picks one) or an address of this machine with --host") from error
    sock.listen(128)
    return sock


def serve(paths: Iterable[str], host: str = "127.0.0.1", port: int = 8265,
          out: TextIO = sys.stdout) -> None:
    """Serve the journals and comparisons below ``paths`` until interrupted.

    Raises:
        JournalError: a path that does not exist.
        ConfigurationError: the address cannot be bound.
    """
    catalogue = Catalogue(list(paths))
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    if not is_loopback(host):
        print(f"warning: serving on {host}, not loopback: anyone who can reach port {bound} "
              "of this machine can read these journals; prefer the default 127.0.0.1 and an "
              "SSH tunnel (README: 'Watching a run')", file=sys.stderr, flush=True)
    shown = f"[{host}]" if ":" in host else host
    count = len(catalogue.entries())
    print(f"serving {count} file{'s' if count != 1 else ''} (read-only) at "
          f"http://{shown}:{bound}/  (Ctrl-C stops)", file=out, flush=True)
    config = uvicorn.Config(make_app(catalogue, host=host, port=bound), log_level="warning",
                            access_log=False, lifespan="off", server_header=False,
                            timeout_graceful_shutdown=1)   # pages hold requests open
    uvicorn.Server(config).run(sockets=[sock])
