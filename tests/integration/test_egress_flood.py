"""The egress proxy among real neighbours.

A sandboxed command floods its egress endpoint while a neighbouring agent's http_get goes
out through another: the neighbour is served, and the flood costs the worker none of its
own file descriptors (the proxy is a process of its own, with its own limits). A stock
``temporal server start-dev``, on ports of its own choosing, is out of reach on every one
of them, whatever the rules say.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import ssl
import subprocess
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from activities.artifacts import ArtifactStore
from activities.browser import BrowserPool
from activities.sandbox import egress
from activities.sandbox.bwrap import ready
from activities.sandbox.egress import EgressProcess, Policy
from activities.sandbox.egress_connection import MAX_CONNECTIONS
from activities.tools import ToolContext
from activities.tools.http import http_get
from activities.tools.shell import shell
from cli.devserver import free_port, is_listening, temporal_binary
from tests.integration.eventually import eventually
from tests.unit.test_egress_process import Decision, exact, get, port_of, site
from tests.unit.test_tools import running_with

pytestmark = pytest.mark.integration

# Inside the sandbox 127.0.0.1:3128 is the relay to the command's egress endpoint: open as
# many connections as the sandbox lets it, each sending half a request, and hold them.
FLOOD = textwrap.dedent(
    """
    import socket, time
    held, deadline = [], time.monotonic() + 12
    while len(held) < 3000 and time.monotonic() < deadline:
        try:
            s = socket.create_connection(("127.0.0.1", 3128), timeout=1)
            s.send(b"GET http://flood.example/ HTTP/1.1\\r\\n")
            held.append(s)
        except OSError:
            time.sleep(0.01)
    print("held", len(held), flush=True)
    time.sleep(3)
    """
)


def context(tmp_path: Path, name: str, **kw: object) -> ToolContext:
    ws = tmp_path / name
    ws.mkdir()
    return ToolContext(
        "run-flood",
        name,
        ws,
        ArtifactStore(tmp_path / "artifacts"),
        BrowserPool(),
        lambda note: None,
        **kw,
    )  # type: ignore[arg-type]


@pytest.mark.skipif(ready() is not None, reason=f"no OS sandbox here: {ready()}")
async def test_a_flooding_sandboxed_command_does_not_starve_a_neighbouring_http_get(tmp_path):
    with site() as web:
        await flood_while_a_neighbour_fetches(tmp_path, port_of(web))


async def flood_while_a_neighbour_fetches(tmp_path: Path, port: int) -> None:
    flood_log: list[Decision] = []
    neighbour_log: list[Decision] = []
    flooder = context(
        tmp_path,
        "flooder",
        command_network=Policy.from_rules(["flood.example"], [], any_host=False, ports=None),
        record=lambda *d: flood_log.append(d),
    )
    neighbour = context(
        tmp_path,
        "neighbour",
        egress=exact(f"127.0.0.1:{port}"),
        record=lambda *d: neighbour_log.append(d),
    )
    async with egress.serving(Policy(), None):  # the proxy process is up before counting
        before = len(os.listdir("/proc/self/fd"))
    flood = asyncio.create_task(shell(flooder, {"command": f"python3 -c '{FLOOD}'", "timeout": 60}))
    pid = egress.process().pid
    assert pid is not None

    def flooding() -> None:
        """The flood is under way: the endpoint's cap of connections is open in the proxy."""
        if flood.done():
            pytest.fail(f"the flood ended before the neighbour's turn: {flood.result()}")
        held = len(os.listdir(f"/proc/{pid}/fd"))
        assert held >= MAX_CONNECTIONS, f"{held} descriptors open in the proxy"

    await eventually(flooding, 30)
    for _ in range(10):
        out = await http_get(neighbour, {"url": f"http://127.0.0.1:{port}/"})
        assert out.text == "hello"
        assert len(os.listdir(f"/proc/{pid}/fd")) <= 3 * MAX_CONNECTIONS + 64
        assert len(os.listdir("/proc/self/fd")) <= before + 16
    result = await flood
    held = int(result.text.split()[-1])
    assert held > MAX_CONNECTIONS  # the flood was real: more than the endpoint's cap got in
    assert any("refused at once" in d[2] for d in flood_log), flood_log[:5]
    assert neighbour_log == [(f"127.0.0.1:{port}", "allow", "127.0.0.1 → 127.0.0.1")] * 10
    assert len(os.listdir("/proc/self/fd")) <= before + 16


