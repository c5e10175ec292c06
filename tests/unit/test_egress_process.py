"""The egress proxy as its own process, judged by what reaches the network and what the
permission log says: addresses decide (names resolved by the real resolver), a flood of
one endpoint neither fails another nor touches the worker's descriptors, one request per
connection, TLS SNI must match CONNECT, tokens and users decide who may use an endpoint,
and every decision is delivered before ``serving()`` ends. (A stock Temporal dev server's
ports: tests/integration/test_egress_flood.py.)"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from activities.sandbox import egress
from activities.sandbox.bwrap import bwrap
from activities.sandbox.egress import EgressProcess, Policy
from activities.sandbox.egress_connection import MAX_CONNECTIONS

Decision = tuple[str, str, str]


class _Seen(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a second request would be read, if sent

    def do_GET(self):
        self.server.seen.append((self.path, self.headers.get("Host")))  # type: ignore[attr-defined]
        body = b"hello"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    # A POST is answered without its body read, as a server may: the connection it closes is
    # reset, writing the rest of the body fails, and its answer must reach the client still.
    do_POST = do_GET

    def log_message(self, *a):
        pass


@contextmanager
def site() -> Iterator[ThreadingHTTPServer]:
    """A local web server that remembers every request it was sent (path, Host)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Seen)
    server.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def port_of(server: ThreadingHTTPServer) -> int:
    return int(server.server_address[1])


def exact(*rules: str) -> Policy:
    return Policy.from_rules(list(rules), [], any_host=True, ports=None)


def get(proxy: str, url: str) -> tuple[int, str]:
    with httpx.Client(proxy=proxy, trust_env=False, timeout=20, verify=False) as client:
        response = client.get(url)
        return response.status_code, response.text


def raw(where: str | tuple[str, int], data: bytes, timeout: float = 20, end: bool = False) -> bytes:
    """Send ``data`` on one connection (a Unix socket path or host:port), then with ``end``
    say that is all (half-close); all it answers."""
    family = socket.AF_UNIX if isinstance(where, str) else socket.AF_INET
    with socket.socket(family) as s:
        s.settimeout(timeout)
        s.connect(where)
        s.sendall(data)
        if end:
            s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def tcp(url: str) -> tuple[tuple[str, int], str]:
    """(address, Proxy-Authorization header line) of a TCP endpoint URL."""
    parts = urlsplit(url)
    token = base64.b64encode(f"{parts.username}:{parts.password}".encode()).decode()
    return (parts.hostname or "", parts.port or 0), f"Proxy-Authorization: Basic {token}\r\n"


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def resolver_process(tmp_path: Path, hosts: str) -> EgressProcess:
    """A proxy process whose real resolver reads ``hosts`` as /etc/hosts (a mount namespace
    of its own): names resolve as a hostile DNS answer would, with no resolver mocked."""
    if bwrap() is None:
        pytest.skip("bubblewrap is needed to give the proxy its own /etc/hosts")
    (tmp_path / "hosts").write_text(hosts)
    mount = [str(bwrap()), "--dev-bind", "/", "/", "--ro-bind", str(tmp_path / "hosts")]
    command = [*mount, "/etc/hosts", "--die-with-parent", sys.executable, "-m"]
    return EgressProcess(
        ("127.0.0.1:1", "http://127.0.0.1:1", ()), [*command, "activities.sandbox.egress_server"]
    )


HOSTS = """127.0.0.1 localhost
169.254.169.254 meta.evil.test
::ffff:169.254.169.254 meta6.evil.test
fe80::1 fe80.evil.test
93.184.215.14 mixed.evil.test
169.254.169.254 mixed.evil.test
10.1.2.3 private.evil.test
"""


async def test_names_resolving_to_metadata_addresses_are_refused_even_with_exact_rules(tmp_path):
    proxy = resolver_process(tmp_path, HOSTS)
    names = ["meta.evil.test", "meta6.evil.test", "fe80.evil.test", "mixed.evil.test"]
    rules = [*names, *(f"{n}:80" for n in names), *(f"{n}:443" for n in names)]
    decisions: list[Decision] = []
    try:
        async with proxy.endpoint(exact(*rules), lambda *d: decisions.append(d), "tcp") as opened:
            for name in names:
                status, text = await asyncio.to_thread(get, opened["url"], f"http://{name}/latest/")
                assert status == 403 and "no rule can allow it" in text, (name, text)
                with pytest.raises(httpx.ProxyError, match="no rule can allow it"):
                    await asyncio.to_thread(get, opened["url"], f"https://{name}/")
    finally:
        proxy.stop()
    denied = {d[0] for d in decisions if d[1] == "deny"}
    assert denied == {f"{n}:{p}" for n in names for p in (80, 443)}
    assert not [d for d in decisions if d[1] == "allow"]
    assert all("169.254.169.254" in d[2] or "fe80::1" in d[2] for d in decisions)


