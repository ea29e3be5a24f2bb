"""Where this host can be reached: the address a group root offers its group for a rendezvous.

torch.distributed's ranks meet at one ``host:port`` that the group root chooses; it must be an
address the other hosts can reach, found the way gloo finds its own::

    host, port = master_address(spans_hosts=True)   # on the group root
    if port is None:
        raise DistributedError(host)                # host is then the reason, for every rank

``NORD_MASTER_ADDR`` sets the address, ``GLOO_SOCKET_IFNAME`` the interface to take it from.
"""
from __future__ import annotations

import ipaddress
import os
import socket
import struct
from typing import Optional, Tuple

from nord.errors import DistributedError

__all__ = ["master_address", "this_host_address"]


def master_address(spans_hosts: bool) -> Tuple[str, Optional[int]]:
    """``(host, free port)`` for torch.distributed's rendezvous, or ``(reason, None)``.

    The host is ``NORD_MASTER_ADDR`` when set, else this host's address as gloo finds its
    own: the interface named by ``GLOO_SOCKET_IFNAME``, else what the host name resolves
    to. A loopback address cannot be reached from another host, so a group that spans
    hosts gets a reason to fail with instead of waiting for a connection that never comes.
    The reason is returned, not raised, so that the root can send it to the other ranks
    and they all fail together.
    """
    given = os.environ.get("NORD_MASTER_ADDR")
    try:
        host = given or this_host_address()
    except DistributedError as error:
        return str(error), None
    if spans_hosts and _is_loopback(host):
        why = ("NORD_MASTER_ADDR is a loopback address" if given
               else "its host name resolves to a loopback address")
        return (f"the group spans several hosts, but the rendezvous address of host "
                f"{socket.gethostname()} is {host}, which the other hosts cannot reach ({why}). "
                "Set GLOO_SOCKET_IFNAME to the interface of the cluster network (e.g. `mpirun -x "
                "GLOO_SOCKET_IFNAME=eth0`), or fix the name resolution of the hosts."), None
    with socket.socket() as probe:
        probe.bind(("", 0))
        return host, probe.getsockname()[1]


def this_host_address() -> str:
    """This host's IPv4 address: that of ``GLOO_SOCKET_IFNAME``'s first interface, else what
    the host name resolves to, else ``127.0.0.1``.

    Raises:
        DistributedError: ``GLOO_SOCKET_IFNAME`` names no interface with an IPv4 address.
    """
    interface = os.environ.get("GLOO_SOCKET_IFNAME", "").split(",")[0].strip()
    if interface:
        return _interface_address(interface)
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: what it resolves to here
        try:
            return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
        except OSError:
            return False


def _interface_address(interface: str) -> str:
    """The IPv4 address of a network interface (Linux)."""
    import fcntl  # POSIX only: imported where used, so that importing nord works everywhere

    siocgifaddr = 0x8915
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            request = struct.pack("256s", interface.encode()[:15])
            return socket.inet_ntoa(fcntl.ioctl(probe.fileno(), siocgifaddr, request)[20:24])
        except OSError as error:
            raise DistributedError(
                f"GLOO_SOCKET_IFNAME={interface!r} names no network interface with an IPv4 "
                f"address on host {socket.gethostname()} ({error.strerror}); list them with "
                "`ip -4 addr` and pass one, e.g. `mpirun -x GLOO_SOCKET_IFNAME=eth0`") from None
