"""Where torch.distributed's group root asks the other ranks to meet it (one process).

tests/parallel/test_hosts.py checks the same across hosts made of network namespaces.
"""
import socket

import pytest

from nord.errors import DistributedError
from nord.parallel import hosts


@pytest.fixture
def unset(monkeypatch):
    monkeypatch.delenv("GLOO_SOCKET_IFNAME", raising=False)
    monkeypatch.delenv("NORD_MASTER_ADDR", raising=False)
    return monkeypatch


def test_the_interface_gloo_is_told_to_use_gives_the_address(unset):
    unset.setenv("GLOO_SOCKET_IFNAME", "lo")
    assert hosts.this_host_address() == "127.0.0.1"


def test_an_unknown_interface_is_a_clear_error(unset):
    unset.setenv("GLOO_SOCKET_IFNAME", "nord-no-such0")
    with pytest.raises(DistributedError, match="GLOO_SOCKET_IFNAME='nord-no-such0' names no"):
        hosts.this_host_address()
    reason, port = hosts.master_address(spans_hosts=False)
    assert port is None and "nord-no-such0" in reason


def test_without_an_interface_the_host_name_decides(unset):
    try:
        expected = socket.gethostbyname(socket.gethostname())
    except OSError:
        expected = "127.0.0.1"
    assert hosts.this_host_address() == expected


def test_a_loopback_address_is_refused_when_the_group_spans_hosts(unset):
    unset.setenv("NORD_MASTER_ADDR", "127.0.1.1")
    reason, port = hosts.master_address(spans_hosts=True)
    assert port is None
    assert "127.0.1.1" in reason and "GLOO_SOCKET_IFNAME" in reason


def test_a_loopback_address_serves_a_group_on_one_host(unset):
    unset.setenv("NORD_MASTER_ADDR", "127.0.0.1")
    host, port = hosts.master_address(spans_hosts=False)
    assert host == "127.0.0.1" and isinstance(port, int) and port > 0


def test_nord_master_addr_wins(unset):
    unset.setenv("GLOO_SOCKET_IFNAME", "lo")
    unset.setenv("NORD_MASTER_ADDR", "10.1.2.3")
    assert hosts.master_address(spans_hosts=True)[0] == "10.1.2.3"
