"""The names the view answers to: a request whose ``Host`` (or ``Origin``) is another name is
refused, so that a page on another domain that rebinds its name to 127.0.0.1 (DNS rebinding)
cannot read the journals through the visitor's browser.

    names = ServedNames("127.0.0.1", 8265)
    names.host_allowed("localhost:8265")           # True
    names.host_allowed("evil.example:8265")        # False
    names.origin_allowed("http://[::1]:8265")      # True

Loopback names (``localhost``, 127.0.0.0/8, ``::1``) are always answered to, with the
``--host`` the view was given; a name with a port answers only at the port served.
"""
from __future__ import annotations

import ipaddress
import socket
from typing import FrozenSet, Optional, Tuple
from urllib.parse import urlsplit

__all__ = ["is_loopback", "ServedNames"]

_WILDCARDS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _split(authority: str) -> Optional[Tuple[str, Optional[int]]]:
    """``name[:port]`` or ``[v6][:port]`` as (lower-case name, port or None); None when it is
    not one."""
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            return None
        name, rest = authority[1:end], authority[end + 1:]
    else:
        name, colon, port = authority.partition(":")
        rest = colon + port
    if not name or (rest and not (rest.startswith(":") and rest[1:].isdigit()
                                  and rest[1:].isascii())):
        return None
    return name.lower(), (int(rest[1:]) if rest else None)


def _machine_names() -> FrozenSet[str]:
    """This machine's names and the addresses they resolve to (a view bound to every
    address is opened by them)."""
    names = {socket.gethostname(), socket.getfqdn()}
    for name in list(names):
        try:
            names.update(socket.gethostbyname_ex(name)[2])
        except OSError:   # a name that does not resolve is still answered to
            pass
    return frozenset(name.lower() for name in names if name)


class ServedNames:
    """The names a view served at ``host:port`` answers to.

    Args:
        host: the address it listens on (``--host``); for every address (``0.0.0.0``, ``::``)
            this machine's names and addresses are answered to as well.
        port: the port it listens on (what a ``Host`` with a port must name).
    """

    def __init__(self, host: str, port: int):
        self.host = host
        self.port = port
        names = {host.strip("[]").lower()}
        if host in _WILDCARDS:
            names |= _machine_names()
        self._names = frozenset(names)

    def _allowed(self, name: str, port: Optional[int]) -> bool:
        return ((is_loopback(name) or name in self._names)
                and (port is None or port == self.port))

    def host_allowed(self, value: str) -> bool:
        """Whether a request's ``Host`` header names this view."""
        parts = _split(value.strip())
        return parts is not None and self._allowed(*parts)

    def origin_allowed(self, value: str) -> bool:
        """Whether a request's ``Origin`` header is a page of this view (``null`` is not)."""
        try:
            origin = urlsplit(value.strip())
        except ValueError:
            return False
        if origin.scheme != "http" or origin.path or origin.query or origin.username:
            return False
        parts = _split(origin.netloc)
        return parts is not None and self._allowed(*parts)

    def example(self) -> str:
        """The address to open, for a refusal's message."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{'127.0.0.1' if self.host in _WILDCARDS else shown}:{self.port}/"
