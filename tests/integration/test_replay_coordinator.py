"""Replay history of the leader's judgment (recorded with test_replay.py's, the same command):
a question answered by the leader, a tool call approved within the delegated rules, a result
sent back once with an instruction, a goal found not met and replanned, then met (patch
leader-coordinator)."""

from __future__ import annotations

from typing import Any

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import (
    FakeLLM,
    Reply,
    calls,
    coordinator_point,
    first_user,
    judged,
    last_tool_output,
    text,
    turn_of,
)
from tests.integration.histories import agents_scheduled
from tests.integration.test_replay import finish
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

ASK = '<agent name="llm" id="1"><task>Write the cost report</task></agent>'
LOOK = '<agent name="architect" id="2"><task>Look at the workspace</task></agent>'
ZONE = '<agent name="llm" id="3" depends="1"><task>Name the time zone</task></agent>'


def workflow(*agents: str) -> str:
    return (
        '<workflow name="judged" taskId="judged"><taskPrompt>A cost report for eu-west-1, '
        f"with its time zone</taskPrompt>{''.join(agents)}</workflow>"
    )


async def test_a_run_the_leader_judges_replays(env: Env, fake_llm: FakeLLM) -> None:
    def agents(req: dict[str, Any], i: int) -> Reply:
        task = first_user(req)
        if task.startswith("You are a task planner"):
            return text(workflow(ASK, LOOK, ZONE))
        if "cost report" in task:
            if turn_of(req) == 0:
                return calls(("ask_user", {"question": "Which region?"}))
            return text(f"report: {last_tool_output(req)}")
        if "workspace" in task:
            if turn_of(req) == 0:
                return calls(("shell", {"command": "echo looked"}))
            return text(last_tool_output(req))
        return text("CET" if turn_of(req) else "a time zone")

    goals = 0

    def coordinator(req: dict[str, Any], i: int) -> Reply:
        nonlocal goals
        point = coordinator_point(req)
        if point == "question":
            return judged("answer", "the goal says", answer="eu-west-1")
        if point == "approval":
            return judged("allow", "it only looks")
        if point == "result":
            if "a time zone" in first_user(req) and "CET" not in first_user(req):
                return judged("retry", "too vague", instruction="name the zone")
            return judged("accept", "fine")
        goals += 1
        return (
            judged("not_met", "no zone", gap="name the time zone")
            if goals == 1
            else judged("met", "all there")
        )

    fake_llm.responder, fake_llm.coordinator = agents, coordinator
    await env.start_worker()
    handle = await env.start(
        workflow(ASK, LOOK),
        options=RunOptions(max_auto_replans=1, delegate=["shell(echo:*)"]),
    )
    result = await run_outcome(handle)
    assert result.status == "completed", result.summary
    assert result.goal_check == "met (leader): all there"
    history = await finish("coordinated", handle)
    # T-1 and T-2 go on after the leader's answer and approval; T-3 (the replan) once more
    # after its result was sent back
    assert sorted(agents_scheduled(history)) == [
        "T-1-v1-d1",
        "T-1-v1-d2",
        "T-2-v1-d1",
        "T-2-v1-d2",
        "T-3-v2-d1",
        "T-3-v2-d2",
    ]
