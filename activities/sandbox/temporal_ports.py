"""Where the Temporal server this worker talks to can be reached: agents never may.

Found, not assumed: the worker's connection (the settings' address, every address its
host resolves to), the Web UI URL's port, and — when the server runs on this machine —
every TCP port the server *process* listens on (its Web UI, HTTP API and metrics ports,
whatever layout started it: a stock ``temporal server start-dev`` picks its own).
xsky's own layout (:func:`xsky.config.server_ports`) is added as a fallback, for a server
this user may not look into. Found again at most every :data:`TTL` seconds, so a server
restarted on other ports is noticed soon.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from activities.sandbox.egress_sockets import ports_of_listener, this_machine
from xsky.security.addresses import ip_of

TTL = 30.0


@dataclass(frozen=True)
class Endpoints:
    """(ip, port) pairs of the server wherever it runs, its ports on this machine, and the
    (host, port) names the settings give it (a name may resolve elsewhere the next time)."""

    addresses: frozenset[tuple[str, int]] = frozenset()
    local_ports: frozenset[int] = frozenset()
    names: frozenset[tuple[str, int]] = frozenset()

    def include(self, ip: str, port: int, host: str | None = None) -> bool:
        if host is not None and (host.lower().rstrip("."), port) in self.names:
            return True
        return (ip, port) in self.addresses or (port in self.local_ports and is_local(ip))


def is_local(ip: str) -> bool:
    """Does a connection to ``ip`` reach this machine (loopback, unspecified, its own addresses)?"""
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback or addr.is_unspecified or this_machine(str(addr))


def _resolve(host: str) -> set[str]:
    literal = ip_of(host)
    if literal is not None:
        return {str(literal)}
    try:
        return {str(i[4][0]).split("%")[0] for i in socket.getaddrinfo(host, None)}
    except OSError:
        return set()


def grpc_port(address: str) -> int:
    """The port of a ``host:port`` Temporal address (7233 when it names none)."""
    _, _, port = address.rpartition(":")
    return int(port) if port.isdigit() else 7233


def discover(address: str, ui_url: str, layout: tuple[int, ...] = ()) -> Endpoints:
    """The Temporal endpoints of a worker connected to ``address`` with its Web UI at ``ui_url``;
    ``layout``: ports to refuse beside the discovered ones (xsky's own server's)."""
    grpc = grpc_port(address)
    host = address.rpartition(":")[0] if address.rpartition(":")[2].isdigit() else address
    ips = _resolve(host.strip("[]"))
    ports = {grpc, *layout}
    addresses = {(ip, p) for ip in ips for p in ports}
    names = {(host.strip("[]").lower().rstrip("."), p) for p in ports}
    local_ports = set(ports) if any(is_local(ip) for ip in ips) else set()
    if local_ports:
        local_ports |= ports_of_listener(grpc)
    ui = urlsplit(ui_url)
    try:
        ui_port = ui.port or (443 if ui.scheme == "https" else 80)
    except ValueError:
        ui_port = None
    if ui.hostname and ui_port:
        ui_ips = _resolve(ui.hostname)
        addresses |= {(ip, ui_port) for ip in ui_ips}
        names.add((ui.hostname.lower().rstrip("."), ui_port))
        if any(is_local(ip) for ip in ui_ips):
            local_ports.add(ui_port)
    return Endpoints(frozenset(addresses), frozenset(local_ports), frozenset(names))


@dataclass
class Discovery:
    """The endpoints of one server, found again when older than ``ttl`` seconds."""

    address: str
    ui_url: str
    layout: tuple[int, ...] = ()
    ttl: float = TTL
    _found: Endpoints | None = None
    _at: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fresh(self) -> bool:
        return self._found is not None and time.monotonic() - self._at < self.ttl

    def current(self) -> Endpoints:
        with self._lock:  # one discovery at a time; the others wait for its answer
            if not self.fresh():
                this_machine.cache_clear()  # interfaces may have changed too
                self._found, self._at = (
                    discover(self.address, self.ui_url, self.layout),
                    time.monotonic(),
                )
            assert self._found is not None
            return self._found


_default: Discovery | None = None


def configure(address: str, ui_url: str, layout: tuple[int, ...]) -> Discovery:
    """Watch this server (the worker's own) from now on; the proxy process is told at start."""
    global _default
    _default = Discovery(address, ui_url, layout)
    return _default


def settings_target() -> tuple[str, str, tuple[int, ...]]:
    """(address, UI URL, xsky's port layout) of the server the settings name."""
    from xsky.config import load_settings, server_ports  # the worker's; the proxy is told them

    settings = load_settings()
    return settings.address, settings.ui_url, server_ports(grpc_port(settings.address))


def default() -> Discovery:
    """The discovery of the configured server, else of the one the settings name."""
    return _default if _default is not None else configure(*settings_target())