async def test_a_private_answer_needs_an_exact_host_port_rule_a_name_rule_is_not_enough(tmp_path):
    proxy = resolver_process(tmp_path, HOSTS)
    decisions: list[Decision] = []
    try:
        for rule, opened_up in (("private.evil.test", False), ("private.evil.test:9", True)):
            async with proxy.endpoint(exact(rule), lambda *d: decisions.append(d), "tcp") as opened:
                status, text = await asyncio.to_thread(
                    get, opened["url"], "http://private.evil.test:9/"
                )
                # 10.1.2.3 does not answer here: allowed means the proxy tried (502), not 403.
                assert (status != 403) is opened_up, (rule, status, text)
    finally:
        proxy.stop()
    refused = decisions[0][2]
    assert "10.1.2.3 is a private network address" in refused
    assert "--allow-host private.evil.test:9" in refused
    assert (
        '"network(domain:private.evil.test:9)" to "permissions": {"allow": [...]} in the '
        "worker's settings, ~/.xsky/settings.json" in refused
    )
    assert [d[1] for d in decisions] == ["deny", "allow"]


async def test_a_flood_of_one_endpoint_neither_fails_another_nor_uses_the_workers_descriptors():
    with site() as web:
        before = open_fds()
        flooded: list[Decision] = []
        async with (
            egress.serving(
                exact(f"127.0.0.1:{port_of(web)}"), lambda *d: flooded.append(d), unix=True
            ) as path,
            egress.serving(exact(f"127.0.0.1:{port_of(web)}"), None) as neighbour,
        ):
            flood = FLOOD.format(path=path, count=2500)
            flooder = await asyncio.create_subprocess_exec(
                sys.executable, "-c", flood, stdout=subprocess.PIPE
            )
            assert flooder.stdout is not None
            assert (await flooder.stdout.readline()).startswith(b"flooding")
            pid = egress.process().pid
            assert pid is not None
            for _ in range(10):
                assert await asyncio.to_thread(
                    get, neighbour, f"http://127.0.0.1:{port_of(web)}/"
                ) == (200, "hello")
                assert len(os.listdir(f"/proc/{pid}/fd")) <= 2 * MAX_CONNECTIONS + 64
                assert open_fds() <= before + 8
            opened = int((await flooder.stdout.readline()).split()[1])
            await flooder.wait()
        assert opened > 2 * MAX_CONNECTIONS  # the flood was real: far more than the cap got in line
        assert any("refused at once" in d[2] for d in flooded)
        assert open_fds() <= before + 8


# Opens connections to a Unix socket until ``count`` are open (its own descriptors bounded
# by setrlimit), half-sending a request on each, and holds them for a few seconds.
FLOOD = textwrap.dedent(
    """
    import resource, socket, time
    resource.setrlimit(resource.RLIMIT_NOFILE, ({count} + 100, {count} + 100))
    held, deadline = [], time.monotonic() + 20
    print("flooding", flush=True)
    while len(held) < {count} and time.monotonic() < deadline:
        s = socket.socket(socket.AF_UNIX)
        s.setblocking(False)
        try:
            s.connect({path!r})
            s.send(b"GET http://flood.test/ HTTP/1.1\\r\\n")
            held.append(s)
        except OSError:
            s.close()
            time.sleep(0.001)
    time.sleep(4)
    print("opened", len(held), flush=True)
    """
)


