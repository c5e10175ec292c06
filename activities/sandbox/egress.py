"""The worker's egress proxy: the one way out for agents' network traffic.

Agents reach the network three ways, and each goes through here:

- the browser (Chromium runs in the worker, started with this proxy as its only route),
- ``http_get`` (httpx with this proxy),
- commands in the OS sandbox, when the settings allow domains for them
  (``"permissions": {"allow": ["network(domain:pypi.org)"]}``): a proxy on a Unix socket
  bound into the sandbox (its own network namespace has no other way out).

For every request — each redirect hop is a new request — the proxy checks the host
against the domain rules, **resolves it and checks every resolved address**: loopback,
link-local (cloud metadata), private, carrier-grade NAT, multicast, reserved and
unspecified addresses, and the Temporal endpoints, are refused unless a rule names the
host itself; then it connects to the address it checked (a second lookup could answer
differently). Plain HTTP is forwarded one request per connection; HTTPS is tunnelled
with CONNECT. Each decision is recorded for the run's permission log.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import ipaddress
import logging
import os
import socket
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

from xsky.addresses import blocked_address, ip_of
from xsky.config import load_settings, server_ports
from xsky.permissions import PermissionSettings, domain_rules

log = logging.getLogger("xsky.egress")

MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT = 15.0
Record = Callable[[str, str, str], None]  # (destination, effect, reason)


def _domain_match(host: str, pattern: str) -> bool:
    pattern = pattern.lower().rstrip(".")
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern or host.endswith("." + pattern) or fnmatch.fnmatchcase(host, pattern)


@dataclass
class Policy:
    """Which destinations a proxy lets through."""

    allow: list[str] | None = None  # domain patterns; None: any host (the browser, http_get)
    deny: list[str] = field(default_factory=list)
    named: list[str] = field(default_factory=list)  # hosts a rule names exactly: may be private
    forbidden: set[tuple[str, int]] = field(
        default_factory=set
    )  # (ip, port) never reachable: Temporal
    ports: frozenset[int] | None = None  # the only ports of hosts not named exactly; None: any

    def check_name(self, host: str, port: int | None = None) -> str | None:
        host = host.lower().rstrip(".")
        if (
            self.ports is not None
            and port is not None
            and port not in self.ports
            and host not in self.named
        ):
            return (
                f"port {port} of {host} is not a web port ({', '.join(map(str, sorted(self.ports)))}); "
                f"a network(domain:{host}) rule naming the host allows its other ports"
            )
        if any(_domain_match(host, p) for p in self.deny):
            return f"{host} is denied by a domain rule"
        if self.allow is not None and not any(_domain_match(host, p) for p in self.allow):
            return f"{host} is not among the domains the settings allow ({', '.join(self.allow) or 'none'})"
        return None

    def check_address(self, host: str, ip: str, port: int) -> str | None:
        addr = ipaddress.ip_address(ip)
        local = addr.is_unspecified or addr.is_loopback or this_machine(ip)
        if (ip, port) in self.forbidden or (local and port in {p for _, p in self.forbidden}):
            return f"{host} ({ip}:{port}) is the Temporal server; agents never talk to it"
        reason = blocked_address(addr)
        if reason is None and local:  # a public address of one of this machine's own interfaces
            reason = f"{ip} is an address of this machine (its services may listen there)"
        if reason and host.lower().rstrip(".") not in self.named:
            where = reason if host == ip else f"{host} resolves to {ip}: {reason}"
            return f"{where}; a rule naming the host allows it, if that is intended"
        return None


# Commands reach hosts a wildcard allows on these only (no SMTP, SSH, databases …).
WEB_PORTS = frozenset({80, 443})


@lru_cache(maxsize=1024)
def this_machine(ip: str) -> bool:
    """Is ``ip`` one of this machine's own addresses? Only those can be bound to."""
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((ip, 0))
        return True
    except OSError:
        return False


@lru_cache(maxsize=4)
def _temporal_endpoints(target: str, ui_url: str) -> frozenset[tuple[str, int]]:
    host, _, port = target.rpartition(":")
    try:
        grpc = int(port or 7233)
        ports = set(server_ports(grpc))
        ui = urlsplit(ui_url)
        if ui.port:
            ports.add(ui.port)
        infos = socket.getaddrinfo(host or target, grpc, type=socket.SOCK_STREAM)
        if ui.hostname:
            infos += socket.getaddrinfo(ui.hostname, ui.port or 80, type=socket.SOCK_STREAM)
    except (OSError, ValueError):
        return frozenset()
    return frozenset((str(info[4][0]), p) for info in infos for p in ports)


def policies(settings: PermissionSettings) -> tuple[Policy, Policy | None]:
    """(the browser's and http_get's policy, sandboxed commands' policy or None for no network).

    Any public host for the first (minus denied domains); for commands only the domains a
    ``network(domain:…)`` allow rule names. A host a rule names exactly may be private.
    """
    forbidden = set(temporal_endpoints())
    web_allow, web_deny = domain_rules(settings, ("browser_navigate", "http_get", "network"))
    net_allow, net_deny = domain_rules(settings, ("network",))
    web = Policy(
        allow=None, deny=web_deny, named=[d for d in web_allow if "*" not in d], forbidden=forbidden
    )
    commands = (
        Policy(
            allow=net_allow,
            deny=net_deny,
            named=[d for d in net_allow if "*" not in d],
            forbidden=forbidden,
            ports=WEB_PORTS,
        )
        if net_allow
        else None
    )
    return web, commands


