"""A durable watch on a real server: a local page changes, the watch fires once per change up to
its limit, and a browser worker killed while it watches changes nothing."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import RUNNING, board
from tests.integration.test_durability import start_worker_process, stop_worker_process
from xsky.runs import RunOptions

pytestmark = [pytest.mark.integration, pytest.mark.browser]


class Room(BaseHTTPRequestHandler):
    messages: list[str] = []

    def do_GET(self) -> None:
        body = (
            "<title>Room</title><div id='log'>"
            + "".join(f"<p>{m}</p>" for m in self.messages)
            + "</div>"
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a: object) -> None:
        pass


@pytest.fixture
def room() -> Iterator[tuple[int, list[str]]]:
    messages: list[str] = ["welcome"]
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Room", (Room,), {"messages": messages}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], messages
    server.shutdown()


def worker_log(folder: Path) -> str:
    """The tail of the first browser worker's log."""
    return (folder / "b1.log").read_text(errors="replace")[-6000:]


def watch_plan(port: int) -> str:
    config = {
        "tool": "shell",
        "command": "printf '%s' {{item}} | tail -n 1",
        "watch": {
            "event": "dom",
            "url": f"http://127.0.0.1:{port}/room",
            "selector": "#log",
            "every": 0.5,
            "maxFirings": 2,
            "idleTimeout": 120,
        },
        "heartbeatTimeout": 4,
    }
    return f"""<workflow name="watch" taskId="watch">
  <agent name="shell" id="w"><task>say the newest message</task>
    <config><![CDATA[{json.dumps(config)}]]></config></agent>
</workflow>"""


async def test_a_watch_fires_once_per_change_up_to_its_limit_through_a_killed_browser_worker(
    env: Env, room: tuple[int, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    port, messages = room
    settings = tmp_path / "user-settings.json"
    settings.write_text(
        json.dumps({"permissions": {"allow": [f"browser_navigate(domain:127.0.0.1:{port})"]}})
    )
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(settings))
    await env.start_worker(kinds=["llm", "shell"])  # the leader; polls run in the browser processes
    handle = await env.start(watch_plan(port), options=RunOptions(max_auto_replans=0))
    browsers = start_worker_process(
        env, tmp_path / "b1.log", "--kinds", "browser", "--no-leader", "--no-skills"
    )
    try:

        async def polling(poll: str) -> None:
            shown = (await board(handle)).get(poll)
            assert shown is not None and shown.status in RUNNING, shown
            assert "no change for" in (shown.last_progress or ""), shown

        async def watching(poll: str) -> None:
            # A look opens a page in the worker's Chromium (the first look launches it); on a
            # loaded machine that once stood "opening" a minute. The worker's log says why.
            try:
                await eventually(lambda: polling(poll), 120, interval=0.2)
            except AssertionError as e:
                raise AssertionError(
                    f"{e}\nthe browser worker's log:\n{worker_log(tmp_path)}"
                ) from e

        await watching("w.poll[1]")
        messages.append("first news")
        await watching("w.poll[2]")
        os.kill(browsers.pid, signal.SIGKILL)  # lost while it watches
        browsers.wait()
    finally:
        if browsers.poll() is None:
            browsers.kill()
    messages.append("second news")  # changes while no worker watches: not missed
    again = start_worker_process(
        env, tmp_path / "b2.log", "--kinds", "browser", "--no-leader", "--no-skills"
    )
    try:
        result = await asyncio.wait_for(run_outcome(handle), 90)
    finally:
        stop_worker_process(again)
    assert result.status == "completed", result.summary
    agents = {a.id: a for a in result.agents}
    assert [a for a in agents if a.startswith("w[")] == ["w[1]", "w[2]"]  # its limit: two
    assert "w.poll[3]" not in agents
    assert json.loads(agents["w"].result or "") == ["first news", "second news"]
