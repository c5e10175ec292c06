"""Approvals only from people, on a real server: what a run's input says is not what a person
approved, rules of the run give no role a tool, invented roles ask a person whatever broad
allow rules say, and a review that timed out is not a person's approval of a plan."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import plan, query, wait_requests
from tests.integration.test_permissions_run import shell_agent
from workflows.leader import LeaderWorkflow
from xsky.leader.state import ApprovePlanRequest, ApproveToolRequest
from xsky.runs import AgentInput, RunOptions
from xsky.security.permissions import PermissionSettings

pytestmark = pytest.mark.integration

INVENTED_ROLE = '<role name="inventor" description="made up by the plan" tools="shell,file_read"/>'


@pytest.fixture
def user_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Write the worker's user settings file (its only source of rules here)."""

    def write(permissions: dict[str, list[str]]) -> None:
        path = tmp_path / "user-settings.json"
        path.write_text(json.dumps({"permissions": permissions}))
        monkeypatch.setenv("XSKY_USER_SETTINGS", str(path))

    project = tmp_path / "empty-project"
    project.mkdir()
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(project))
    write({})
    return write


def depends(agent: str, on: str) -> str:
    return agent.replace("<agent ", f'<agent depends="{on}" ', 1)


async def approval(handle: Any, timeout: float = 30) -> Any:
    """The first tool approval a run waits for (a plan review waiting beside it is not one)."""

    async def asked() -> Any:
        requests = await query(handle, LeaderWorkflow.pending_requests)
        approvals = [r for r in requests if r.kind == "approval"]
        assert approvals, f"no tool approval asked for; pending: {[r.id for r in requests]}"
        return approvals[0]

    return await eventually(asked, timeout)


async def agent_inputs(env: Env, handle: Any) -> list[AgentInput]:
    """The inputs the leader gave its agents, as the history recorded them."""
    found = []
    for event in (await handle.fetch_history()).events:
        attrs = event.activity_task_scheduled_event_attributes
        if (
            event.HasField("activity_task_scheduled_event_attributes")
            and attrs.activity_type.name == "run_agent"
        ):
            (inp,) = await env.client.data_converter.decode(attrs.input.payloads, [AgentInput])
            found.append(inp)
    return found


async def test_rules_from_the_input_and_from_a_person_are_told_apart(env: Env, user_rules):
    await env.start_worker()
    handle = await env.start(
        plan(
            shell_agent("1", "explore", "echo from-input"),
            depends(shell_agent("2", "explore", "echo asked"), "1"),
            depends(shell_agent("3", "explore", "echo asked"), "2"),
        ),
        permissions=PermissionSettings(run_rules=["shell(=echo from-input)"]),
    )
    (req,) = await wait_requests(handle, 1)  # T-1 ran on the input's rule; T-2 asks
    assert req.task_id == "T-2"
    await handle.execute_update(
        LeaderWorkflow.approve_tool, ApproveToolRequest(request_id=req.id, decision="allow_run")
    )
    result = await asyncio.wait_for(run_outcome(handle), 30)
    assert [a.result for a in result.agents] == ["from-input", "asked", "asked"]
    reasons = {
        e.task_id: e.reason
        for e in await handle.query(LeaderWorkflow.permission_log)
        if e.by == "auto" and e.effect == "allow"
    }
    assert "from the run's input (no person approved it)" in reasons["T-1"]
    assert "approved by a person" not in reasons["T-1"]
    assert f"from request {req.id} for this run (approved by a person)" in reasons["T-3"]
    sent = (await agent_inputs(env, handle))[-1].permissions
    assert sent.run_rules == ["shell(=echo from-input)"]
    assert [(a.rule, a.request_id) for a in sent.approved_rules] == [("shell(=echo asked)", req.id)]


async def test_an_exact_rule_in_the_input_does_not_give_the_llm_role_the_shell(
    env: Env, user_rules
):
    await env.start_worker()
    result = await env.run(
        plan(shell_agent("1", "llm", "echo hi")),
        permissions=PermissionSettings(run_rules=["shell(=echo hi)"]),
        options=RunOptions(max_auto_replans=0),
    )
    (agent,) = result.agents
    assert agent.status == "failed" and "role llm may not use shell" in (agent.error or "")
    (entry,) = result.permission_log
    assert entry.effect == "deny" and "approved by a person" not in entry.reason


async def test_an_invented_role_asks_a_person_whatever_broad_allow_rules_say(env: Env, user_rules):
    user_rules({"allow": ["shell", "shell(echo:*)"]})
    await env.start_worker()
    handle = await env.start(
        plan(INVENTED_ROLE, shell_agent("1", "inventor", "echo invented")),
        permissions=PermissionSettings(run_rules=["shell(=echo invented)"]),
    )
    (req,) = await wait_requests(handle, 1)
    assert req.tool == "shell" and "not one this worker knows" in (req.rule or "")
    await handle.execute_update(
        LeaderWorkflow.approve_tool, ApproveToolRequest(request_id=req.id, decision="allow_once")
    )
    result = await asyncio.wait_for(run_outcome(handle), 30)
    assert result.agents[0].result == "invented"


async def test_a_plan_approved_by_a_review_timeout_keeps_its_invented_roles_restricted(
    env: Env, user_rules
):
    await env.start_worker()
    timed_out = await env.start(
        plan(INVENTED_ROLE, shell_agent("1", "inventor", "echo late")),
        options=RunOptions(review=True, review_timeout=1, review_timeout_action="approve"),
    )
    req = await approval(timed_out)  # the review timed out, the plan runs, and its agent asks
    (sent,) = await agent_inputs(env, timed_out)
    assert sent.role is not None
    assert "shell" not in sent.role.allowed_tools and "shell" in sent.role.requested_tools
    await timed_out.execute_update(
        LeaderWorkflow.approve_tool, ApproveToolRequest(request_id=req.id, decision="allow_once")
    )
    assert (await asyncio.wait_for(run_outcome(timed_out), 30)).agents[0].result == "late"

    # The same plan, approved by a person: the role holds the shell as the plan wrote it.
    reviewed = await env.start(
        plan(INVENTED_ROLE, shell_agent("1", "inventor", "echo reviewed")),
        options=RunOptions(review=True, review_timeout=60),
    )
    (review,) = await wait_requests(reviewed, 1)
    assert review.kind == "review"
    await reviewed.execute_update(LeaderWorkflow.approve_plan, ApprovePlanRequest(version=1))
    # A person vouched for the plan and its roles: the worker gives the role what it names.
    assert (await asyncio.wait_for(run_outcome(reviewed), 30)).agents[0].result == "reviewed"
    (sent,) = await agent_inputs(env, reviewed)
    assert sent.role is not None and "shell" in sent.role.allowed_tools and sent.role_approved
    assert not any(i.role_approved for i in await agent_inputs(env, timed_out))
