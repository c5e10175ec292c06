"""Replay histories of the fault paths (issue 24), recorded like test_replay.py's
(``XSKY_RECORD_HISTORIES=1``): malformed and spoofed signals refused, the update twins, an
attempt's input by reference, and a run continued as new whose states are named per execution
and whose older states are removed (patches refusals-heard, agent-input-by-reference,
state-per-execution)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory

from client.outcome import run_outcome
from tests.integration.eventually import eventually
from tests.integration.helpers import ask, board_shows, noop, plan, wait_requests
from tests.integration.histories import record, replayer
from tests.integration.test_durability import own_server
from tests.integration.test_scale import CAN_EVERY_30
from workflows.leader import LeaderWorkflow
from xsky.leader.limits import INPUT_BUDGET
from xsky.leader.state import (
    AnswerRequest,
    NudgeRequest,
    PageRequest,
    PauseRequest,
    ResumeRequest,
)
from xsky.plan.xml import parse_workflow
from xsky.runs import ProgressReport, RunInput, RunOptions

pytestmark = pytest.mark.integration


def activity_types(history: WorkflowHistory) -> list[str]:
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


async def test_refused_signals_the_twins_and_an_input_by_reference_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Malformed and spoofed signals refused, pause_run, resume_run and nudge_task answered, a
    task larger than an attempt's input budget handed over by reference."""
    async with own_server(tmp_path, monkeypatch, "faults") as (_, client, settings):
        reader = '<agent name="llm" id="2" depends="1"><task>sum up</task><input>{{agent_1_result}}</input></agent>'
        # two bytes a character: over the input budget, under a plan part (no plan offload)
        huge = "é" * (INPUT_BUDGET // 2 + 512)
        big = (
            f'<agent name="llm" id="3"><task>{huge}</task>'
            '<config>{"tool": "noop", "result": "read by reference"}</config></agent>'
        )
        handle = await client.start_workflow(
            LeaderWorkflow.run,
            RunInput(workflow=parse_workflow(plan(ask("1", "Region?"), reader, big, noop("4", 3)))),
            id=f"xsky-faults-{uuid.uuid4().hex[:8]}",
            task_queue=settings.task_queue,
        )
        (question,) = await wait_requests(handle, 1, timeout=60)
        await eventually(lambda: board_shows(handle, {"4": ("dispatched", "in_progress")}), 30)
        # refused: a pause that is not an object, a nudge without its message, a spoofed report
        await handle.signal("pause", None)
        await handle.signal("nudge", {"taskId": "T-2"})
        await handle.signal(
            LeaderWorkflow.report_progress,
            ProgressReport(task_id="T-4", dispatch=1, message="spoofed", activity_attempt=99),
        )
        # the twins answer
        paused = await handle.execute_update(LeaderWorkflow.pause_run, PauseRequest(reason="look"))
        assert paused.message.startswith("paused")
        await handle.execute_update(LeaderWorkflow.resume_run, ResumeRequest())
        kept = await handle.execute_update(
            LeaderWorkflow.nudge_task, NudgeRequest(task_id="T-2", message="be brief")
        )
        assert "kept" in kept.message

        async def refused() -> None:
            page = await handle.query(LeaderWorkflow.task_board, PageRequest())
            assert any("3 signal(s) refused" in n for n in page.notes), page.notes

        await eventually(refused, 30)
        await handle.execute_update(
            LeaderWorkflow.answer, AnswerRequest(request_id=question.id, text="eu-west-1")
        )
        result = await run_outcome(handle)
        assert result.status == "completed", result.summary
        assert result.agents[2].result == "read by reference"
        history = await handle.fetch_history()
        await replayer().replay_workflow(history)
        leader = settings.artifacts / handle.id / "_leader"
        assert sorted(p.name for p in leader.glob("input-*"))[0].startswith("input-T-3-v1-d1-")
        await record("faults_refused", history)


async def test_states_named_per_execution_and_the_older_ones_removed_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """On a server that suggests continue-as-new every 30 events, with a 1 KiB inline limit:
    each execution stores its state under its own number, and the next removes the older ones
    once it has read its own."""
    async with own_server(tmp_path, monkeypatch, "states", CAN_EVERY_30) as (_, client, settings):
        chain = [noop(str(i), depends=str(i - 1) if i > 1 else "") for i in range(1, 15)]
        handle = await client.start_workflow(
            LeaderWorkflow.run,
            RunInput(
                workflow=parse_workflow(plan(*chain, name="states")),
                options=RunOptions(inline_limit=1024),
            ),
            id=f"xsky-states-{uuid.uuid4().hex[:8]}",
            task_queue=settings.task_queue,
        )
        result = await run_outcome(handle)
        assert result.status == "completed", result.summary
        histories, run_id = [], handle.first_execution_run_id
        while run_id:  # the chain of executions, each naming the next
            history = await client.get_workflow_handle(handle.id, run_id=run_id).fetch_history()
            await replayer().replay_workflow(history)
            histories.append(history)
            last = history.events[-1]
            run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
        assert len(histories) >= 3, (
            f"{len(histories)} executions: continued as new fewer than twice"
        )
        assert "leader_drop" not in activity_types(histories[0])
        assert all("leader_drop" in activity_types(h) for h in histories[1:])
        # Each execution wrote its state under its own number; only the last one read is kept.
        leader = settings.artifacts / handle.id / "_leader"
        states = sorted({p.name.rpartition(".")[0] for p in leader.glob("state-*")})
        assert len(states) == 1 and states[0].startswith(f"state-{len(histories) - 1}-"), states
        await record("states_per_execution", histories[1])
