"""The leader decides, in whole runs on a real dev server, with the fake OpenAI-compatible
server scripted as the coordinator: a run whose agents all succeed but miss the goal is
replanned once and then completes; a worker's question is answered by the leader and the
agent goes on with the answer; a tool request inside the delegated rules is approved by the
leader while one outside them stays with the person; a stall gets a root cause and a changed
plan; and offline, the run says that the coordinator is off."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from typing import Any

import pytest

from client.outcome import run_outcome
from tests.conftest import ROOT, Env
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
from tests.integration.eventually import eventually
from tests.integration.helpers import wait_requests
from workflows.leader import LeaderWorkflow
from xsky.leader.state import ApproveToolRequest
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

GOAL = "Report the release date of Orbit 3 and the time zone it is given in"


def workflow(*agents: str, prompt: str = GOAL) -> str:
    return f'<workflow name="release" taskId="release"><taskPrompt>{prompt}</taskPrompt>{"".join(agents)}</workflow>'


def llm(agent_id: str, task: str, depends: str = "", name: str = "llm", extra: str = "") -> str:
    dep = f' depends="{depends}"' if depends else ""
    return f'<agent name="{name}" id="{agent_id}"{dep}><task>{task}</task>{extra}</agent>'


def planner(req: dict[str, Any]) -> bool:
    return first_user(req).startswith("You are a task planner")


async def test_a_run_that_misses_its_goal_is_replanned_once_then_completes(
    env: Env, fake_llm: FakeLLM
) -> None:
    date = llm("1", "Find the release date of Orbit 3")
    zone = llm("2", "Find the time zone of the release date", depends="1")

    def agents(req: dict[str, Any], i: int) -> Reply:
        if planner(req):  # the replan: the gap the leader stated, as a new task
            return text(f"<workflow name='release' taskId='release'>{date}{zone}</workflow>")
        if "time zone" in first_user(req):
            return text("UTC")
        return text("2026-05-01")

    goals: list[str] = []

    def coordinator(req: dict[str, Any], i: int) -> Reply:
        point = coordinator_point(req)
        if point != "goal":
            return judged("accept", "it does its task")
        goals.append(first_user(req))
        if len(goals) == 1:
            return judged("not_met", "no time zone", gap="find the time zone of the date")
        return judged("met", "date and zone are both there")

    fake_llm.responder, fake_llm.coordinator = agents, coordinator
    await env.start_worker()
    handle = await env.start(workflow(date), options=RunOptions(max_auto_replans=1))
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed", result.summary
    assert result.plan_version == 2
    assert [a.result for a in result.agents] == ["2026-05-01", "UTC"]
    assert result.goal_check == "met (leader): date and zone are both there"
    assert "2026-05-01" in goals[0] and "UTC" in goals[1]  # each check saw the results
    history = await handle.query(LeaderWorkflow.plan_history)
    assert "the goal is not met: find the time zone of the date" in history[-1].reason
    (replan,) = [r for r in fake_llm.requests if planner(r)]
    assert "find the time zone of the date" in first_user(replan)
    ledger = await handle.query(LeaderWorkflow.ledger)
    assert [(e.point, e.verdict, e.by) for e in ledger.entries] == [
        ("result", "accept", "leader"),
        ("goal", "not_met", "leader"),
        ("result", "accept", "leader"),
        ("goal", "met", "leader"),
    ]
    assert ledger.mode == "act (model fake-model)"
    # the same, as a person reads it (the worker is in this process: wait without blocking it)
    shown = await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "starter.py"),
        "ledger",
        handle.id,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env.environ(),
    )
    out, err = await asyncio.wait_for(shown.communicate(), 60)
    assert shown.returncode == 0, err.decode()
    printed = " ".join(out.decode().split())
    assert "goal check: met (leader): date and zone are both there" in printed
    assert "find the time zone of the date" in printed


async def test_a_question_is_answered_by_the_leader_and_the_agent_goes_on_with_it(
    env: Env, fake_llm: FakeLLM
) -> None:
    def agent(req: dict[str, Any], i: int) -> Reply:
        if turn_of(req) == 0:
            return calls(("ask_user", {"question": "Which region should the report cover?"}))
        return text(f"report for {last_tool_output(req)}")

    def coordinator(req: dict[str, Any], i: int) -> Reply:
        if coordinator_point(req) == "question":
            return judged("answer", "the goal names it", answer="eu-west-1")
        return judged("accept" if coordinator_point(req) == "result" else "met", "fine")

    fake_llm.responder, fake_llm.coordinator = agent, coordinator
    await env.start_worker()
    result = await env.run(
        workflow(llm("1", "Write the cost report"), prompt="Cost report for region eu-west-1")
    )
    assert result.status == "completed", result.summary
    (a,) = result.agents
    assert "The leader answered" in (a.result or "") and "eu-west-1" in (a.result or "")
    asked = [r for r in fake_llm.coordinator_requests if coordinator_point(r) == "question"]
    assert "Which region should the report cover?" in first_user(asked[0])
    assert "Cost report for region eu-west-1" in first_user(asked[0])


async def test_a_delegated_call_is_approved_by_the_leader_and_another_waits_for_the_person(
    env: Env, fake_llm: FakeLLM, tmp_path: Any
) -> None:
    (tmp_path / "user-settings.json").write_text(
        json.dumps({"permissions": {"delegate": ["shell(echo:*)"]}})
    )

    def agent(req: dict[str, Any], i: int) -> Reply:
        turn = turn_of(req)
        if turn == 0:
            return calls(("shell", {"command": "echo delegated"}))
        if turn == 1:
            return calls(("shell", {"command": "ls -a"}))
        return text("listed")

    fake_llm.responder = agent  # the default coordinator finds nothing against either call
    await env.start_worker()
    handle = await env.start(workflow(llm("1", "Look around the workspace", name="architect")))
    (pending,) = await wait_requests(handle, 1)
    assert pending.tool == "shell" and pending.arguments == {"command": "ls -a"}
    assert "no delegated rule covers this call" in (pending.suggestion or "")
    log = await handle.query(LeaderWorkflow.permission_log)
    leader = [e for e in log if e.by == "leader"]
    # the leader's approval, then the call it answered, recorded as approved by the leader
    assert [(e.tool, e.effect) for e in leader] == [("shell", "allow"), ("shell", "allow")]
    assert "shell(echo:*)" in leader[0].reason
    assert leader[1].reason.startswith(f"approved by the leader ({leader[0].request_id}): ")
    ran = [r for r in fake_llm.requests if turn_of(r) == 1]
    assert "delegated" in last_tool_output(ran[-1])  # the approved command did run
    await handle.execute_update(
        LeaderWorkflow.approve_tool, ApproveToolRequest(request_id=pending.id)
    )
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed", result.summary
    decided = {e.request_id: e.by for e in result.permission_log if e.request_id}
    assert sorted(decided.values()) == ["leader", "person"]


async def test_a_stall_gets_a_root_cause_and_a_changed_plan(env: Env, fake_llm: FakeLLM) -> None:
    stuck = threading.Event()
    slow = llm(
        "1",
        "Fetch the release notes from the primary site",
        extra='<config>{"stall": {"nudgeAfter": 1, "restartAfter": 2}}</config>',
    )
    mirror = llm("2", "Fetch the release notes from the mirror")

    def agents(req: dict[str, Any], i: int) -> Reply:
        if planner(req):
            return text(f"<workflow name='release' taskId='release'>{mirror}</workflow>")
        if "mirror" in first_user(req):
            return text("notes from the mirror")
        return Reply(content="late", hold=stuck)  # the primary site never answers

    def coordinator(req: dict[str, Any], i: int) -> Reply:
        point = coordinator_point(req)
        if point == "stall":
            return judged(
                "replan", "it waits on a dead site", root_cause="the primary site does not answer"
            )
        return judged("accept" if point == "result" else "met", "fine")

    fake_llm.responder, fake_llm.coordinator = agents, coordinator
    await env.start_worker()
    try:
        result = await env.run(workflow(slow), options=RunOptions(max_auto_replans=1), timeout=90)
    finally:
        stuck.set()
    assert result.status == "completed", result.summary
    assert result.plan_version == 2 and [a.id for a in result.agents] == ["2"]
    (replan,) = [r for r in fake_llm.requests if planner(r)]
    assert "root cause: the primary site does not answer" in first_user(replan)
    (stall,) = [r for r in fake_llm.coordinator_requests if coordinator_point(r) == "stall"]
    assert "Fetch the release notes from the primary site" in first_user(stall)


async def test_offline_the_run_says_the_coordinator_is_off(env: Env) -> None:
    await env.start_worker()
    handle = await env.start(
        workflow(llm("1", "Summarize the note", extra="<input>Durable runs survive.</input>"))
    )
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed", result.summary
    assert result.goal_check == "not checked: T-1 answered offline (no model)"
    ledger = await handle.query(LeaderWorkflow.ledger)
    assert ledger.mode.startswith("off (no model configured on the workers")

    async def board_says_off() -> None:
        notes = (await handle.query(LeaderWorkflow.task_board)).notes
        assert any(n.startswith("leader: off (no model") for n in notes), notes

    await eventually(board_says_off)
