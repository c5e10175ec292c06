"""A tool's write to the store (a screenshot here) is made off the worker's event loop: on it, a
slow or paused store (S3: obstore retries one PUT for up to 3 minutes) stopped every attempt of
the worker meanwhile — their heartbeats, their leases, a leader's workflow tasks (chaos11)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from activities.artifacts import ArtifactStore
from activities.browser import BrowserPool
from activities.sandbox.egress_policy import Policy
from activities.tools import ToolContext
from activities.tools.browsing import BrowserSession
from activities.tools.web import browser_navigate

pytestmark = pytest.mark.browser
SLOW = 2.0  # seconds the store takes over one screenshot's write


class _Site(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html><head><title>t</title></head><body>42 coins</body></html>")

    def log_message(self, *a: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[tuple[str, int]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", server.server_address[1]
    server.shutdown()


class SlowShots:
    """The store behind, slow to take a screenshot (a paused store's one request)."""

    def __init__(self, inner: Any):
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def put(self, key: str, data: bytes, **kw: Any) -> None:
        if key.endswith(".png"):
            time.sleep(SLOW)
        self.inner.put(key, data, **kw)


async def longest_gap(work: Any) -> float:
    """The longest the event loop went without running a 20 ms ticker while ``work`` ran."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(0.02)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    try:
        await work
    finally:
        done.set()
        await ticking
    return max(gaps)


def context(tmp_path: Path, pool: BrowserPool, port: int) -> ToolContext:
    store = ArtifactStore(tmp_path / "artifacts")
    store.objects = SlowShots(store.objects)
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    ctx = ToolContext("run-1", "a1", ws, store, pool, lambda note: None)
    ctx.egress = Policy(exact={("127.0.0.1", port)})
    ctx.unconfined = True
    return ctx


async def test_a_direct_navigates_screenshot_is_written_off_the_event_loop(
    tmp_path: Path, site: tuple[str, int]
):
    url, port = site
    pool = BrowserPool()
    try:
        ctx = context(tmp_path, pool, port)
        out = asyncio.ensure_future(browser_navigate(ctx, {"url": url, "screenshot": True}))
        gap = await longest_gap(out)
        assert "42 coins" in out.result().text and len(out.result().artifacts) == 1
    finally:
        await pool.close()
    assert gap < SLOW / 2, f"the event loop stood still {gap:.2f}s for a store write"


async def test_a_model_agents_screenshot_is_written_off_the_event_loop(
    tmp_path: Path, site: tuple[str, int]
):
    url, port = site
    pool = BrowserPool()
    try:
        session = BrowserSession(context(tmp_path, pool, port))
        await session.navigate({"url": url})
        shot = asyncio.ensure_future(session.screenshot({}))
        gap = await longest_gap(shot)
        assert "shot-1.png" in shot.result()
        await session.close()
    finally:
        await pool.close()
    assert gap < SLOW / 2, f"the event loop stood still {gap:.2f}s for a store write"
