"""Each tool says what success is (real Chromium, the real egress proxy, a local server, no
Temporal): a page refused, missing, empty or unreachable is a failure that names its URL and
says whether trying again may help; so is a command's non-zero exit and a file system error."""

from __future__ import annotations

import http.server
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from activities.artifacts import ArtifactStore
from activities.browser import BrowserPool
from activities.sandbox.egress_policy import Policy
from activities.tools import ToolContext, ToolError
from activities.tools.files import file_read, file_write
from activities.tools.http import http_get
from activities.tools.shell import shell
from activities.tools.web import browser_navigate


class _Site(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        code, body = {"/ok": (200, b"<title>ok</title><p>fine</p>"), "/empty": (200, b"")}.get(
            self.path, (404, b"<title>404</title><p>no such page</p>")
        )
        if self.path == "/busy":
            code, body = 503, b"<p>busy</p>"
        self.send_response(code)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a: object) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ToolContext(
        "run-1", "a1", ws, ArtifactStore(tmp_path / "artifacts"), BrowserPool(), lambda note: None
    )


async def failure(tool, ctx: ToolContext, args: dict) -> ToolError:
    with pytest.raises(ToolError) as info:
        await tool(ctx, args)
    return info.value


@pytest.mark.browser
async def test_the_browser_fails_on_a_refused_a_missing_an_empty_and_an_unreachable_page(
    ctx: ToolContext, site: int
):
    closed = closed_port()
    # The site and the closed port are named by exact rules; port site+0 of "localhost" is not.
    ctx.egress = Policy(exact={("127.0.0.1", site), ("127.0.0.1", closed)})
    base = f"http://127.0.0.1:{site}"
    try:
        assert (await browser_navigate(ctx, {"url": f"{base}/ok", "screenshot": False})).details[
            "status"
        ] == 200
        missing = await failure(browser_navigate, ctx, {"url": f"{base}/missing"})
        assert str(missing) == f"browser_navigate {base}/missing answered HTTP 404"
        assert not missing.retryable and missing.details["status"] == 404
        busy = await failure(browser_navigate, ctx, {"url": f"{base}/busy", "screenshot": False})
        assert str(busy) == f"browser_navigate {base}/busy answered HTTP 503" and busy.retryable
        empty = await failure(browser_navigate, ctx, {"url": f"{base}/empty"})
        assert "answered an empty document" in str(empty) and not empty.retryable
        refused_url = f"http://localhost:{site}/ok"
        refused = await failure(browser_navigate, ctx, {"url": refused_url})
        assert str(refused).startswith(
            f"browser_navigate {refused_url} was refused by xsky's egress proxy: "
        )
        assert not refused.retryable
        gone = f"http://127.0.0.1:{closed}/"
        unreachable = await failure(browser_navigate, ctx, {"url": gone})
        assert str(unreachable).startswith(f"browser_navigate {gone} could not connect: ")
        assert f"port {closed}" in str(unreachable) and unreachable.retryable
    finally:
        await ctx.browsers.close()


async def test_http_get_says_the_same_of_a_refused_and_an_unreachable_host(
    ctx: ToolContext, site: int
):
    closed = closed_port()
    ctx.egress = Policy(exact={("127.0.0.1", site), ("127.0.0.1", closed)})
    busy = await failure(http_get, ctx, {"url": f"http://127.0.0.1:{site}/busy"})
    assert "answered HTTP 503" in str(busy) and busy.retryable
    missing = await failure(http_get, ctx, {"url": f"http://127.0.0.1:{site}/missing"})
    assert "answered HTTP 404" in str(missing) and not missing.retryable
    refused = await failure(http_get, ctx, {"url": f"http://localhost:{site}/ok"})
    assert "refused by xsky's egress proxy" in str(refused) and not refused.retryable
    gone = await failure(http_get, ctx, {"url": f"http://127.0.0.1:{closed}/"})
    assert str(gone).startswith(f"GET http://127.0.0.1:{closed}/ could not connect: ")
    assert gone.retryable


async def test_a_non_zero_exit_a_timeout_and_a_limit_are_not_retried(ctx: ToolContext):
    exited = await failure(shell, ctx, {"command": "echo boom >&2; exit 1"})
    assert not exited.retryable
    assert str(exited).splitlines() == [
        "the command exited with status 1: echo boom >&2; exit 1",
        "boom",
        "(exit status 1)",
    ]
    late = await failure(shell, ctx, {"command": "sleep 5", "timeout": 0.3})
    assert "timeout" in str(late) and not late.retryable


async def test_a_file_system_error_fails_the_file_tool_with_the_path_and_is_not_retried(
    ctx: ToolContext,
):
    long = "n" * 300  # longer than a file name may be: the kernel's error, for a person
    wrote = await failure(file_write, ctx, {"path": long, "content": "x"})
    assert str(wrote) == f"file_write {long}: File name too long" and not wrote.retryable


async def test_permission_denied_fails_the_file_tool_and_is_not_retried(ctx: ToolContext):
    if os.geteuid() == 0:
        pytest.skip("root reads and writes whatever the mode says")
    locked = ctx.workspace / "locked"
    locked.mkdir()
    (locked / "secret.txt").write_text("x")
    locked.chmod(0o000)
    try:
        read = await failure(file_read, ctx, {"path": "locked/secret.txt"})
        assert str(read).startswith("file_read locked/secret.txt: permission denied")
        assert not read.retryable
        wrote = await failure(file_write, ctx, {"path": "locked/new.txt", "content": "x"})
        assert str(wrote).startswith("file_write locked/new.txt: permission denied")
    finally:
        locked.chmod(0o755)
