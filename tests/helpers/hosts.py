"""Several "hosts" on one machine: Linux network namespaces on a private bridge.

    with VirtualHosts(3, workdir) as hosts:          # root only; removed again on exit
        hostfile = hosts.hostfile([2, 1, 1])          # "ADDRESS slots=N" per host
        run_mpi(["-m", "prog"], np=4, mpirun_args=["--hostfile", hostfile],
                env=hosts.mpi_env())                  # ranks 0,1 on h1, 2 on h2, 3 on h3
        hosts.kill("h2")                              # every process of that host, at once

Each host is a namespace with its own address on a bridge (a private /24 that no interface of
this machine uses), its own host name (``unshare --uts``) and an ``/etc/hosts`` of the
cluster (``ip netns exec`` mounts ``/etc/netns/NAME/hosts`` over it), so the host names
resolve to their bridge addresses as on a cluster with working name resolution.

Open MPI starts its daemons on remote hosts with ``ssh HOST COMMAND``. Here ``ssh`` is a
small agent (a script named ``ssh`` in a folder put first on ``PATH``) that runs COMMAND in
the host's namespace with a fresh environment, as a login over ssh would: what the ranks
need from the caller's environment must be passed with ``-x``, exactly as on a cluster.
Open MPI's traffic is held to the bridge's subnet (``btl_tcp_if_include`` and
``oob_tcp_if_include``, passed as ``OMPI_MCA_*`` variables so that command lines stay as
written for a real cluster).

horovodrun's own ssh calls (its checks and task servers) go through the same agent.

Names carry this process's pid and a counter (namespaces ``nordPID-Nh1``, bridge
``nordbPID-N``, veths ``nvPID-Nh1``), so a run that crashed cannot collide with a new one;
:func:`remove_stale` removes what a dead process left.
"""
from __future__ import annotations

import ipaddress
import itertools
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

NETNS_DIR = Path("/run/netns")
ETC_NETNS = Path("/etc/netns")
INNER_INTERFACE = "eth0"  # the same name in every namespace, as on identical cluster nodes
_SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
IP = shutil.which("ip", path=_SEARCH_PATH) or "ip"
_NAME = re.compile(r"^nord(\d+)-\d+h\d+$")
_LINK = re.compile(r"^(?:nordb|nv)(\d+)-\d+(?:h\d+)?$")
_COUNTER = itertools.count(1)

AGENT = r"""#!/bin/sh
# Stands in for ssh: "ssh [options] HOST [options] COMMAND..." runs COMMAND in HOST's network
# namespace, under HOST's host name, with the fresh environment of a login (HOME, a system PATH).
# Like OpenSSH, it takes options before and after HOST; it ignores them.
host=
while [ $# -gt 0 ]; do
    case "$1" in
        -[BbcDEeFIiJLlmOoPpRSWw]) shift 2 ;;
        -*) shift ;;
        *) [ -n "$host" ] && break; host="$1"; shift ;;
    esac
done
case "$host" in
%(cases)s
    *) echo "agent: unknown host '$host'" >&2; exit 255 ;;
esac
exec %(ip)s netns exec "$ns" unshare --uts /usr/bin/env -i HOME="$HOME" \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 /bin/sh -c "hostname $name && $*"
"""