async def test_a_second_request_on_one_connection_is_never_forwarded():
    with site() as good, site() as other:
        policy = exact(f"127.0.0.1:{port_of(good)}", f"localhost:{port_of(other)}")
        decisions: list[Decision] = []
        async with egress.serving(policy, lambda *d: decisions.append(d)) as url:
            where, auth = tcp(url)
            first = f"GET http://127.0.0.1:{port_of(good)}/one HTTP/1.1\r\nHost: 127.0.0.1:{port_of(good)}\r\n{auth}\r\n"
            second = f"GET http://localhost:{port_of(other)}/two HTTP/1.1\r\nHost: localhost:{port_of(other)}\r\n{auth}\r\n"
            body = f"POST http://127.0.0.1:{port_of(good)}/three HTTP/1.1\r\nContent-Length: 5\r\n{auth}\r\nhello"
            chunked = f"POST http://127.0.0.1:{port_of(good)}/four HTTP/1.1\r\nTransfer-Encoding: chunked\r\n{auth}\r\n5\r\nhello\r\n0\r\n\r\n"
            pipelined = f"GET /two HTTP/1.1\r\nHost: 127.0.0.1:{port_of(good)}\r\n\r\n"
            for request in (first + second, body + second, chunked + second, first + pipelined):
                answer = await asyncio.to_thread(raw, where, request.encode())
                assert answer.startswith(b"HTTP/1.1 200") and answer.count(b"HTTP/1.") == 1, answer
                assert b"\r\nConnection: close\r\n" in answer  # the client is told: no second one
            wrong_host = f"GET http://127.0.0.1:{port_of(good)}/five HTTP/1.1\r\nHost: localhost:{port_of(other)}\r\n{auth}\r\n"
            both = f"POST http://127.0.0.1:{port_of(good)}/six HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n{auth}\r\n0\r\n\r\n"
            for request in (wrong_host, both):
                assert (await asyncio.to_thread(raw, where, request.encode())).startswith(
                    b"HTTP/1.1 400"
                )
        assert [p for p, _ in good.seen] == ["/one", "/three", "/four", "/one"]  # type: ignore[attr-defined]
        assert other.seen == []  # type: ignore[attr-defined]
    assert {d[0] for d in decisions} == {f"127.0.0.1:{port_of(good)}"}
    assert any("Host header localhost" in d[2] and d[1] == "deny" for d in decisions)
    assert any("both Transfer-Encoding and Content-Length" in d[2] for d in decisions)


def client_hello(name: str) -> bytes:
    """The first bytes a TLS client sends, naming ``name`` in its SNI."""
    import ssl

    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname=name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


