"""MCP tools under the permission rules on a real server: a deny rule, the ask of a destructive
tool answered by a person (both ways), and an allowed call — a refused call never reaches its
server (the test server logs every call that does)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.helpers import plan, wait_requests
from tests.integration.mcp_helpers import MCP_ROLE, TEST_SERVER, agent, roles, write_settings
from workflows.leader import LeaderWorkflow
from xsky.leader.state import ApproveToolRequest

pytestmark = pytest.mark.integration


async def test_deny_rules_asks_and_approvals_hold_for_mcp_tools(
    env: Env, fake_llm: FakeLLM, tmp_path: Path
):
    rules = {"deny": ["mcp__t__add"]}
    write_settings(
        tmp_path / "user-settings.json", {"t": TEST_SERVER}, roles=MCP_ROLE, permissions=rules
    )
    script = [
        calls(("mcp__t__add", {"a": 1, "b": 1})),  # a deny rule
        calls(("mcp__t__remove", {"path": "keep.txt"})),  # destructive: asked; a person refuses
        calls(("mcp__t__remove", {"path": "drop.txt"})),  # asked; a person allows it
        calls(("mcp__t__count", {})),  # allowed by the role
    ]

    def responder(req: dict, i: int) -> Reply:
        turn = turn_of(req)
        outputs = [m["content"] for m in req["messages"] if m.get("role") == "tool"]
        return script[turn] if turn < len(script) else text(" | ".join(outputs))

    fake_llm.responder = responder
    await env.start_worker()
    handle = await env.start(plan(agent("1", "mcpuser", "tidy up")), roles=roles())
    workspace = env.home / "runs" / handle.id / "workspace"
    (first,) = await wait_requests(handle, 1, timeout=60)
    assert first.tool == "mcp__t__remove" and first.arguments == {"path": "keep.txt"}
    assert "destructiveHint" in first.rule
    (workspace / "keep.txt").write_text("keep")
    (workspace / "drop.txt").write_text("drop")
    await handle.execute_update(
        LeaderWorkflow.approve_tool,
        ApproveToolRequest(request_id=first.id, decision="deny", message="not that one"),
    )
    second = await wait_requests(handle, 1, timeout=60)
    assert second[-1].arguments == {"path": "drop.txt"}
    await handle.execute_update(
        LeaderWorkflow.approve_tool,
        ApproveToolRequest(request_id=second[-1].id, decision="allow_once"),
    )
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed", result.summary
    answers = (result.agents[0].result or "").split(" | ")
    assert answers[0].startswith("DENIED: deny rule 'mcp__t__add' from user settings")
    assert answers[1].startswith("DENIED: a person denied it: not that one.")
    assert answers[2].startswith("removed ") and answers[3] == "1"
    # Only the allowed call reached the server; the refused file is still there.
    assert (workspace / "calls.log").read_text().splitlines() == ["remove drop.txt"]
    assert (workspace / "keep.txt").exists() and not (workspace / "drop.txt").exists()
    log = [(e.tool, e.effect, e.by) for e in result.permission_log if e.tool.startswith("mcp")]
    assert ("mcp__t__add", "deny", "auto") in log
    assert ("mcp__t__remove", "deny", "person") in log and (
        "mcp__t__remove",
        "allow",
        "person",
    ) in log
    assert ("mcp__t__count", "allow", "auto") in log
