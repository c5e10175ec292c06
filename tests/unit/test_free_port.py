"""A free port for a test's or a user's dev server is one the kernel does not hand out by itself:
below its ephemeral range, with the ports the server derives from it free too. (A dev server's
own internal service once took, from that range, the HTTP port chosen for it, and crashed.)"""

from __future__ import annotations

import socket
from pathlib import Path

from cli.devserver import free_port, port_free
from xsky.config import server_ports


def test_a_free_port_and_its_servers_ports_are_below_the_ephemeral_range_and_free() -> None:
    start = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(20):
        port = free_port()
        assert all(p < start and port_free("127.0.0.1", p) for p in server_ports(port)), port
    with socket.socket() as s:  # what the kernel gives for port 0 is not one of them
        s.bind(("127.0.0.1", 0))
        assert s.getsockname()[1] >= start
