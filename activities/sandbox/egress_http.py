"""The egress proxy's wire handling: request heads, body framing, TLS ClientHellos, relays.

Strict on purpose: what two parsers could read differently (folded or bare-LF header
lines, both Transfer-Encoding and Content-Length, codings other than chunked, repeated
TLS extensions) is refused, so what the proxy checked is what the server receives.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import re
import socket
import time
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Protocol

MAX_HEAD = 64 * 1024
MAX_HELLO = 64 * 1024
TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Headers about one hop only: the proxy's own, and those that would keep a connection open.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "te",
        "trailer",
        "upgrade",
    }
)


class BadRequest(ValueError):
    """A request the proxy will not pass on; the message says what was wrong."""


@dataclass
class Head:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]

    def values(self, name: str) -> list[str]:
        return [v for n, v in self.headers if n.lower() == name]


def parse_head(raw: bytes) -> Head:
    """The request line and headers of ``raw`` (which ends with the blank line)."""
    lines = raw.decode("latin-1")[:-4].split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not TOKEN.fullmatch(parts[0]) or parts[2] not in ("HTTP/1.0", "HTTP/1.1"):
        raise BadRequest(
            f"{lines[0][:100]!r} is not an HTTP/1.x request line (METHOD TARGET HTTP/1.1)"
        )
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not TOKEN.fullmatch(name) or "\n" in line or "\r" in line:
            raise BadRequest(f"the header line {line[:100]!r} is not 'Name: value' on one line")
        headers.append((name, value.strip(" \t")))
    return Head(parts[0], parts[1], parts[2], headers)


def split_authority(text: str, default: int | None) -> tuple[str, int]:
    """``host:port``, ``[v6]:port`` or (with a default port) ``host`` → (host, port)."""
    host, port = text, ""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest and not rest.startswith(":"):
            raise BadRequest(f"{text!r} is not host:port")
        port = rest[1:]
    elif text.count(":") == 1:
        host, port = text.split(":")
    if not port and default is not None:
        return host, default
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadRequest(f"{text!r} is not host:port with a port from 1 to 65535")
    return host, int(port)


def body_framing(head: Head) -> int | None:
    """The request body's length (None: chunked), refusing framings two parsers could disagree on."""
    encodings = [c.strip().lower() for v in head.values("transfer-encoding") for c in v.split(",")]
    lengths = {v.strip() for item in head.values("content-length") for v in item.split(",")}
    if encodings and lengths:
        raise BadRequest("a request with both Transfer-Encoding and Content-Length is refused")
    if encodings:
        if encodings != ["chunked"]:
            raise BadRequest("only Transfer-Encoding: chunked is accepted for a request body")
        return None
    if len(lengths) > 1 or not all(v.isdigit() for v in lengths):
        raise BadRequest(f"Content-Length {', '.join(sorted(lengths))} is not one whole number")
    return int(lengths.pop()) if lengths else 0


def basic_credentials(head: Head) -> tuple[str, str] | None:
    """(username, password) of a ``Proxy-Authorization: Basic`` header."""
    for value in head.values("proxy-authorization"):
        scheme, _, encoded = value.partition(" ")
        if scheme.lower() == "basic":
            with contextlib.suppress(ValueError):
                user, sep, password = (
                    base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
                )
                if sep:
                    return user, password
    return None


