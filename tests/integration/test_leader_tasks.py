"""Steering one task of a running run on a real dev server: retry, skip, cancel, answers, nudges, automatic replans and the stall ladder, cancelling the run, define_role refusals."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import CancelledError

from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import (
    RUNNING,
    agents_scheduled,
    ask,
    board,
    board_shows,
    handled_end_of,
    handled_signal,
    noop,
    plan,
    rejected,
    wait_requests,
)
from workflows.leader import LeaderWorkflow
from xsky.leader.state import (
    AnswerRequest,
    ApproveToolRequest,
    NudgeRequest,
    PauseRequest,
    ResumeRequest,
    RetryTaskRequest,
    SkipTaskRequest,
    TaskRequest,
)
from xsky.plan.agent_config import StallWindows
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration


async def test_retry_task_with_new_text_and_its_rejections(env: Env):
    await env.start_worker()
    failing = '<agent name="shell" id="2"><task>flaky</task><config>{"tool": "shell", "command": "exit 1", "retry": {"maximumAttempts": 1}}</config></agent>'
    handle = await env.start(
        plan(noop("1", 0), failing, ask("3", "hold the run open")),
        options=RunOptions(max_auto_replans=0),
    )
    await eventually(lambda: board_shows(handle, {"2": "failed", "1": "completed"}))
    assert "no task 'T-9'" in await rejected(
        handle, LeaderWorkflow.retry_task, RetryTaskRequest(task_id="T-9")
    )
    assert "T-1 is completed" in await rejected(
        handle, LeaderWorkflow.retry_task, RetryTaskRequest(task_id="T-1")
    )
    result = await handle.execute_update(
        LeaderWorkflow.retry_task, RetryTaskRequest(task_id="2", task="not flaky any more")
    )
    # (a direct shell tool: its new text is kept, and it is told its call is the same)
    assert result.message.startswith("T-2 will run again — with the same call")
    assert result.plan_version == 2
    b = await eventually(lambda: board_shows(handle, {"2": ("failed", "completed")}))
    assert b["2"].attempt == 2 and b["2"].description == "not flaky any more"
    # The question of T-3 holds the run open: settle T-2 by hand first, then T-3.
    await handle.execute_update(
        LeaderWorkflow.skip_task, SkipTaskRequest(task_id="2", result="manual")
    )
    await handle.execute_update(
        LeaderWorkflow.skip_task, SkipTaskRequest(task_id="3", result="skipped")
    )
    run = await asyncio.wait_for(run_outcome(handle), 30)
    assert run.status == "completed"


async def test_skip_task_gives_dependents_its_result_and_refuses_completed_tasks(env: Env):
    await env.start_worker()
    dependent = '<agent name="shell" id="2" depends="1"><task>use</task><config>{"tool": "shell", "command": "echo got {{agent_1_result}}"}</config></agent>'
    handle = await env.start(plan(ask("1", "Never answered"), dependent, noop("3", 0)))
    await wait_requests(handle, 1)
    await eventually(lambda: board_shows(handle, {"3": "completed"}))
    assert "already completed" in await rejected(
        handle, LeaderWorkflow.skip_task, SkipTaskRequest(task_id="T-3")
    )
    await handle.execute_update(
        LeaderWorkflow.skip_task, SkipTaskRequest(task_id="T-1", result="manual-value")
    )
    run = await asyncio.wait_for(run_outcome(handle), 30)
    assert run.agents[0].status == "skipped" and run.agents[1].result == "got manual-value"
    assert await handle.query(LeaderWorkflow.pending_requests) == []  # the question was withdrawn


async def test_cancel_task_stops_it_and_blocks_its_dependents(env: Env):
    await env.start_worker()
    handle = await env.start(
        plan(noop("1", 60), noop("2", 0, depends="1"), noop("3", 0.5)),
        options=RunOptions(max_auto_replans=0),
    )
    await eventually(lambda: board_shows(handle, {"1": RUNNING}))
    result = await handle.execute_update(LeaderWorkflow.cancel_task, TaskRequest(task_id="T-1"))
    assert result.message == "T-1 cancelled; blocked now: T-2"
    assert "already cancelled" in await rejected(
        handle, LeaderWorkflow.cancel_task, TaskRequest(task_id="T-1")
    )
    run = await asyncio.wait_for(run_outcome(handle), 30)
    statuses = {a.id: a.status for a in run.agents}
    assert (
        statuses == {"1": "cancelled", "2": "blocked", "3": "completed"} and run.status == "failed"
    )


async def test_answer_delivers_the_answer_and_refuses_wrong_requests(env: Env):
    await env.start_worker()
    handle = await env.start(plan(ask("1", "Which region?")))
    (req,) = await wait_requests(handle, 1)
    assert (
        req.id == "Q-1"
        and req.kind == "question"
        and req.text == "Which region?"
        and req.task_id == "T-1"
    )
    assert (await board(handle))["1"].status == "blocked"
    assert "no request 'Q-7'" in await rejected(
        handle, LeaderWorkflow.answer, AnswerRequest(request_id="Q-7", text="x")
    )
    assert "empty" in await rejected(
        handle, LeaderWorkflow.answer, AnswerRequest(request_id="Q-1", text="  ")
    )
    assert "not a tool approval" in await rejected(
        handle, LeaderWorkflow.approve_tool, ApproveToolRequest(request_id="Q-1")
    )
    await handle.execute_update(
        LeaderWorkflow.answer, AnswerRequest(request_id="Q-1", text="eu-west-1")
    )
    run = await asyncio.wait_for(run_outcome(handle), 30)
    assert run.agents[0].result == "eu-west-1" and run.agents[0].attempts == 2


async def test_answering_twice_is_refused(env: Env):
    await env.start_worker()
    handle = await env.start(plan(ask("1", "First?"), ask("2", "Second?"), noop("3", 30)))
    await wait_requests(handle, 2)
    await handle.execute_update(LeaderWorkflow.answer, AnswerRequest(request_id="Q-1", text="a"))
    assert "already answered" in await rejected(
        handle, LeaderWorkflow.answer, AnswerRequest(request_id="Q-1", text="b")
    )


async def test_two_questions_pending_at_once_answered_in_reverse_order(env: Env):
    await env.start_worker()
    handle = await env.start(plan(ask("1", "Colour?"), ask("2", "Size?")))
    requests = await wait_requests(handle, 2)
    by_task = {r.task_id: r.id for r in requests}
    await handle.execute_update(
        LeaderWorkflow.answer, AnswerRequest(request_id=by_task["T-2"], text="large")
    )
    await eventually(lambda: board_shows(handle, {"2": "completed"}))
    assert (await board(handle))["1"].status == "blocked"
    await handle.execute_update(
        LeaderWorkflow.answer, AnswerRequest(request_id=by_task["T-1"], text="blue")
    )
    run = await asyncio.wait_for(run_outcome(handle), 30)
    assert [a.result for a in run.agents] == ["blue", "large"]


async def test_nudge_is_kept_for_the_agent(env: Env):
    await env.start_worker()
    # An agent with no tool in its config reads nudges (a model does); under review it waits.
    reader = '<agent name="llm" id="1"><task>sum up</task><input>text</input></agent>'
    handle = await env.start(plan(reader), options=RunOptions(review=True))
    await handle.signal(LeaderWorkflow.nudge, NudgeRequest(task_id="T-1", message="wrap it up"))

    async def kept() -> None:
        nudges = await handle.query(LeaderWorkflow.nudges, TaskRequest(task_id="T-1"))
        assert nudges == ["wrap it up"]

    await eventually(kept)


async def test_automatic_replan_on_failure_stops_at_the_cap(env: Env):
    await env.start_worker()
    failing = '<agent name="shell" id="1"><task>always fails</task><config>{"tool": "shell", "command": "exit 7", "retry": {"maximumAttempts": 1}}</config></agent>'
    # exit 7 is deterministic: replanned automatically only because the run opts in
    handle = await env.start(
        plan(failing), options=RunOptions(max_auto_replans=2, replan_deterministic=True)
    )
    run = await asyncio.wait_for(run_outcome(handle), 60)
    assert run.status == "failed" and run.agents[0].attempts == 3  # first try + 2 replans
    history = await handle.query(LeaderWorkflow.plan_history)
    reasons = [v.reason for v in history]
    assert sum("automatic replan" in r for r in reasons) == 2, reasons
    assert "automatic replan 1/2: T-1 failed" in reasons[1] and [v.version for v in history] == [
        1,
        2,
        3,
    ]


async def test_the_stall_ladder_nudges_restarts_replans_and_escalates(env: Env):
    """The wiring: the leader's timer drives the ladder (the server asked, before each rung,
    whether the attempt runs: it does), a restart and the replan dispatch again, the escalation is a request a person answers.
    (Which rung is due when, exactly: tests/unit/test_leader_core_rules.py.)"""
    await env.start_worker()
    stalled = noop("1", 120, extra=', "heartbeatTimeout": 1.5')
    handle = await env.start(
        plan(stalled),
        options=RunOptions(
            max_auto_replans=1, stall=StallWindows(nudge_after=0.5, restart_after=1.0)
        ),
    )
    (req,) = await wait_requests(handle, 1, timeout=60)
    assert req.id.startswith("E-") and req.kind == "escalation" and "no replans left" in req.text
    b = await board(handle)
    assert (
        b["1"].status == "blocked" and b["1"].attempt == 4
    )  # d1, restart d2, replan → d3, restart d4
    # A direct tool call has no model to read a nudge: the nudge rung is only counted
    # (patch stall-waits-for-worker; a model agent's nudges: tests/unit/test_stall_waits_for_worker.py).
    assert await handle.query(LeaderWorkflow.nudges, TaskRequest(task_id="T-1")) == []
    history = await handle.query(LeaderWorkflow.plan_history)
    assert any("automatic replan 1/1: T-1 stalled" in v.reason for v in history)
    # A person decides: skip it.
    await handle.execute_update(
        LeaderWorkflow.skip_task, SkipTaskRequest(task_id="T-1", result="done by hand")
    )
    run = await asyncio.wait_for(run_outcome(handle), 30)
    assert run.status == "completed" and run.agents[0].result == "done by hand"


async def test_cancelling_the_run_stops_running_agents(env: Env):
    await env.start_worker()
    handle = await env.start(plan(noop("1", 60), noop("2", 0, depends="1")))
    await eventually(lambda: board_shows(handle, {"1": RUNNING}))
    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as info:
        await asyncio.wait_for(run_outcome(handle), 30)
    assert isinstance(info.value.cause, CancelledError)
    desc = await handle.describe()
    assert desc.status.name == "CANCELED"
    # Its board says what became of each task, and no duration goes on growing.
    first = await board(handle)
    assert {a: t.status for a, t in first.items()} == {"1": "cancelled", "2": "cancelled"}
    assert all(t.ended_at is not None for t in first.values())
    await asyncio.sleep(1.1)
    assert [t.duration_s for t in (await board(handle)).values()] == [
        t.duration_s for t in first.values()
    ]


async def test_a_cancelled_task_stays_cancelled_through_pause_and_resume(env: Env):
    """Review finding: a pause that stops running agents must not revive a cancelled one."""
    await env.start_worker()
    handle = await env.start(
        plan(noop("1", 60), noop("2", 0.5), ask("3", "hold the run open")),
        options=RunOptions(max_auto_replans=0),
    )
    await eventually(lambda: board_shows(handle, {"1": RUNNING}))
    await handle.execute_update(LeaderWorkflow.cancel_task, TaskRequest(task_id="T-1"))
    await handle.signal(LeaderWorkflow.pause, PauseRequest(cancel_running=True))
    # The pause reached the run and T-1's stopped attempt ended while it was paused.
    await eventually(lambda: handled_signal(handle, "pause"))
    await eventually(lambda: handled_end_of(handle, "T-1-v1-d1"))
    await handle.signal(LeaderWorkflow.resume, ResumeRequest())
    # The resume is handled: whatever it dispatches is in the history, and T-1 is not in it.
    events = await eventually(lambda: handled_signal(handle, "resume"))
    assert [a for a in agents_scheduled(events) if a.startswith("T-1-")] == ["T-1-v1-d1"]
    await eventually(lambda: board_shows(handle, {"2": "completed"}))
    await handle.execute_update(LeaderWorkflow.skip_task, SkipTaskRequest(task_id="T-3"))
    run = await asyncio.wait_for(run_outcome(handle), 30)
    assert {a.id: (a.status, a.attempts) for a in run.agents} == {
        "1": ("cancelled", 1),
        "2": ("completed", 1),
        "3": ("skipped", 1),
    }


async def test_retry_with_new_text_changes_that_task_only(env: Env):
    """Review finding: new task text for one task must not reset other failed or cancelled ones."""
    await env.start_worker()
    failing = '<agent name="shell" id="4"><task>fails</task><config>{"tool": "shell", "command": "exit 1", "retry": {"maximumAttempts": 1}}</config></agent>'
    handle = await env.start(
        plan(noop("2", 60), ask("3", "hold the run open"), failing),
        options=RunOptions(max_auto_replans=0),
    )
    await eventually(lambda: board_shows(handle, {"4": "failed", "2": RUNNING}))
    await handle.execute_update(LeaderWorkflow.cancel_task, TaskRequest(task_id="T-2"))
    result = await handle.execute_update(
        LeaderWorkflow.retry_task, RetryTaskRequest(task_id="T-4", task="fails again")
    )
    assert result.plan_version == 2
    b = await board(handle)
    assert b["2"].status == "cancelled" and b["2"].attempt == 1  # untouched by T-4's retry
    assert b["4"].description == "fails again" and b["4"].status in (
        "pending",
        "dispatched",
        "in_progress",
        "failed",
    )
    history = await handle.query(LeaderWorkflow.plan_history)
    assert history[-1].reason == "T-4 retried with new task text"


async def test_define_role_with_text_a_role_cannot_hold_is_refused_not_stuck(env: Env):
    from xsky.leader.state import DefineRoleRequest

    await env.start_worker()
    handle = await env.start(plan(noop("1", 30)))
    msg = await rejected(
        handle,
        LeaderWorkflow.define_role,
        DefineRoleRequest(name="odd", description="bell \x07 here"),
    )
    assert msg.startswith("role odd:")
    ok = await handle.execute_update(
        LeaderWorkflow.define_role, DefineRoleRequest(name="fine", description="plain")
    )
    assert "defined" in ok.message  # the run still answers: no workflow task is stuck
