"""One client connection through the egress proxy, and the endpoint it came in on.

Each connection carries exactly one thing, and every destination it names is decided and
recorded before a byte reaches it:

- a plain-HTTP request (absolute ``http://`` URL whose Host header agrees): forwarded with
  exactly its own body (Content-Length or chunked), then whatever else the client sends is
  read only to be dropped, so a second request — to another host — cannot ride the
  connection unlogged;
- a CONNECT tunnel: when the client's first bytes are a TLS ClientHello naming a server
  (SNI), that name must be the CONNECT host; other protocols pass as they are.

The client always gets an answer: the server's (even when it answered before it read the
whole request and closed), or the proxy's refusal saying why there is none.
"""

from __future__ import annotations

import asyncio
import hmac
import os
import socket
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from activities.sandbox import temporal_ports
from activities.sandbox.egress_http import (
    HOP_BY_HOP,
    MAX_HEAD,
    BadRequest,
    Head,
    Idle,
    Unread,
    Upstream,
    basic_credentials,
    body_framing,
    client_hello_sni,
    copy_body,
    copy_response,
    copy_stream,
    parse_head,
    relay,
    response,
    split_authority,
)
from activities.sandbox.egress_policy import Policy, normal_host
from activities.sandbox.egress_sockets import peer_uid
from xsky.security.addresses import ip_of

MAX_CONNECTIONS = 64  # open at once through one endpoint; more are refused at once
MAX_DESTINATIONS = 1000  # distinct destinations one endpoint may name (each one is logged)
MAX_REFUSALS = 2000  # distinct refusals one endpoint logs one by one; the rest are counted
HEAD_TIMEOUT = 15.0  # for a request head to arrive
IDLE_TIMEOUT = 120.0  # a connection on which nothing moved this long is closed
CONNECT_TIMEOUT = 15.0
RESOLVE_TIMEOUT = 10.0
LINGER = 5.0  # at most this long after an answer, what the client still sends is read and dropped
LINGER_BYTES = 16 << 20  # and at most this much of it
REFUSED = "X-Xsky-Egress: refused"
# The proxy's own answer when the checked host did not answer: the tools say "could not connect"
# (which may pass) instead of the server's "HTTP 502".
UNREACHABLE = "X-Xsky-Egress: unreachable"
AUTHENTICATE = 'Proxy-Authenticate: Basic realm="xsky egress"'


@dataclass(eq=False)
class Endpoint:
    """Where one tool call's traffic comes in, with the policy and the counts of its log."""

    id: str
    kind: str
    policy: Policy
    token: str | None = None  # the Proxy-Authorization password it requires (None: none)
    listener: socket.socket | None = None
    dir: str | None = None
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    seen: set[tuple[str, str, str]] = field(default_factory=set)
    destinations: set[str] = field(default_factory=set)
    busy: int = 0  # connections refused for being over MAX_CONNECTIONS
    overflow: int = 0  # requests refused for naming a destination past MAX_DESTINATIONS
    unlisted: int = 0  # refusals past MAX_REFUSALS, counted in one last entry

    def note(self, destination: str, effect: str, reason: str) -> bool:
        """Is this decision new (to be written to the log)? A destination reached is written
        once (its first addresses); each distinct refusal once, up to MAX_REFUSALS (a client
        choosing what a refusal says — a TLS name — cannot grow the log without end)."""
        key = (destination, effect, "" if effect == "allow" else reason)
        if key in self.seen:
            return False
        if effect != "allow" and len(self.seen) >= MAX_DESTINATIONS + MAX_REFUSALS:
            self.unlisted += 1
            return False
        self.seen.add(key)
        return True

    def admits(self, destination: str) -> bool:
        if destination in self.destinations:
            return True
        if len(self.destinations) >= MAX_DESTINATIONS:
            self.overflow += 1
            return False
        self.destinations.add(destination)
        return True

    def overflow_reason(self) -> str:
        return (
            f"{self.overflow} request(s) refused: one tool call may reach at most "
            f"{MAX_DESTINATIONS} distinct destinations"
        )


def destination(host: str, port: int) -> str:
    name = normal_host(host)
    return f"[{name}]:{port}" if ":" in name else f"{name}:{port}"


class Refused(Exception):
    """A tunnel ended by the proxy after a check of what the client sent."""