class Listener:
    """A TCP server that keeps what each connection sent it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.settimeout(3)
            data = b""
            try:
                while chunk := conn.recv(65536):
                    data += chunk
            except OSError:
                pass
            self.received.append(data)
            conn.close()


async def test_a_tls_client_hello_must_name_the_connect_host():
    upstream = Listener()
    decisions: list[Decision] = []
    async with egress.serving(
        exact(f"localhost:{upstream.port}"), lambda *d: decisions.append(d)
    ) as url:
        where, auth = tcp(url)
        connect = f"CONNECT localhost:{upstream.port} HTTP/1.1\r\n{auth}\r\n".encode()
        for name in ("evil.example", "LOCALHOST."):
            await asyncio.to_thread(raw, where, connect + client_hello(name), 5)
    await asyncio.sleep(0.5)
    upstream.sock.close()
    assert len(upstream.received) == 2  # both reached the host; only the matching hello was sent on
    assert [len(r) > 0 for r in upstream.received] == [False, True]
    assert (
        f"localhost:{upstream.port}",
        "deny",
        "TLS SNI evil.example differs from the CONNECT host localhost",
    ) in decisions
    assert [d[1] for d in decisions] == ["deny", "allow"]


async def test_a_client_is_told_why_when_there_is_no_answer_to_relay():
    hangup, quiet = socket.create_server(("127.0.0.1", 0)), Listener()  # closes; never answers

    def hang_up() -> None:
        while True:
            try:
                hangup.accept()[0].close()
            except OSError:
                return

    threading.Thread(target=hang_up, daemon=True).start()
    ports = (hangup.getsockname()[1], quiet.port)
    async with egress.serving(exact(*(f"127.0.0.1:{p}" for p in ports)), None) as url:
        where, auth = tcp(url)
        closed = f"GET http://127.0.0.1:{ports[0]}/ HTTP/1.1\r\n{auth}\r\n"
        answer = await asyncio.to_thread(raw, where, closed.encode())
        assert answer.startswith(b"HTTP/1.1 502") and b"sent no answer" in answer, answer
        # A body framed wrong after its head went out is the client's error, and said so.
        framed = f"POST http://127.0.0.1:{ports[1]}/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
        answer = await asyncio.to_thread(raw, where, f"{framed}{auth}\r\nzz\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 400") and b"not a chunk size line" in answer, answer
        cut = f"GET http://127.0.0.1:{ports[0]}/ HTTP/1.1\r\n{auth}".encode()  # no blank line
        answer = await asyncio.to_thread(raw, where, cut, 20, True)
        assert answer.startswith(b"HTTP/1.1 400") and b"ended before its blank line" in answer
    hangup.close()
    quiet.sock.close()


async def test_a_refused_upload_is_read_to_its_end_so_the_refusal_is_not_lost_to_a_reset():
    size = 4 << 20  # far more than the proxy reads ahead: closing on it unread would reset
    async with egress.serving(exact(), None) as url:
        where, auth = tcp(url)
        upload = f"POST http://10.9.9.9/ HTTP/1.1\r\nContent-Length: {size}\r\n{auth}\r\n"
        for _ in range(3):
            answer = await asyncio.to_thread(raw, where, upload.encode() + b"u" * size)
            assert answer.startswith(b"HTTP/1.1 403") and b"refused by xsky" in answer, answer


async def test_every_decision_is_delivered_before_serving_ends():
    upstream = Listener()
    decisions: list[Decision] = []
    async with egress.serving(
        exact(f"127.0.0.1:{upstream.port}"), lambda *d: decisions.append(d)
    ) as url:
        where, auth = tcp(url)
        refused = [
            f"GET http://10.9.{i // 250}.{i % 250}/ HTTP/1.1\r\n{auth}\r\n".encode()
            for i in range(300)
        ]
        answers = await asyncio.gather(*(asyncio.to_thread(raw, where, r) for r in refused))
        assert all(a.startswith(b"HTTP/1.1 403") for a in answers)
        # A tunnel still open (its client silent) when the tool call ends is recorded too.
        tunnel = socket.create_connection(where)
        tunnel.sendall(f"CONNECT 127.0.0.1:{upstream.port} HTTP/1.1\r\n{auth}\r\n".encode())
        assert tunnel.recv(100).startswith(b"HTTP/1.1 200")
    tunnel.close()
    upstream.sock.close()
    assert len([d for d in decisions if d[1] == "deny"]) == 300
    assert (f"127.0.0.1:{upstream.port}", "allow", "127.0.0.1 → 127.0.0.1") in decisions


async def test_tcp_endpoints_want_their_own_token_and_the_browser_socket_a_sessions():
    with site() as web:
        target = f"http://127.0.0.1:{port_of(web)}/"
        async with (
            egress.serving(exact(f"127.0.0.1:{port_of(web)}"), None) as url,
            egress.serving(Policy(), None) as other,
        ):
            where, _ = tcp(url)
            for auth in ("", tcp(other)[1], "Proxy-Authorization: Basic ZTE6bm9wZQ==\r\n"):
                answer = await asyncio.to_thread(
                    raw, where, f"GET {target} HTTP/1.1\r\n{auth}\r\n".encode()
                )
                assert answer.startswith(b"HTTP/1.1 407") and b"Proxy-Authenticate: Basic" in answer
        sock = str(await egress.browser_socket())
        seen: list[Decision] = []
        async with egress.browser_session(
            exact(f"127.0.0.1:{port_of(web)}"), lambda *d: seen.append(d)
        ) as (user, password):
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            assert (
                await asyncio.to_thread(raw, sock, f"GET {target} HTTP/1.1\r\n\r\n".encode())
            ).startswith(b"HTTP/1.1 407")
            answer = await asyncio.to_thread(
                raw,
                sock,
                f"GET {target} HTTP/1.1\r\nProxy-Authorization: Basic {token}\r\n\r\n".encode(),
            )
            assert answer.startswith(b"HTTP/1.0 200") or answer.startswith(b"HTTP/1.1 200"), answer
        late = await asyncio.to_thread(
            raw,
            sock,
            f"GET {target} HTTP/1.1\r\nProxy-Authorization: Basic {token}\r\n\r\n".encode(),
        )
        assert late.startswith(b"HTTP/1.1 407")  # the session ended with its tool call
        assert seen == [(f"127.0.0.1:{port_of(web)}", "allow", "127.0.0.1 → 127.0.0.1")]
