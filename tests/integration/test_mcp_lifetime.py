"""What an attempt's stdio MCP servers start ends with the attempt: a tool that leaves a process
behind (it keeps rewriting a file of the workspace) — that process is gone as soon as the
attempt has ended, while the worker (and its pool) goes on running; it used to live on until
the pool closed the idle server, 600 s later, racing the workspace's snapshot."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.helpers import plan
from tests.integration.mcp_helpers import HOSTILE, agent, roles, write_settings
from tests.integration.test_mcp_pool import pids_named

pytestmark = pytest.mark.integration


async def test_a_process_a_servers_tool_left_behind_ends_with_the_attempt(
    env: Env, fake_llm: FakeLLM, tmp_path: Path
):
    role = {"spawner": {"description": "spawns", "allowedTools": ["mcp__h__spawn"]}}
    write_settings(tmp_path / "user-settings.json", {"h": HOSTILE}, roles=role)
    marker = f"xsky-left-behind-{uuid.uuid4().hex[:8]}"
    seen: dict[str, bool] = {}

    def responder(req: dict, i: int) -> Reply:
        if turn_of(req) == 0:
            return calls(("mcp__h__spawn", {"marker": marker}))
        seen["running"] = bool(pids_named(marker))  # while the attempt goes on
        return text("done")

    fake_llm.responder = responder
    await env.start_worker()
    result = await env.run(plan(agent("1", "spawner", "spawn")), timeout=60, roles=roles())
    ended = time.monotonic()
    assert result.status == "completed", result.summary
    assert seen == {"running": True}
    beat = env.home / "runs" / result.workflow_id / "workspace" / "beat"

    def gone() -> None:
        assert not pids_named(marker), "a process the server started outlived its attempt"

    await eventually(gone, 2, interval=0.05)
    assert beat.exists()
    last = beat.read_text()
    await asyncio.sleep(0.5)  # it rewrote the file ten times a second while it ran
    assert beat.read_text() == last
    assert time.monotonic() - ended < 3
    assert env.activities[0].mcp.sessions() == []  # the worker runs on; the session ended
