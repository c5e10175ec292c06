"""The browser confined, judged by effect: a page writes nothing outside, reaches loopback only
by an exact rule, and a page that eats memory fails alone — the browser and its other pages
go on."""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from activities.artifacts import ArtifactStore
from activities.browser import BrowserPool
from activities.sandbox import bwrap
from activities.sandbox.egress_policy import Policy
from activities.sandbox.limits import Limits, MiB
from activities.tools import ToolContext, ToolError
from activities.tools.web import browser_navigate
from tests.integration.eventually import eventually

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bwrap.ready() is not None, reason=f"no OS sandbox here: {bwrap.ready()}"),
]
BIG = 64 * 1024 * 1024
# What the download is made of: a file that begins with it is the download, wherever it is
# (other processes on the machine write big files to /tmp too: servers' databases).
CANARY = b"xsky-download-canary;"


class _Site(BaseHTTPRequestHandler):
    hits: list[str]

    # the stdlib's name
    def do_GET(self) -> None:
        self.hits.append(self.path)
        if self.path == "/download":
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Disposition", 'attachment; filename="big.bin"')
            self.send_header("Content-Length", str(BIG))
            self.end_headers()
            chunk = CANARY * (1024 * 1024 // len(CANARY) + 1)
            chunk = chunk[: 1024 * 1024]
            for _ in range(BIG // len(chunk)):
                try:
                    self.wfile.write(chunk)
                except OSError:
                    self.hits.append("cut:/download")  # the browser stopped taking it
                    return
            self.hits.append("sent:/download")
            return
        body = {
            "/": b"<html><head><title>Home</title></head><body><p id='v'>42 coins</p></body></html>",
            "/save": b"<html><body><a id='d' href='/download' download>get</a>"
            b"<script>document.getElementById('d').click()</script>saving</body></html>",
            "/hog": b"<html><body>hog<script>let a = []; "
            b"setInterval(() => { for (let i = 0; i < 8; i++) a.push(new Float64Array(1 << 22).fill(i)); }, 5);"
            b"</script></body></html>",
        }.get(self.path, b"missing")
        self.send_response(200 if body != b"missing" else 404)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Site", (_Site,), {"hits": hits}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()


def context(
    tmp_path: Path, pool: BrowserPool, policy: Policy, limits: Limits | None = None
) -> ToolContext:
    ws = tmp_path / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    ctx = ToolContext(
        "run-1", "a1", ws, ArtifactStore(tmp_path / "artifacts"), pool, lambda note: None
    )
    ctx.egress = policy
    ctx.confinement = bwrap.Confinement(workspace=ws, limits=limits or Limits())
    return ctx


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


async def test_loopback_is_reached_only_with_an_exact_rule(
    tmp_path: Path, site: tuple[str, list[str]]
):
    url, hits = site
    pool = BrowserPool()
    try:
        for policy in (Policy(), Policy(allow=None, exact=set())):
            ctx = context(tmp_path, pool, policy)
            with pytest.raises(ToolError) as info:  # a refused page is a failed navigation
                await browser_navigate(ctx, {"url": url + "/", "screenshot": False})
            assert "was refused by xsky's egress proxy" in str(info.value)
            assert "42 coins" not in str(info.value) and info.value.details["status"] == 403
        assert hits == []  # the stand-in service saw nothing
        ctx = context(tmp_path, pool, Policy(exact={("127.0.0.1", port_of(url))}))
        out = await browser_navigate(ctx, {"url": url + "/", "screenshot": False})
        assert "42 coins" in out.text and hits[:1] == ["/"]
    finally:
        await pool.close()


def big_files_since(start: float, roots: list[Path]) -> list[str]:
    """Files of at least a quarter of the download, changed since ``start``, that hold the
    download's bytes. find(1) walks (a Python walk of a busy /tmp took a minute and more)."""
    found = subprocess.run(
        ["find", *map(str, roots), "-xdev", "-type", "f", "-newermt", f"@{start:.0f}"]
        + ["-size", f"+{BIG // 4 // 1024 - 1}k"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.splitlines()
    return [path for path in found if _is_download(path)]


def _is_download(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(CANARY)) == CANARY
    except OSError:
        return False


async def test_a_page_cannot_write_a_download_anywhere(tmp_path: Path, site: tuple[str, list[str]]):
    url, hits = site
    start = time.time() - 1
    pool = BrowserPool()
    try:
        ctx = context(tmp_path, pool, Policy(exact={("127.0.0.1", port_of(url))}))
        async with pool.page_for(ctx) as page:
            await page.goto(url + "/save")

            def served() -> None:
                assert {"cut:/download", "sent:/download"} & set(hits), hits

            # The download's end: the browser stopped taking it (refused), or took it all.
            await eventually(served, 20)
    finally:
        await pool.close()
    assert "/save" in hits and "cut:/download" in hits, hits  # refused, not taken
    roots = [Path("/tmp"), Path("/var/tmp"), Path.home(), tmp_path]
    assert big_files_since(start, roots) == []


async def test_a_memory_hungry_page_fails_alone(tmp_path: Path, site: tuple[str, list[str]]):
    url, _ = site
    pool = BrowserPool()
    limits = Limits(browser_memory=768 * MiB)
    try:
        hog = context(tmp_path / "hog", pool, Policy(exact={("127.0.0.1", port_of(url))}), limits)
        calm = context(tmp_path / "calm", pool, Policy(exact={("127.0.0.1", port_of(url))}), limits)
        async with pool.page_for(hog) as page:
            crashed = asyncio.Event()
            page.on("crash", lambda _page: crashed.set())
            await page.goto(url + "/hog")
            try:
                await asyncio.wait_for(crashed.wait(), 60)
            except TimeoutError:
                pytest.fail("the hungry page was never stopped")
            with pytest.raises(Exception):  # noqa: B017 - Playwright's own error for a crashed page
                await page.evaluate("1 + 1")
        out = await browser_navigate(calm, {"url": url + "/", "screenshot": False})
        assert "42 coins" in out.text  # the browser and another agent's page go on
    finally:
        await pool.close()
