"""A delegated rule in a whole run, on a real dev server, with the fake OpenAI-compatible server
as the agents' model and the coordinator: with `--delegate 'shell(sed:*)'`, an agent asks to run
`sed '1e …'` — sed's e command runs a program — and the request stays with a person, its
reason naming the form; after the person refuses it, the agent's harmless `sed -n …` is approved
by the leader (by=leader in the permission log) and runs.

Harmless if the leader wrongly approved the first call: its program only touches a canary file
in the run's own workspace, and the test fails on the request not being pending."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, last_tool_output, text, turn_of
from tests.integration.helpers import wait_requests
from workflows.leader import LeaderWorkflow
from xsky.leader.state import ApproveToolRequest
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

PLAN = (
    '<workflow name="notes" taskId="notes"><taskPrompt>Read the notes</taskPrompt>'
    '<agent name="architect" id="1"><task>Show the first lines of the notes</task></agent>'
    "</workflow>"
)
EXECUTING = "sed '1e touch leader-approved-canary' notes.txt"
HARMLESS = "sed -n 1,5p notes.txt"


async def test_a_delegated_prefix_rule_never_approves_sed_running_a_program(
    env: Env, fake_llm: FakeLLM
) -> None:
    outputs: list[str] = []

    def agent(req: dict[str, Any], i: int) -> Reply:
        turn = turn_of(req)
        if turn == 0:
            return calls(("shell", {"command": EXECUTING}))
        if turn == 1:
            outputs.append(last_tool_output(req))
            return calls(("shell", {"command": HARMLESS}))
        outputs.append(last_tool_output(req))
        return text("shown")

    fake_llm.responder = agent  # the default coordinator finds nothing against either call
    await env.start_worker()
    handle = await env.start(PLAN, options=RunOptions(delegate=["shell(sed:*)"]))

    (pending,) = await wait_requests(handle, 1)
    assert pending.tool == "shell" and pending.arguments == {"command": EXECUTING}
    assert pending.decision is None and pending.by is None
    suggestion = pending.suggestion or ""
    assert "sed's e command runs a program" in suggestion, suggestion
    assert "delegated rules never approve running programs" in suggestion
    await handle.execute_update(
        LeaderWorkflow.approve_tool,
        ApproveToolRequest(request_id=pending.id, decision="deny", message="not that one"),
    )

    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed", result.summary
    decided = [(e.request_id, e.by, e.effect) for e in result.permission_log if e.request_id]
    assert sorted(decided) == [(pending.id, "person", "deny"), ("A-2", "leader", "allow")], decided
    # the leader's approval, then the call it answered: recorded as approved by the leader
    leader, call = [e for e in result.permission_log if e.by == "leader"]
    assert HARMLESS in leader.arguments and "shell(sed:*)" in leader.reason
    assert call.effect == "allow" and call.reason.startswith("approved by the leader (A-2): ")
    denied, ran = outputs
    assert denied.startswith("DENIED") and "not that one" in denied
    assert "sed: can't read notes.txt" in ran  # the approved sed ran (there is no notes.txt)
