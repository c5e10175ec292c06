"""Nothing wedges a run by size: oversized nudges, answers, replan prompts, pause reasons and
progress reports are refused (with their cap), a plan's huge task reaches its agent by
reference, and the run stays healthy — no workflow task fails — and completes."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.api.enums.v1 import EventType

from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import ask, board_shows, noop, plan, rejected, wait_requests
from workflows.leader import LeaderWorkflow
from xsky.leader.limits import ANSWER_CHARS, INPUT_BUDGET, NUDGE_CHARS
from xsky.leader.state import (
    AnswerRequest,
    NudgeRequest,
    PageRequest,
    PauseRequest,
    ReplanRequest,
    TaskRequest,
)
from xsky.runs import ProgressReport

pytestmark = pytest.mark.integration

BIG = "x" * (3 * 1024 * 1024 // 2)  # 1.5 MiB: three of them once made a 4.7 MB activity input


async def test_oversized_texts_are_refused_or_go_by_reference_and_the_run_completes(env: Env):
    await env.start_worker()
    reader = '<agent name="llm" id="2" depends="1"><task>sum up</task><input>{{agent_1_result}}</input></agent>'
    worker = noop("4", 8)  # runs while the messages come
    handle = await env.start(plan(ask("1", "Which region?"), reader, worker))
    (question,) = await wait_requests(handle, 1)
    await eventually(lambda: board_shows(handle, {"4": ("dispatched", "in_progress")}), 30)
    # A progress report from anyone but the attempt itself (no token), however large: refused.
    await handle.signal(
        LeaderWorkflow.report_progress,
        ProgressReport(task_id="T-4", dispatch=1, message=BIG, activity_attempt=1000000),
    )

    for _ in range(3):  # as signals: refused where people look
        await handle.signal(LeaderWorkflow.nudge, NudgeRequest(task_id="T-2", message=BIG))
    said = await rejected(
        handle, LeaderWorkflow.nudge_task, NudgeRequest(task_id="T-2", message=BIG)
    )
    assert f"over the cap of {NUDGE_CHARS:,}" in said, said
    said = await rejected(
        handle, LeaderWorkflow.answer, AnswerRequest(request_id=question.id, text=BIG)
    )
    assert f"over the cap of {ANSWER_CHARS:,}" in said, said
    said = await rejected(handle, LeaderWorkflow.replan, ReplanRequest(prompt=BIG))
    assert "replan prompt" in said and "over the cap" in said, said
    await handle.signal(LeaderWorkflow.pause, PauseRequest(reason=BIG))

    async def refused_all() -> None:
        page = await handle.query(LeaderWorkflow.task_board, PageRequest())
        assert any(
            "5 signal(s) refused (malformed, spoofed or not applicable)" in n for n in page.notes
        ), page.notes
        assert page.state == "waiting", page.state  # the oversized pause was not taken

    await eventually(refused_all, 30)
    nudges = await handle.query(LeaderWorkflow.nudges, TaskRequest(task_id="T-2"))
    assert nudges == []

    # A task too large for an activity's input, by replan: it reaches its agent by reference.
    huge = "y" * (INPUT_BUDGET + 1024)
    xml = plan(
        ask("1", "Which region?"),
        reader,
        f'<agent name="llm" id="3"><task>{huge}</task>'
        '<config>{"tool": "noop", "result": "huge task read"}</config></agent>',
        worker,
    )
    await handle.execute_update(LeaderWorkflow.replan, ReplanRequest(xml=xml))
    await handle.execute_update(
        LeaderWorkflow.answer, AnswerRequest(request_id=question.id, text="eu-west-1")
    )
    result = await asyncio.wait_for(run_outcome(handle), 90)
    assert result.status == "completed", result.summary
    assert [a.result for a in result.agents][::2] == ["eu-west-1", "huge task read"]
    board = (await handle.query(LeaderWorkflow.task_board, PageRequest())).tasks
    assert board[3].tries == 1, "the spoofed report's attempt number was taken"
    stored = sorted(
        p.name for p in (env.settings.artifacts / handle.id / "_leader").glob("input-*")
    )
    assert stored and all(name.startswith("input-T-3-v2-d1-") for name in stored), stored
    # A task that fails is the code's doing, wherever it is. A task that times out may be the
    # machine's (CI once stalled a fresh run's first task 10 s, before any message was sent):
    # those count from the first oversized message on, which is what this test is about.
    events = [e async for e in handle.fetch_history_events()]
    first_big = next(
        e.event_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
        and e.workflow_execution_signaled_event_attributes.signal_name == "report_progress"
    )
    failed = [e for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
    failed += [
        e
        for e in events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT and e.event_id > first_big
    ]
    assert failed == [], "a workflow task failed: the run was wedged for a while"
    log = await handle.query(LeaderWorkflow.permission_log)
    refusals = [e for e in log if e.effect == "deny" and e.reason.startswith("refused:")]
    assert [e.tool for e in refusals] == [
        "report_progress signal",
        "nudge signal",
        "nudge signal",
        "nudge signal",
        "pause signal",
    ], refusals
    assert all(len(e.arguments) <= 200 for e in refusals)
