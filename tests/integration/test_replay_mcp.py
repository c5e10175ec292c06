"""Replay histories of runs with MCP tools (recorded with test_replay.py's, the same command):
an LLM agent whose MCP calls were asked for and approved, beside a direct MCP agent — the
leader never sees a server, so the replay needs none — and an automatic replan that hands a
new agent an MCP tool and so waits for approve_plan (patch mcp-tools-privileged)."""

from __future__ import annotations

from pathlib import Path

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.helpers import board, plan, query, wait_requests
from tests.integration.histories import agents_scheduled
from tests.integration.mcp_helpers import MCP_ROLE, TEST_SERVER, agent, roles, write_settings
from tests.integration.test_replay import finish, shell
from workflows.leader import LeaderWorkflow
from xsky.leader.state import ApprovePlanRequest, ApproveToolRequest
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration


async def test_a_run_with_mcp_calls_and_an_approval_replays(
    env: Env, fake_llm: FakeLLM, tmp_path: Path
):
    write_settings(tmp_path / "user-settings.json", {"t": TEST_SERVER}, roles=MCP_ROLE)

    def responder(req: dict, i: int) -> Reply:
        if turn_of(req) == 0:
            return calls(("mcp__t__remove", {"path": "old.txt"}), ("mcp__t__add", {"a": 1, "b": 2}))
        return text(" | ".join(m["content"] for m in req["messages"] if m.get("role") == "tool"))

    fake_llm.responder = responder
    await env.start_worker()
    handle = await env.start(
        plan(
            agent("1", "mcpuser", "tidy"),
            agent("2", "mcpuser", "add", {"tool": "mcp__t__add", "a": 20, "b": 22}, depends="1"),
            name="mcp",
        ),
        roles=roles(),
    )
    (req,) = await wait_requests(handle, 1, timeout=60)
    assert req.tool == "mcp__t__remove"
    (env.settings.runs / handle.id / "workspace" / "old.txt").write_text("old")
    await handle.execute_update(
        LeaderWorkflow.approve_tool, ApproveToolRequest(request_id=req.id, decision="allow_run")
    )
    result = await run_outcome(handle)
    assert result.status == "completed", result.summary
    assert [a.result for a in result.agents] == ["removed old.txt | 3", "42"]
    history = await finish("mcp_tools", handle)
    assert agents_scheduled(history) == ["T-1-v1-d1", "T-1-v1-d2", "T-2-v1-d1"]


async def test_an_automatic_replan_handing_out_an_mcp_tool_waits_and_replays(
    env: Env, fake_llm: FakeLLM, tmp_path: Path
):
    write_settings(tmp_path / "user-settings.json", {"t": TEST_SERVER}, roles=MCP_ROLE)
    # Plan v2 drops the failed shell agent: only the MCP tool makes it privileged.
    v2 = plan(agent("3", "mcpuser", "add", {"tool": "mcp__t__add", "a": 1, "b": 1}), name="mcppriv")
    fake_llm.responder = lambda req, i: text(v2)  # only the planner asks the model here
    await env.start_worker()
    handle = await env.start(
        plan(shell("1", "exit 3"), name="mcppriv"),
        options=RunOptions(replan_deterministic=True),
        roles=roles(),
    )

    async def under_review() -> None:
        assert "3" in await board(handle), "plan v2 is not on the board yet"
        reqs = await query(handle, LeaderWorkflow.pending_requests)
        assert [(r.id, r.kind) for r in reqs] == [("R-2", "review")]

    await eventually(under_review, timeout=60)
    assert agents_scheduled(await handle.fetch_history()) == ["T-1-v1-d1"]
    await handle.execute_update(LeaderWorkflow.approve_plan, ApprovePlanRequest(version=2))
    result = await run_outcome(handle)
    assert result.status == "completed", result.summary
    assert [(a.id, a.result) for a in result.agents] == [("3", "2")]
    await finish("mcp_privileged_replan", handle)
