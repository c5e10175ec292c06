"""The egress proxy's connections, run in this process so a race can be pinned: a server
that answered and reset the connection before the proxy wrote the request (its right, when
it will not read a body) still has its answer reach the client, on plain HTTP and through a
tunnel. (Under load this was a real proxy's empty answer: tests/unit/test_egress_process.py.)
"""

from __future__ import annotations

import asyncio
import select
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from activities.sandbox import temporal_ports
from activities.sandbox.egress_connection import Connection
from activities.sandbox.egress_http import Upstream
from activities.sandbox.egress_policy import Policy
from activities.sandbox.egress_server import Proxy

TOO_LARGE = b"HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\n\r\ntoo big\n"


@contextmanager
def answered_and_reset(answer: bytes) -> Iterator[socket.socket]:
    """The proxy's end of a connection whose server already sent ``answer`` and closed with a
    byte it had not read: the reset is there before the proxy writes anything."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        ours = socket.create_connection(listener.getsockname())
        theirs, _ = listener.accept()
    ours.sendall(b"x")  # unread by the server: its close resets the connection
    assert select.select([theirs], [], [], 5)[0]
    theirs.sendall(answer)
    theirs.close()
    poll, deadline = select.poll(), time.monotonic() + 5
    poll.register(ours, select.POLLIN)
    while not any(events & select.POLLHUP for _, events in poll.poll(100)):
        assert time.monotonic() < deadline, "no reset came"  # a plain close hangs up one way
        time.sleep(0.01)
    try:
        yield ours
    finally:
        ours.close()


async def through_proxy(
    monkeypatch: pytest.MonkeyPatch, server: socket.socket, request: bytes
) -> bytes:
    """All a client sending ``request`` through a proxy endpoint is answered, the proxy's
    connection to the server (any destination) being ``server``."""

    async def connect(self: Connection, addresses: list[str], port: int) -> Upstream:
        return Upstream(server)

    monkeypatch.setattr(Connection, "connect", connect)
    proxy = Proxy(lambda _: None, temporal_ports.Discovery("127.0.0.1:1", "http://127.0.0.1:1"))
    policy = Policy.from_rules(["127.0.0.1:9"], [], any_host=True, ports=None)
    opened = await proxy.open("unix", policy.wire())
    try:
        reader, writer = await asyncio.open_unix_connection(opened["path"])
        writer.write(request)
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        return answer
    finally:
        await proxy.shutdown()


async def test_an_answer_sent_before_the_server_reset_the_connection_reaches_the_client(
    monkeypatch: pytest.MonkeyPatch,
):
    upload = (
        b"POST http://127.0.0.1:9/upload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n0\r\n\r\n"
    )
    second = b"GET http://127.0.0.1:9/two HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n"
    with answered_and_reset(TOO_LARGE) as server:
        answer = await through_proxy(monkeypatch, server, upload + second)
    assert answer == (
        b"HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big\n"
    )


async def test_what_a_server_sent_before_it_reset_a_tunnel_reaches_the_client(
    monkeypatch: pytest.MonkeyPatch,
):
    connect = b"CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n"
    with answered_and_reset(b"bye from the server") as server:
        answer = await through_proxy(monkeypatch, server, connect + b"ping")
    assert answer == b"HTTP/1.1 200 Connection established\r\n\r\nbye from the server"