def temporal_endpoints() -> set[tuple[str, int]]:
    """(ip, port) of the Temporal server this worker talks to (gRPC, Web UI, HTTP API, metrics), for the proxy's refusals."""
    settings = load_settings()
    return set(_temporal_endpoints(settings.address, settings.ui_url))


class EgressProxy:
    """An HTTP(S) proxy enforcing a :class:`Policy`, on a TCP port of 127.0.0.1 or a Unix socket."""

    def __init__(self, policy: Policy, record: Record | None = None):
        self.policy = policy
        self.record = record or (lambda dest, effect, reason: None)
        self.server: asyncio.AbstractServer | None = None
        self.port: int | None = None
        self.socket_path: Path | None = None
        self._dir: str | None = None

    async def start_tcp(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0, limit=MAX_HEAD)
        self.port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{self.port}"

    async def start_unix(self) -> Path:
        self._dir = tempfile.mkdtemp(prefix="xsky-egress-")
        self.socket_path = Path(self._dir) / "proxy.sock"
        self.server = await asyncio.start_unix_server(
            self._handle, path=str(self.socket_path), limit=MAX_HEAD
        )
        os.chmod(self.socket_path, 0o666)  # the sandboxed process may run as another uid
        return self.socket_path

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await self.server.wait_closed()
        if self._dir is not None:
            with contextlib.suppress(OSError):
                os.remove(os.path.join(self._dir, "proxy.sock"))
                os.rmdir(self._dir)

    # -- one client connection ---------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            TimeoutError,
            ConnectionError,
        ):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].split(" ", 2)
        except ValueError:
            await self._refuse(writer, 400, "not an HTTP request")
            return
        if method == "CONNECT":
            host, _, port_text = target.rpartition(":")
            await self._tunnel(reader, writer, host.strip("[]"), _port(port_text, 443))
            return
        parts = urlsplit(target)
        if parts.scheme != "http" or not parts.hostname:
            await self._refuse(
                writer, 400, "only absolute http:// requests and CONNECT go through this proxy"
            )
            return
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = [
            h
            for h in lines[1:]
            if h and not h.lower().startswith(("proxy-", "connection:", "keep-alive:"))
        ]
        request = (
            f"{method} {path} {version}\r\n"
            + "\r\n".join(headers + ["Connection: close"])
            + "\r\n\r\n"
        )
        await self._forward(
            reader, writer, parts.hostname, parts.port or 80, request.encode("latin-1")
        )

    async def _open(
        self, writer: asyncio.StreamWriter, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        dest = f"{host}:{port}"
        reason = self.policy.check_name(host, port)
        addresses: list[str] = []
        if reason is None:
            literal = ip_of(host)
            if literal is not None:
                addresses = [str(literal)]
            else:
                try:
                    infos = await asyncio.get_running_loop().getaddrinfo(
                        host, port, type=socket.SOCK_STREAM
                    )
                except OSError as e:
                    await self._refuse(writer, 502, f"cannot resolve {host}: {e}")
                    return None
                addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
            for ip in addresses:  # every address the name has: a rebinding answer cannot slip by
                reason = reason or self.policy.check_address(host, ip, port)
        if reason is not None:
            self.record(dest, "deny", reason)
            await self._refuse(writer, 403, f"refused by xsky's egress proxy: {reason}")
            return None
        self.record(dest, "allow", f"{host} → {', '.join(addresses)}")
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(addresses[0], port), CONNECT_TIMEOUT
            )
        except (OSError, TimeoutError) as e:
            await self._refuse(writer, 502, f"cannot connect to {dest}: {e}")
            return None

    async def _tunnel(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, port: int
    ) -> None:
        upstream = await self._open(writer, host, port)
        if upstream is None:
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await _pipe_both(reader, writer, *upstream)

    async def _forward(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        host: str,
        port: int,
        request: bytes,
    ) -> None:
        upstream = await self._open(writer, host, port)
        if upstream is None:
            return
        up_reader, up_writer = upstream
        up_writer.write(request)
        await up_writer.drain()
        await _pipe_both(reader, writer, up_reader, up_writer)

    @staticmethod
    async def _refuse(writer: asyncio.StreamWriter, status: int, message: str) -> None:
        body = (message + "\n").encode()
        reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}.get(status, "Error")
        with contextlib.suppress(ConnectionError):
            writer.write(
                f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                f"X-Xsky-Egress: refused\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        writer.close()


def _port(text: str, default: int) -> int:
    try:
        return int(text)
    except ValueError:
        return default


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            dst.close()


async def _pipe_both(
    a_reader: asyncio.StreamReader,
    a_writer: asyncio.StreamWriter,
    b_reader: asyncio.StreamReader,
    b_writer: asyncio.StreamWriter,
) -> None:
    await asyncio.gather(_pipe(a_reader, b_writer), _pipe(b_reader, a_writer))


@contextlib.asynccontextmanager
async def serving(policy: Policy, record: Record | None, unix: bool = False) -> AsyncIterator[str]:
    """A proxy for the length of one tool call: its URL (TCP) or its socket path (``unix``)."""
    proxy = EgressProxy(policy, record)
    try:
        yield str(await proxy.start_unix()) if unix else await proxy.start_tcp()
    finally:
        await proxy.close()