class Hub(Protocol):
    """What a connection asks of the proxy it came in through (egress_server's ``Proxy``):
    the session a shared socket's credentials name, the record of a decision, and where the
    Temporal server is (never to be reached)."""

    pending: set[asyncio.Task[Any]]  # connections on the shared socket, not yet authenticated
    discovery: temporal_ports.Discovery

    def session(self, username: str, password: str) -> Endpoint | None: ...

    def record(self, ep: Endpoint, destination: str, effect: str, reason: str) -> None: ...


class Connection:
    def __init__(
        self,
        proxy: Hub,
        ep: Endpoint | None,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ):
        self.proxy, self.ep, self.reader, self.writer = proxy, ep, reader, writer

    async def serve(self) -> None:
        try:
            raw = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        except asyncio.LimitOverrunError:
            return await self.refuse(
                431, "Request Header Fields Too Large", f"over {MAX_HEAD} bytes"
            )
        except asyncio.IncompleteReadError as e:
            if e.partial:  # the client stopped sending mid-head, and may still read
                await self.refuse(
                    400, "Bad Request", "the request head ended before its blank line"
                )
            return None
        except TimeoutError:
            return await self.refuse(
                408, "Request Timeout", f"no whole request head came in {HEAD_TIMEOUT:g} seconds"
            )
        except ConnectionError:
            return None
        try:
            head = parse_head(raw)
            if await self.authenticate(head):
                await (self.tunnel(head) if head.method == "CONNECT" else self.forward(head))
        except BadRequest as e:
            await self.refuse(400, "Bad Request", str(e))
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError, OSError):
            pass
        return None

    async def linger(self) -> None:
        """The end of the connection, so that the answer reaches the client whole. A socket
        closed with bytes it has not read resets the connection, and the reset throws away
        what the client was not sent yet — a refusal answered before the request's body was
        read, the tail of a large answer to a client that sent more. So this side is
        half-closed once the answer is written, and whatever else the client sends is read
        and dropped, never forwarded, until it closes (for LINGER seconds at most)."""
        loop = asyncio.get_running_loop()
        deadline, dropped = loop.time() + LINGER, 0
        try:
            if self.writer.can_write_eof():
                self.writer.write_eof()  # after what is still buffered
            while dropped <= LINGER_BYTES and (left := deadline - loop.time()) > 0:
                data = await asyncio.wait_for(self.reader.read(65536), left)
                if not data:
                    return
                dropped += len(data)
        except (OSError, TimeoutError):  # the client is gone, or did not close in time
            pass

    async def refuse(self, status: int, phrase: str, body: str, *headers: str) -> None:
        self.writer.write(response(status, phrase, body, headers))
        try:
            await asyncio.wait_for(self.writer.drain(), 5)
        except (ConnectionError, TimeoutError):
            pass

    async def authenticate(self, head: Head) -> bool:
        """Does this request come from whom the endpoint serves? (Answered if not.)"""
        credentials = basic_credentials(head)
        if self.ep is None:  # the shared browser socket: the credentials name the session
            ep = self.proxy.session(*credentials) if credentials else None
            if ep is None:
                await self.refuse(
                    407, "Proxy Authentication Required", "no valid credentials", AUTHENTICATE
                )
                return False
            if len(ep.tasks) >= MAX_CONNECTIONS:
                ep.busy += 1
                await self.refuse(503, "Service Unavailable", "too many connections at once")
                return False
            task = asyncio.current_task()
            assert task is not None
            self.proxy.pending.discard(task)
            ep.tasks.add(task)
            self.ep = ep
        elif self.ep.token is not None:
            if (
                credentials is None
                or credentials[0] != self.ep.id
                or not hmac.compare_digest(credentials[1].encode(), self.ep.token.encode())
            ):
                await self.refuse(
                    407, "Proxy Authentication Required", "no valid credentials", AUTHENTICATE
                )
                return False
        elif self.ep.kind == "tcp-user":
            peer, ours = (
                self.writer.get_extra_info("peername"),
                self.writer.get_extra_info("sockname"),
            )
            uid = await asyncio.to_thread(peer_uid, tuple(peer[:2]), tuple(ours[:2]))
            if uid != os.getuid():
                await self.refuse(
                    403, "Forbidden", "only the worker's own processes may use this proxy"
                )
                return False
        return True

    @property
    def endpoint(self) -> Endpoint:
        assert self.ep is not None  # authenticated
        return self.ep

    def record(self, dest: str, effect: str, reason: str) -> None:
        self.proxy.record(self.endpoint, dest, effect, reason)

    async def check(self, host: str, port: int) -> tuple[list[str], str | None]:
        """(every address of host, why not) — None when every one of them may be reached."""
        policy = self.endpoint.policy
        reason = policy.check_name(host, port)
        if reason is not None:
            return [], reason
        literal = ip_of(host)
        if literal is not None:
            addresses = [str(literal)]
        else:
            loop = asyncio.get_running_loop()
            try:
                infos = await asyncio.wait_for(
                    loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT
                )
            except (OSError, TimeoutError, UnicodeError) as e:
                return [], f"{host} cannot be resolved ({e or 'timed out'}); check the name"
            addresses = list(dict.fromkeys(str(i[4][0]).split("%")[0] for i in infos))
        discovery = self.proxy.discovery
        temporal = (
            discovery.current() if discovery.fresh() else await asyncio.to_thread(discovery.current)
        )
        for ip in addresses:  # every address: one rebinding answer among good ones cannot slip by
            reason = policy.check_address(host, ip, port, temporal)
            if reason is not None:
                return addresses, reason
        return addresses, None

    async def admit(self, host: str, port: int) -> list[str] | None:
        """The checked addresses of host:port, or None once refused (recorded and answered)."""
        dest = destination(host, port)
        if not self.endpoint.admits(dest):
            await self.refuse(403, "Forbidden", self.endpoint.overflow_reason(), REFUSED)
            return None
        addresses, reason = await self.check(host, port)
        if reason is not None:
            self.record(dest, "deny", reason)
            await self.refuse(
                403,
                f"Forbidden by xsky's egress proxy: {reason}",
                f"refused by xsky's egress proxy: {reason}",
                REFUSED,
            )
            return None
        return addresses

    async def connect(self, addresses: list[str], port: int) -> Upstream:
        failure: Exception | None = None
        loop = asyncio.get_running_loop()
        for ip in addresses:  # each was checked; the first that answers is used
            sock = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET)
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                await asyncio.wait_for(loop.sock_connect(sock, (ip, port)), CONNECT_TIMEOUT)
                return Upstream(sock)
            except (OSError, TimeoutError) as e:
                sock.close()
                failure = e
            except BaseException:
                sock.close()
                raise
        raise ConnectionRefusedError(
            f"cannot connect to port {port} of {', '.join(addresses)}: {failure or 'timed out'}"
        )

    async def forward(self, head: Head) -> None:
        if not all("!" <= c <= "~" for c in head.target):
            raise BadRequest("the request target holds spaces or control characters")
        url = urlsplit(head.target)
        try:
            port = url.port or 80
        except ValueError:
            raise BadRequest(f"{head.target[:100]!r} has no valid port") from None
        if url.scheme.lower() != "http" or not url.hostname:
            raise BadRequest("only absolute http:// URLs and CONNECT go through this proxy")
        host, dest = url.hostname, destination(url.hostname, port)
        hosts = head.values("host")
        problem = "more than one Host header" if len(hosts) > 1 else None
        try:
            if len(hosts) == 1:
                named_host, named_port = split_authority(hosts[0], 80)
                if (normal_host(named_host), named_port) != (normal_host(host), port):
                    problem = (
                        f"the Host header {hosts[0]} differs from the URL's host {host}:{port}"
                    )
            length = body_framing(head)
            if length is None and head.version == "HTTP/1.0":
                raise BadRequest("a chunked request body needs HTTP/1.1")
        except BadRequest as e:
            problem = str(e)
        if problem is not None:
            self.record(dest, "deny", problem)
            raise BadRequest(problem)
        addresses = await self.admit(host, port)
        if addresses is None:
            return
        self.record(dest, "allow", f"{host} → {', '.join(addresses)}")
        try:
            upstream = await self.connect(addresses, port)
        except ConnectionError as e:
            return await self.refuse(502, "Bad Gateway", str(e), UNREACHABLE)
        # Headers naming the body's framing stay whatever Connection lists: the body is sent.
        named = {t.strip().lower() for v in head.values("connection") for t in v.split(",")}
        named -= {"host", "content-length", "transfer-encoding"}
        headers = [(n, v) for n, v in head.headers if n.lower() not in HOP_BY_HOP | named]
        if not hosts:
            headers.insert(0, ("Host", url.netloc.rpartition("@")[2]))
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        lines = [f"{head.method} {path} {head.version}", *(f"{n}: {v}" for n, v in headers)]
        upstream.write(("\r\n".join([*lines, "Connection: close"]) + "\r\n\r\n").encode("latin-1"))
        idle = Idle()
        started: list[bool] = []  # a byte of the answer is on its way to the client
        try:
            failure = await relay(
                [
                    self.send_body(upstream, length, idle),
                    copy_response(upstream, self.writer, idle, started),
                ],
                idle,
                IDLE_TIMEOUT,
                until=1,
            )
        finally:
            upstream.close()
        if started or failure is None:
            return None
        # Nothing of an answer reached the client: it is told why, never left with nothing.
        if isinstance(failure, BadRequest):
            raise failure
        if isinstance(failure, TimeoutError):
            return await self.refuse(
                504, "Gateway Timeout", f"{dest} did not answer: {failure}", UNREACHABLE
            )
        if isinstance(failure, asyncio.LimitOverrunError):
            failure = ValueError(f"its response head is longer than {MAX_HEAD} bytes")
        elif isinstance(failure, asyncio.IncompleteReadError):
            failure = ValueError("it closed the connection")
        return await self.refuse(
            502, "Bad Gateway", f"{dest} sent no answer: {failure}", UNREACHABLE
        )

    async def send_body(self, upstream: Upstream, length: int | None, idle: Idle) -> None:
        """The request's head (written already) and body to the server. A server that stops
        reading them — it answered early and closed — still has its answer relayed; a body
        cut short or framed wrong is the client's :class:`BadRequest`."""
        try:
            await upstream.drain()
            await copy_body(self.reader, upstream, length, idle)
        except Unread:
            pass
        except asyncio.IncompleteReadError:
            raise BadRequest("the request body ended before its framing said") from None
        except asyncio.LimitOverrunError:
            raise BadRequest(f"a chunk size line is longer than {MAX_HEAD} bytes") from None

    async def tunnel(self, head: Head) -> None:
        host, port = split_authority(head.target, None)
        dest = destination(host, port)
        addresses = await self.admit(host, port)
        if addresses is None:
            return
        allowed = f"{host} → {', '.join(addresses)}"
        try:
            upstream = await self.connect(addresses, port)
        except ConnectionError as e:
            self.record(dest, "allow", allowed)  # the decision, as for plain HTTP
            return await self.refuse(502, f"Bad Gateway: {e}", str(e), UNREACHABLE)
        self.writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        decided: list[bool] = []
        idle = Idle()
        try:
            await relay(
                [
                    self.client_to_server(host, dest, allowed, upstream, idle, decided),
                    copy_stream(upstream, self.writer, idle),
                ],
                idle,
                IDLE_TIMEOUT,
            )
        finally:
            if not decided:  # the client sent nothing: it reached the host all the same
                self.record(dest, "allow", allowed)
            upstream.close()

    async def client_to_server(
        self,
        host: str,
        dest: str,
        allowed: str,
        up: Upstream,
        idle: Idle,
        decided: list[bool],
    ) -> None:
        """The tunnel's client side, whose first bytes are checked before any reaches the server
        (a server that stops reading ends only this side: what it sends still reaches the client)."""
        data = await self.reader.read(65536)
        problem = None
        if data[:1] == b"\x16":  # a TLS handshake record
            try:
                complete, name = client_hello_sni(data)
                while not complete:
                    more = await self.reader.read(65536)
                    if not more:
                        raise asyncio.IncompleteReadError(data, None)
                    data += more
                    complete, name = client_hello_sni(data)
                if name is not None and normal_host(name) != normal_host(host):
                    problem = f"TLS SNI {name} differs from the CONNECT host {host}"
            except ValueError as e:
                problem = f"{e}; a TLS tunnel must start with one well-formed ClientHello"
        decided.append(True)
        if problem is not None:
            self.record(dest, "deny", problem)
            raise Refused(problem)
        self.record(dest, "allow", allowed)
        if not data:
            return
        try:
            up.write(data)
            await up.drain()
            await copy_stream(self.reader, up, idle)
        except Unread:
            pass
