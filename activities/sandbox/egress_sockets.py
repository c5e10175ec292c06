"""This machine's TCP sockets as the kernel lists them, for the egress proxy.

``/proc/net/tcp`` and ``/proc/net/tcp6`` say who listens where and who owns a connection
(its uid and socket inode); ``/proc/<pid>/fd`` says which process holds a socket inode.
The proxy uses them to find every port the Temporal server process listens on, and to
admit a connection to a token-less endpoint only from the worker's own user.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass
from functools import lru_cache

LISTEN = 0x0A  # the kernel's TCP_LISTEN state in /proc/net/tcp


@dataclass(frozen=True)
class TcpSocket:
    local: tuple[str, int]
    remote: tuple[str, int]
    state: int
    uid: int
    inode: int


def _address(hex_address: str) -> tuple[str, int]:
    """``0100007F:1F90`` (the kernel's byte order per 32-bit word) → ``("127.0.0.1", 8080)``."""
    raw_ip, raw_port = hex_address.split(":")
    packed = bytes.fromhex(raw_ip)
    words = b"".join(packed[i : i + 4][::-1] for i in range(0, len(packed), 4))
    ip = ipaddress.ip_address(words)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # a dual-stack socket's IPv4 peer, as IPv4 callers name it
    return str(ip), int(raw_port, 16)


def tcp_sockets() -> list[TcpSocket]:
    """Every TCP socket of this network namespace (IPv4 and IPv6)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10:
                continue
            found.append(
                TcpSocket(
                    _address(fields[1]),
                    _address(fields[2]),
                    int(fields[3], 16),
                    int(fields[7]),
                    int(fields[9]),
                )
            )
    return found


def _socket_inodes(pid: str) -> set[int]:
    inodes: set[int] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:  # gone, or another user's process we may not look into
        return inodes
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(int(link[8:-1]))
    return inodes


def ports_of_listener(port: int) -> set[int]:
    """Every TCP port listened on by the process(es) listening on ``port`` (empty: none found).

    A stock ``temporal server start-dev`` listens on gRPC, the Web UI, the HTTP API and
    metrics ports it picked itself: knowing one finds them all.
    """
    listening = [s for s in tcp_sockets() if s.state == LISTEN]
    wanted = {s.inode for s in listening if s.local[1] == port}
    if not wanted:
        return set()
    port_of = {s.inode: s.local[1] for s in listening}
    ports: set[int] = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            held = _socket_inodes(pid)
            if held & wanted:
                ports |= {port_of[i] for i in held if i in port_of}
    return ports


def peer_uid(peer: tuple[str, int], ours: tuple[str, int]) -> int | None:
    """The uid owning the client end of a loopback connection to ``ours`` (None: not found)."""
    for s in tcp_sockets():
        if s.local == peer and s.remote == ours:
            return s.uid
    return None


@lru_cache(maxsize=1024)
def this_machine(ip: str) -> bool:
    """Is ``ip`` one of this machine's own addresses? Only those can be bound to."""
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    family = socket.AF_INET6 if addr.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((str(addr), 0))
        return True
    except OSError:
        return False
