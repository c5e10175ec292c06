"""Permissions on a real server: approvals through the leader, denials the agent hears, audit."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import FakeLLM, calls, last_tool_output, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.helpers import plan, rejected, wait_requests
from tests.integration.test_cli_runs import starter
from tests.unit.test_tools import none_running
from workflows.leader import LeaderWorkflow
from xsky.leader.state import ApproveToolRequest
from xsky.runs import RunOptions
from xsky.security.permissions import PermissionLayer, PermissionSettings

pytestmark = pytest.mark.integration


def shell_agent(agent_id: str, role: str, command: str, extra: str = "") -> str:
    cfg = json.dumps(
        {"tool": "shell", "command": command, **(json.loads("{" + extra + "}") if extra else {})}
    )
    return f'<agent name="{role}" id="{agent_id}"><task>run it</task><config><![CDATA[{cfg}]]></config></agent>'


async def test_a_requested_tool_waits_for_approval_and_then_runs(env: Env):
    await env.start_worker()
    handle = await env.start(plan(shell_agent("1", "explore", "echo approved-and-ran")))
    (req,) = await wait_requests(handle, 1)
    assert (
        req.kind == "approval"
        and req.tool == "shell"
        and req.arguments == {"command": "echo approved-and-ran"}
    )
    assert "requestedTools" in req.rule and req.id.startswith("A-")
    assert f"decide it with the approve_tool update (request {req.id})" in await rejected(
        handle, LeaderWorkflow.answer, {"requestId": req.id, "text": "yes"}
    )
    await handle.execute_update(
        LeaderWorkflow.approve_tool, ApproveToolRequest(request_id=req.id, decision="allow_once")
    )
    result = await asyncio.wait_for(run_outcome(handle), 30)
    assert result.agents[0].result == "approved-and-ran"
    log = await handle.query(LeaderWorkflow.permission_log)
    assert [(e.effect, e.by) for e in log] == [
        ("ask", "auto"),
        ("allow", "person"),
        ("allow", "person"),  # the call that ran: approved by the person, not asked again
    ]
    assert log[1].request_id == req.id and "allow_once by a person" in log[1].reason
    assert log[2].reason.startswith(f"approved by a person ({req.id}): ")
    assert [e.effect for e in result.permission_log] == ["ask", "allow", "allow"]


async def test_allow_for_the_run_is_remembered_for_later_calls(env: Env):
    await env.start_worker()
    two = plan(
        shell_agent("1", "explore", "echo first"),
        shell_agent("2", "explore", "echo first").replace('id="2"', 'id="2" depends="1"'),
    )
    handle = await env.start(two)
    (req,) = await wait_requests(handle, 1)
    await handle.execute_update(
        LeaderWorkflow.approve_tool, ApproveToolRequest(request_id=req.id, decision="allow_run")
    )
    result = await asyncio.wait_for(run_outcome(handle), 30)
    assert [a.result for a in result.agents] == ["first", "first"]  # the second call did not ask
    reasons = [e.reason for e in await handle.query(LeaderWorkflow.permission_log)]
    assert any("this run (approved by a person)" in r for r in reasons)


async def test_a_denied_direct_call_fails_the_agent_with_the_reason(env: Env):
    await env.start_worker()
    handle = await env.start(
        plan(shell_agent("1", "explore", "rm -rf important")),
        options=RunOptions(max_auto_replans=0),
    )
    (req,) = await wait_requests(handle, 1)
    await handle.execute_update(
        LeaderWorkflow.approve_tool,
        ApproveToolRequest(request_id=req.id, decision="deny", message="never delete"),
    )
    result = await asyncio.wait_for(run_outcome(handle), 30)
    assert (
        result.agents[0].status == "failed"
        and "a person denied it: never delete" in result.agents[0].error
    )


async def test_a_deny_reaches_the_llm_agent_which_still_finishes(env: Env, fake_llm: FakeLLM):
    def responder(req, i):
        if turn_of(req) == 0:
            return calls(("shell", {"command": "pytest -q"}))
        return text(f"could not run the tests: {last_tool_output(req)}")

    fake_llm.responder = responder
    await env.start_worker()
    handle = await env.start(
        plan('<agent name="explore" id="1"><task>Check the tests</task></agent>')
    )
    (req,) = await wait_requests(handle, 1)
    assert req.tool == "shell" and req.arguments == {"command": "pytest -q"}
    await handle.execute_update(
        LeaderWorkflow.approve_tool,
        ApproveToolRequest(request_id=req.id, decision="deny", message="not now"),
    )
    result = await asyncio.wait_for(run_outcome(handle), 30)
    assert result.status == "completed"
    assert result.agents[0].result.startswith(
        "could not run the tests: DENIED: a person denied it: not now"
    )


async def test_deny_rules_and_plan_mode_are_enforced_without_asking(
    env: Env, fake_llm: FakeLLM, tmp_path: Path, monkeypatch
):
    def responder(req, i):
        if turn_of(req) == 0:
            return calls(
                ("shell", {"command": "ls && rm -rf data"}),
                ("file_write", {"path": "x.txt", "content": "x"}),
            )
        return text(
            "done: " + " | ".join(m["content"][:60] for m in req["messages"] if m["role"] == "tool")
        )

    fake_llm.responder = responder
    # The rules come from the worker's own settings file; the run may only make the mode stricter.
    user = tmp_path / "user-settings.json"
    user.write_text(
        json.dumps({"permissions": {"allow": ["shell(ls:*)"], "deny": ["shell(rm:*)"]}})
    )
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(user))
    await env.start_worker()
    rules = PermissionSettings(
        layers=[PermissionLayer(scope="project", path="forged", allow=["shell(rm:*)"])], mode="plan"
    )
    result = await env.run(
        plan('<agent name="backend" id="1"><task>Clean up</task></agent>'), permissions=rules
    )
    out = result.agents[0].result
    assert (
        "DENIED: deny rule 'shell(rm:*)'" in out
        and "DENIED: permission mode plan allows read-only tools only" in out
    )
    assert list((env.home / "runs").glob("**/x.txt")) == []  # plan mode: nothing was written
    assert [e.effect for e in result.permission_log] == ["deny", "deny"]


async def test_a_shell_command_past_its_timeout_leaves_no_process_behind(env: Env):
    await env.start_worker()
    token = f"300.{uuid.uuid4().int % 10**6}"
    command = f"sleep {token} & sleep {token}"
    handle = await env.start(
        plan(shell_agent("1", "shell", command, '"timeout": 1, "retry": {"maximumAttempts": 1}')),
        options=RunOptions(max_auto_replans=0),
    )
    result = await asyncio.wait_for(run_outcome(handle), 30)
    assert result.agents[0].status == "failed" and "timeout" in result.agents[0].error
    # Scanned in /proc (the sandbox's PIDs are its own); a killed process takes a moment to go.
    await eventually(lambda: none_running(f"sleep {token}"), timeout=5)


async def test_permissions_check_and_log_commands(env: Env, tmp_path: Path, monkeypatch):
    user = tmp_path / "user-settings.json"
    user.write_text(
        json.dumps({"permissions": {"allow": ["shell(ls:*)"], "deny": ["shell(rm:*)"]}})
    )
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(user))
    code, out, _ = await starter(
        env, "permissions", "check", "shell", "ls && rm -rf x", "--role", "shell"
    )
    assert code == 0 and out.startswith("DENY") and "shell(rm:*)" in out and "allow  ls" in out
    # A project's rules are not the worker's: the check says so and does not count them.
    project = tmp_path / "proj"
    (project / ".xsky").mkdir(parents=True)
    (project / ".xsky" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["shell(rm:*)"]}})
    )
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(project))
    code, out, _ = await starter(
        env, "permissions", "check", "shell", "rm -rf x", "--role", "shell"
    )
    assert code == 0 and "workers ignore them" in out and "DENY" in out
    code, out, _ = await starter(
        env, "permissions", "check", "shell", "pytest", "--role", "explore", "--json"
    )
    assert json.loads(out)["effect"] == "ask"
    code, _, err = await starter(env, "permissions", "check", "teleport", "x")
    assert code == 2 and "unknown tool 'teleport'" in err

    await env.start_worker()
    handle = await env.start(plan(shell_agent("1", "shell", "echo logged")))
    await asyncio.wait_for(run_outcome(handle), 60)
    code, out, _ = await starter(env, "permissions", "log", handle.id, "--json")
    entries = json.loads(out)
    assert (
        code == 0
        and entries[0]["tool"] == "shell"
        and entries[0]["effect"] == "allow"
        and entries[0]["by"] == "auto"
    )