def response(status: int, reason: str, body: str = "", headers: Iterable[str] = ()) -> bytes:
    """A complete response that closes the connection; ``reason`` travels in the status line
    too (a refused CONNECT's body is never shown by most clients)."""
    phrase = "".join(c if " " <= c <= "~" else " " for c in reason)[:400]
    data = (body + "\n").encode() if body else b""
    head = [f"HTTP/1.1 {status} {phrase}", "Content-Type: text/plain; charset=utf-8"]
    head += [f"Content-Length: {len(data)}", "Connection: close", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


class Idle:
    """When bytes last moved on a connection, in either direction."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def touch(self) -> None:
        self.last = time.monotonic()

    def for_seconds(self) -> float:
        return time.monotonic() - self.last


class Source(Protocol):
    """What bytes are read from: the client's stream, or an :class:`Upstream`."""

    async def read(self, n: int) -> bytes: ...

    async def readuntil(self, separator: bytes) -> bytes: ...


class Sink(Protocol):
    """What bytes are written to: the client's stream, or an :class:`Upstream`."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def can_write_eof(self) -> bool: ...

    def write_eof(self) -> None: ...


class Unread(ConnectionError):
    """The server no longer reads what is sent to it (it answered, or gave up, and closed)."""


class Upstream:
    """The connection to a server, its two directions apart: a server that answers and closes
    before it read the whole request (its right) makes writing to it fail, and what it
    answered is read all the same. (An asyncio stream would drop the answer, read or not:
    a failed write ends its transport, and a stream's error comes before its buffered bytes.)
    """

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.loop = asyncio.get_running_loop()
        self.received = bytearray()
        self.unsent = bytearray()
        self.failed: OSError | None = None  # why writing to the server stopped

    async def _receive(self, n: int = 65536) -> bytes:
        # What the server sent before it reset the connection comes first, then the reset.
        return await self.loop.sock_recv(self.sock, n)

    async def read(self, n: int) -> bytes:
        if not self.received:
            return await self._receive(n)
        data = bytes(self.received[:n])
        del self.received[:n]
        return data

    async def readuntil(self, separator: bytes) -> bytes:
        start = 0
        while (at := self.received.find(separator, start)) < 0:
            if len(self.received) > MAX_HEAD:
                raise asyncio.LimitOverrunError(
                    f"no {separator!r} in the first {MAX_HEAD} bytes", len(self.received)
                )
            start = max(0, len(self.received) - len(separator) + 1)
            data = await self._receive()
            if not data:
                partial = bytes(self.received)
                self.received.clear()
                raise asyncio.IncompleteReadError(partial, None)
            self.received += data
        end = at + len(separator)
        data = bytes(self.received[:end])
        del self.received[:end]
        return data

    def write(self, data: bytes) -> None:
        if self.failed is None:
            self.unsent += data

    async def drain(self) -> None:
        if self.failed is None and self.unsent:
            data = bytes(self.unsent)
            self.unsent.clear()
            try:
                await self.loop.sock_sendall(self.sock, data)
            except OSError as e:
                self.failed = e
        if self.failed is not None:
            raise Unread(f"the server stopped reading the request: {self.failed}")

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        if self.failed is None:
            self.sock.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.sock.close()


async def copy_stream(src: Source, dst: Sink, idle: Idle) -> None:
    """Everything from ``src`` to ``dst``, then half-close ``dst``."""
    while data := await src.read(65536):
        idle.touch()
        dst.write(data)
        await dst.drain()
    if dst.can_write_eof():
        with contextlib.suppress(OSError):
            dst.write_eof()


async def copy_response(src: Source, dst: Sink, idle: Idle, started: list[bool]) -> None:
    """The server's answer, its final head saying ``Connection: close`` (the client must not
    send another request on this connection: it would not be forwarded), then the rest.
    ``started`` is made true once a byte of it is on its way to the client."""
    while True:
        # Lines end at a bare LF too, as the clients read them (h11, Chromium): "X-Foo: a\n
        # X-Xsky-Egress: refused" is two headers there, so it is two here, and the mark goes.
        lines = _LINE_END.split((await src.readuntil(b"\r\n\r\n"))[:-4])
        idle.touch()
        started[:] = [True]
        status = lines[0].split(b" ")
        interim = len(status) > 1 and status[1].startswith(b"1") and status[1] != b"101"
        if interim:  # 100 Continue and the like: the final answer follows
            dst.write(b"\r\n".join(lines) + b"\r\n\r\n")
            continue
        kept = [h for h in lines[1:] if h.split(b":", 1)[0].strip().lower() not in _CONNECTION]
        dst.write(b"\r\n".join([lines[0], *kept, b"Connection: close"]) + b"\r\n\r\n")
        await dst.drain()
        break
    await copy_stream(src, dst, idle)


# Taken out of a server's answer: the connection's own, and the proxy's mark of its own refusals
# (a server sending it could word what reads as xsky's refusal, and have it read whole).
_CONNECTION = (b"connection", b"keep-alive", b"proxy-connection", b"x-xsky-egress")
_LINE_END = re.compile(rb"\r?\n")


async def copy_body(src: asyncio.StreamReader, dst: Sink, length: int | None, idle: Idle) -> None:
    """Exactly one request body: ``length`` bytes, or chunks re-framed canonically (no chunk
    extensions, no trailers), so nothing after it reaches the server."""
    if length is not None:
        while length:
            data = await src.read(min(65536, length))
            if not data:
                raise asyncio.IncompleteReadError(b"", length)
            length -= len(data)
            idle.touch()
            dst.write(data)
            await dst.drain()
        return
    while True:
        line = await src.readuntil(b"\r\n")
        size_text = line[:-2].split(b";", 1)[0].strip()
        if (
            not size_text
            or b"\n" in line[:-2]
            or not all(c in b"0123456789abcdefABCDEF" for c in size_text)
        ):
            raise BadRequest(f"{line[:40]!r} is not a chunk size line")
        size = int(size_text, 16)
        idle.touch()
        if size == 0:
            while await src.readuntil(b"\r\n") != b"\r\n":  # trailers end with a blank line
                pass
            dst.write(b"0\r\n\r\n")
            await dst.drain()
            return
        dst.write(b"%x\r\n" % size + await src.readexactly(size))
        if await src.readexactly(2) != b"\r\n":
            raise BadRequest("a chunk does not end with CRLF")
        dst.write(b"\r\n")
        await dst.drain()


async def relay(
    parts: list[Awaitable[None]], idle: Idle, timeout: float, until: int | None = None
) -> BaseException | None:
    """Run the copies until all end (or copy ``until`` ends), one fails, or nothing moved for
    ``timeout`` seconds; the rest are cancelled. The failure that ended it, if one did (an
    idle connection: TimeoutError)."""
    tasks = [asyncio.ensure_future(p) for p in parts]
    try:
        pending = set(tasks)
        while pending and not (until is not None and tasks[until].done()):
            done, pending = await asyncio.wait(
                pending, timeout=min(timeout, 5.0), return_when=asyncio.FIRST_COMPLETED
            )
            for t in tasks:
                if t in done and not t.cancelled() and t.exception() is not None:
                    return t.exception()
            if idle.for_seconds() > timeout:
                return TimeoutError(f"nothing moved for {timeout:g} seconds")
        return None
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def client_hello_sni(data: bytes) -> tuple[bool, str | None]:
    """(complete, server name) of the TLS ClientHello that ``data`` starts with.

    Raises ValueError when the bytes are not one well-formed ClientHello.
    """
    handshake, i = b"", 0
    while i + 5 <= len(data):
        length = int.from_bytes(data[i + 3 : i + 5], "big")
        if data[i] != 22 or not 0 < length <= 18432:
            raise ValueError("a TLS record other than a handshake came before the ClientHello")
        if i + 5 + length > len(data):
            break
        handshake += data[i + 5 : i + 5 + length]
        i += 5 + length
        if len(handshake) >= 4:
            if handshake[0] != 1:
                raise ValueError("the first TLS handshake message is not a ClientHello")
            need = 4 + int.from_bytes(handshake[1:4], "big")
            if len(handshake) >= need:
                return True, _server_name(handshake[4:need])
    if len(data) > MAX_HELLO:
        raise ValueError(f"the TLS ClientHello is longer than {MAX_HELLO} bytes")
    return False, None


def _server_name(hello: bytes) -> str | None:
    at = 0

    def take(n: int) -> bytes:
        nonlocal at
        if at + n > len(hello):
            raise ValueError("the TLS ClientHello is cut short")
        at += n
        return hello[at - n : at]

    take(2 + 32)  # legacy version, random
    take(take(1)[0])  # session id
    take(int.from_bytes(take(2), "big"))  # cipher suites
    take(take(1)[0])  # compression methods
    if at == len(hello):
        return None  # no extensions at all
    size = int.from_bytes(take(2), "big")
    end = at + size
    if end != len(hello):
        raise ValueError("the TLS ClientHello's extensions do not fill it exactly")
    seen: set[int] = set()
    name = None
    while at < end:
        kind = int.from_bytes(take(2), "big")
        body = take(int.from_bytes(take(2), "big"))
        if kind in seen:
            raise ValueError(f"the TLS ClientHello repeats extension {kind}")
        seen.add(kind)
        if kind == 0 and body:
            name = _host_name(body)
    return name


def _host_name(body: bytes) -> str:
    if int.from_bytes(body[:2], "big") != len(body) - 2 or len(body) < 5:
        raise ValueError("the TLS server_name extension is malformed")
    names, at = [], 2
    while at < len(body):
        kind, length = body[at], int.from_bytes(body[at + 1 : at + 3], "big")
        value = body[at + 3 : at + 3 + length]
        if len(value) != length:
            raise ValueError("the TLS server_name extension is cut short")
        if kind == 0:
            names.append(value)
        at += 3 + length
    if len(names) != 1:
        raise ValueError("the TLS server_name extension must carry exactly one host name")
    return names[0].decode("ascii")
