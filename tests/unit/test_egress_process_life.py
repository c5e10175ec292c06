"""The egress proxy as a process: it comes back after dying and dies with its worker, a tokenless endpoint serves only its user, and the browser goes out through it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from activities.sandbox import egress
from activities.sandbox.egress import Policy
from tests.unit.test_egress_process import (
    Decision,
    exact,
    get,
    port_of,
    site,
)


async def test_the_proxy_process_comes_back_after_dying_and_dies_with_its_worker(tmp_path):
    async with egress.serving(Policy(), None):
        pid = egress.process().pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    await asyncio.sleep(0.3)
    with site() as web:
        async with egress.serving(exact(f"127.0.0.1:{port_of(web)}"), None) as url:
            assert await asyncio.to_thread(get, url, f"http://127.0.0.1:{port_of(web)}/") == (
                200,
                "hello",
            )
    assert egress.process().pid not in (None, pid)
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    child = subprocess.Popen(
        [sys.executable, str(worker)],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert child.stdout is not None
    proxy_pid = int(child.stdout.readline())
    child.kill()
    child.wait()
    deadline = time.monotonic() + 5
    while Path(f"/proc/{proxy_pid}").exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    status = Path(f"/proc/{proxy_pid}/status")
    assert not status.exists() or "zombie" in status.read_text()


WORKER = """
import asyncio, sys, time
sys.path.insert(0, ".")
from activities.sandbox import egress

async def main():
    async with egress.serving(egress.Policy(), None):
        print(egress.process().pid, flush=True)
        time.sleep(60)

asyncio.run(main())
"""


async def test_a_tokenless_endpoint_serves_this_user_and_refuses_another():
    with site() as web:
        target = f"http://127.0.0.1:{port_of(web)}/"
        async with egress.serving(
            exact(f"127.0.0.1:{port_of(web)}"), None, credentials=False
        ) as url:
            assert "@" not in url
            assert await asyncio.to_thread(get, url, target) == (200, "hello")
            if os.getuid() != 0:
                pytest.skip("only root can play another user here")
            other = subprocess.run(
                ["/usr/bin/python3", "-c", OTHER_USER, url, target],  # one "nobody" may run
                capture_output=True,
                text=True,
                timeout=30,
                user=65534,  # nobody
                cwd="/",
            )
            assert other.stdout.startswith("HTTP/1.1 403"), other.stdout + other.stderr
            assert "only the worker's own processes" in other.stdout


OTHER_USER = """
import socket, sys
from urllib.parse import urlsplit
proxy = urlsplit(sys.argv[1])
with socket.create_connection((proxy.hostname, proxy.port), timeout=10) as s:
    s.sendall(f"GET {sys.argv[2]} HTTP/1.1\\r\\n\\r\\n".encode())
    print(s.recv(4096).decode())
"""


@pytest.mark.browser
async def test_the_browser_goes_out_through_the_proxy_process_and_its_decisions_are_logged(
    tmp_path,
):
    from activities.artifacts import ArtifactStore
    from activities.browser import BrowserPool
    from activities.tools import ToolContext, ToolError
    from activities.tools.web import browser_navigate

    decisions: list[Decision] = []
    with site() as web:
        url = f"http://127.0.0.1:{port_of(web)}/page"
        ctx = ToolContext(
            "run-1", "a1", tmp_path, ArtifactStore(tmp_path / "a"), BrowserPool(), lambda n: None
        )
        ctx.record = lambda *d: decisions.append(d)
        try:
            ctx.egress = Policy()
            with pytest.raises(ToolError) as refused:  # a refused page is a failed navigation
                await browser_navigate(ctx, {"url": url, "screenshot": False})
            ctx.egress = exact(f"127.0.0.1:{port_of(web)}")
            out = await browser_navigate(ctx, {"url": url, "screenshot": False})
        finally:
            await ctx.browsers.close()
    assert refused.value.details["status"] == 403 and not refused.value.retryable
    assert str(refused.value).startswith(
        f"browser_navigate {url} was refused by xsky's egress proxy"
    )
    assert out.details["status"] == 200 and "hello" in out.text
    pages = [path for path, _ in web.seen if path != "/favicon.ico"]  # type: ignore[attr-defined]
    assert pages == ["/page"]  # reached once: by the allowed navigation only
    assert [d[1] for d in decisions if d[0] == f"127.0.0.1:{port_of(web)}"] == ["deny", "allow"]