@contextmanager
def stock_dev_server(tmp_path: Path) -> Iterator[tuple[int, set[int]]]:
    """``temporal server start-dev`` on its own layout (ports it is given or picks itself, not
    xsky's): (gRPC port, the ports it was told)."""
    grpc, http, ui = free_port(), free_port(), free_port()
    argv = [temporal_binary(), "server", "start-dev", "--port", str(grpc), "--http-port", str(http)]
    argv += ["--ui-port", str(ui), "--db-filename", str(tmp_path / "t.db"), "--log-level", "error"]
    server = subprocess.Popen(
        argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while not all(is_listening("127.0.0.1", p) for p in (grpc, http, ui)):
            assert server.poll() is None and time.monotonic() < deadline, (
                "the dev server did not start"
            )
            time.sleep(0.2)
        yield grpc, {grpc, http, ui}
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()


def listening_ports(pid: int) -> set[int]:
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True).stdout
    return {
        int(line.split()[3].rsplit(":", 1)[1]) for line in out.splitlines() if f"pid={pid}," in line
    }


async def test_every_port_of_a_stock_dev_server_is_refused_even_with_exact_rules(tmp_path):
    with stock_dev_server(tmp_path) as (grpc, told), site() as ordinary:
        pids = running_with(f"--port {grpc}")
        ports = set().union(*(listening_ports(p) for p in pids)) or told
        assert told <= ports  # and its metrics and internal services' ports
        # Neither the UI URL nor xsky's layout says where they are: only discovery can.
        proxy = EgressProcess((f"localhost:{grpc}", "http://localhost:1", ()))
        rules = [
            f"{h}:{p}" for p in ports | {port_of(ordinary)} for h in ("127.0.0.1", "localhost")
        ]
        decisions: list[Decision] = []
        try:
            async with proxy.endpoint(
                exact(*rules), lambda *d: decisions.append(d), "tcp"
            ) as opened:
                for port in sorted(ports):
                    for host in ("127.0.0.1", "localhost"):
                        status, text = await asyncio.to_thread(
                            get, opened["url"], f"http://{host}:{port}/api/v1/namespaces"
                        )
                        assert status == 403 and "Temporal server" in text, (host, port, text)
                status, text = await asyncio.to_thread(
                    get, opened["url"], f"http://127.0.0.1:{port_of(ordinary)}/"
                )
                assert (status, text) == (200, "hello")
        finally:
            proxy.stop()
    assert len([d for d in decisions if d[1] == "deny"]) == 2 * len(ports)


async def test_https_goes_through_a_tunnel_whose_client_hello_names_its_host(tmp_path):
    """Real TLS end to end: CONNECT, a ClientHello naming the CONNECT host, the page."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl makes the test server's certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost"]
        + ["-addext", "subjectAltName=DNS:localhost"],
        check=True,
        capture_output=True,
    )
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    with site() as web:
        web.socket = tls.wrap_socket(web.socket, server_side=True)
        decisions: list[Decision] = []
        async with egress.serving(
            exact(f"localhost:{port_of(web)}"), lambda *d: decisions.append(d)
        ) as url:
            assert await asyncio.to_thread(get, url, f"https://localhost:{port_of(web)}/") == (
                200,
                "hello",
            )
    assert decisions == [(f"localhost:{port_of(web)}", "allow", decisions[0][2])]