def can_make_namespaces() -> Optional[str]:
    """None when this process can make network namespaces, else the reason it cannot."""
    if os.geteuid() != 0:
        return "network namespaces need root (run the tests as root)"
    if shutil.which(IP) is None or shutil.which("unshare") is None:
        return "'ip' or 'unshare' is missing (apt-get install iproute2 util-linux)"
    if not Path("/proc/self/ns/net").exists():
        return "this kernel has no network namespaces (/proc/self/ns/net is missing)"
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"this process may not make a network namespace: {probe.stderr.strip()}"
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([IP, *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")
    return done


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def namespace_pids(namespace: str) -> List[int]:
    """Every process whose network namespace is ``namespace`` (what ``ip netns pids`` lists)."""
    try:
        target = os.stat(NETNS_DIR / namespace).st_ino
    except FileNotFoundError:
        return []
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.stat(entry / "ns" / "net").st_ino == target:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _kill_namespace(namespace: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        pids = namespace_pids(namespace)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes {pids} of namespace {namespace} survived SIGKILL")
        time.sleep(0.02)


def _remove_namespace(namespace: str) -> None:
    _kill_namespace(namespace)
    if (NETNS_DIR / namespace).exists():
        _ip("netns", "delete", namespace, check=False)
    shutil.rmtree(ETC_NETNS / namespace, ignore_errors=True)


def remove_stale() -> List[str]:
    """Remove namespaces and bridges named after a process that no longer runs; their names."""
    removed = []
    names = [p.name for p in NETNS_DIR.iterdir()] if NETNS_DIR.exists() else []
    for name in names:
        match = _NAME.match(name)
        if match and not _alive(int(match.group(1))):
            _remove_namespace(name)
            removed.append(name)
    links = _ip("-o", "link", "show", check=False).stdout
    for name in re.findall(r"^\d+: ([^:@]+)", links, re.M):
        match = _LINK.match(name)
        if match and not _alive(int(match.group(1))):
            _ip("link", "delete", name, check=False)
            removed.append(name)
    return removed


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.0.0.0/8 that overlaps no address or route of this machine."""
    used = []
    for line in (_ip("-4", "-o", "addr", "show", check=False).stdout.splitlines()
                 + _ip("-4", "route", "show", check=False).stdout.splitlines()):
        for token in re.findall(r"\d+\.\d+\.\d+\.\d+(?:/\d+)?", line):
            used.append(ipaddress.ip_network(token, strict=False))
    choices = random.Random(os.getpid() ^ time.time_ns())
    for _ in range(1000):
        second, third = choices.randrange(1, 255), choices.randrange(256)
        subnet = ipaddress.ip_network(f"10.{second}.{third}.0/24")
        if not any(subnet.overlaps(other) for other in used if other.prefixlen > 0):
            return subnet
    raise RuntimeError("no free /24 in 10.0.0.0/8 for the virtual hosts")


class VirtualHosts:
    """``count`` hosts, ``h1 .. hN``, each a network namespace on one private bridge.

    Args:
        count: how many hosts.
        workdir: a folder for the agent and the hostfiles (removed by the caller).
    """

    def __init__(self, count: int, workdir: os.PathLike):
        self.count = count
        self.workdir = Path(workdir)
        self.tag = f"{os.getpid()}-{next(_COUNTER)}"
        self.bridge = f"nordb{self.tag}"
        self.subnet: Optional[ipaddress.IPv4Network] = None
        self.names: List[str] = [f"h{i}" for i in range(1, count + 1)]
        self.namespaces: Dict[str, str] = {name: f"nord{self.tag}{name}" for name in self.names}
        self.hostnames: Dict[str, str] = {name: f"{name}-{self.tag}" for name in self.names}
        self.addresses: Dict[str, str] = {}
        self.bin = self.workdir / "bin"

    # --- life cycle ------------------------------------------------------------------------
    def __enter__(self) -> "VirtualHosts":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def start(self) -> "VirtualHosts":
        remove_stale()
        self.close()  # what a crashed run whose pid this process reuses may have left
        self.subnet = _free_subnet()
        hosts = list(self.subnet.hosts())
        gateway = f"{hosts[0]}/{self.subnet.prefixlen}"
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", gateway, "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for index, name in enumerate(self.names, start=1):
            namespace, outer = self.namespaces[name], self._veth(name)
            address = str(hosts[index])
            _ip("netns", "add", namespace)
            _ip("link", "add", outer, "type", "veth", "peer", "name", f"{outer}p")
            _ip("link", "set", f"{outer}p", "netns", namespace)
            _ip("-n", namespace, "link", "set", f"{outer}p", "name", INNER_INTERFACE)
            _ip("-n", namespace, "addr", "add", f"{address}/{self.subnet.prefixlen}", "dev",
                INNER_INTERFACE)
            _ip("-n", namespace, "link", "set", INNER_INTERFACE, "up")
            _ip("-n", namespace, "link", "set", "lo", "up")
            _ip("link", "set", outer, "master", self.bridge)
            _ip("link", "set", outer, "up")
            self.addresses[name] = address
        self.resolve_own_name(loopback=False)
        self._write_agent()
        self._wait_until_reachable()
        return self

    def close(self) -> None:
        """Kill every process of every host, remove the namespaces, veths and the bridge."""
        errors = []
        for namespace in self.namespaces.values():
            try:
                _remove_namespace(namespace)
            except Exception as error:  # noqa: BLE001 - remove the rest, then report
                errors.append(error)
        for name in self.names:
            _ip("link", "delete", self._veth(name), check=False)
        _ip("link", "delete", self.bridge, check=False)
        try:
            ETC_NETNS.rmdir()  # only when no namespace of anyone else has files there
        except OSError:
            pass
        if errors:
            raise errors[0]

    def _veth(self, name: str) -> str:
        return f"nv{self.tag}{name}"  # with the peer's "p", at most 15 characters

    def resolve_own_name(self, loopback: bool) -> None:
        """Write each host's /etc/hosts: its own name to its bridge address, or to 127.0.1.1.

        ``loopback=True`` is Debian's default for a machine without a fixed address: the host
        name resolves to 127.0.1.1, which no other host can reach.
        """
        for name in self.names:
            folder = ETC_NETNS / self.namespaces[name]
            folder.mkdir(parents=True, exist_ok=True)
            lines = ["127.0.0.1 localhost"]
            for other in self.names:
                address = "127.0.1.1" if loopback and other == name else self.addresses[other]
                lines.append(f"{address} {self.hostnames[other]}")
            (folder / "hosts").write_text("\n".join(lines) + "\n")

    def _write_agent(self) -> None:
        self.bin.mkdir(parents=True, exist_ok=True)
        cases = []
        for name in self.names:
            keys = "|".join(sorted({self.addresses[name], self.hostnames[name]}))
            cases.append(f'    {keys}) ns={self.namespaces[name]}; name={self.hostnames[name]} ;;')
        agent = self.bin / "ssh"
        agent.write_text(AGENT % {"cases": "\n".join(cases), "ip": IP})
        agent.chmod(agent.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    def _wait_until_reachable(self, timeout: float = 10.0) -> None:
        """Until every host reaches the others (a new veth may take a moment to come up)."""
        deadline = time.monotonic() + timeout
        pending = set(self.names)
        while pending:
            for name in sorted(pending):
                if all(self._connects(name, self.addresses[other]) for other in self.names
                       if other != name):
                    pending.discard(name)
            if pending and time.monotonic() > deadline:
                raise RuntimeError(f"hosts {sorted(pending)} do not reach the others")
            time.sleep(0.05)

    def _connects(self, name: str, address: str) -> bool:
        """Whether host ``name`` gets an answer from ``address`` (a refused TCP port counts)."""
        probe = ("import socket,sys\ns=socket.socket();s.settimeout(1)\n"
                 f"sys.exit(s.connect_ex(('{address}', 9)) not in (0, 111))")
        done = subprocess.run([IP, "netns", "exec", self.namespaces[name], sys.executable, "-c",
                               probe], capture_output=True)
        return done.returncode == 0

    # --- use ---------------------------------------------------------------------------------
    def hostfile(self, slots: Sequence[int], hosts: Optional[Iterable[str]] = None,
                 path: Optional[os.PathLike] = None) -> Path:
        """A hostfile listing ``hosts`` (default all, in order) with the given slots each."""
        hosts = list(self.names if hosts is None else hosts)
        if len(slots) != len(hosts):
            raise ValueError(f"{len(slots)} slot counts for {len(hosts)} hosts")
        if path is None:
            path = self.workdir / f"hostfile-{'-'.join(hosts)}-{'-'.join(map(str, slots))}"
        path = Path(path)
        path.write_text("".join(f"{self.addresses[h]} slots={n}\n" for h, n in zip(hosts, slots)))
        return path

    def mpi_env(self) -> Dict[str, str]:
        """Environment for mpirun: the agent first on PATH, Open MPI held to the bridge."""
        subnet = str(self.subnet)
        return {
            "PATH": f"{self.bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "OMPI_MCA_btl": "self,tcp",
            "OMPI_MCA_btl_tcp_if_include": subnet,
            "OMPI_MCA_oob_tcp_if_include": subnet,
            # mpirun starts every daemon itself, through the agent on its own PATH
            "OMPI_MCA_plm_rsh_no_tree_spawn": "1",
        }

    def host_of(self, hostname: str) -> str:
        """``h1`` .. for a host name seen by a rank."""
        for name, seen in self.hostnames.items():
            if seen == hostname:
                return name
        raise KeyError(hostname)

    def pids(self, name: str) -> List[int]:
        return namespace_pids(self.namespaces[name])

    def kill(self, name: str) -> List[int]:
        """SIGKILL every process of host ``name`` at once (a lost machine); their pids."""
        pids = self.pids(name)
        _kill_namespace(self.namespaces[name])
        return pids
