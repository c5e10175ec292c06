"""Verdicts on a real dev server: a failing command runs once and is not replanned; a run
held open after a failure waits with E-n until `end`; an ended run is fixed and resumed by a
follow-up run that never re-runs what completed; a cancelled run waits for nobody."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from client import XSky
from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import agents_scheduled, plan
from workflows.leader import LeaderWorkflow
from xsky.leader.state import RetryTaskRequest
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration


def shell(agent_id: str, command: str, depends: str = "", extra: str = "") -> str:
    dep = f' depends="{depends}"' if depends else ""
    return (
        f'<agent name="shell" id="{agent_id}"{dep}><task>step {agent_id}</task>'
        f'<config>{{"tool": "shell", "command": "{command}"{extra}}}</config></agent>'
    )


async def search_attributes(x: XSky, run_id: str) -> dict[str, object]:
    desc = await x.client.get_workflow_handle(run_id).describe()
    return {key.name: value for key, value in desc.typed_search_attributes}


async def test_a_failing_command_runs_once_and_is_not_replanned(env: Env):
    await env.start_worker()
    handle = await env.start(plan(shell("1", "exit 1"), shell("2", "echo never", depends="1")))
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "failed" and result.plan_version == 1  # no automatic replan
    report = {a.id: a for a in result.agents}
    assert "exited with status 1" in (report["1"].error or "")
    assert "not retried: retrying would not help" in (report["1"].error or "")
    assert report["2"].status in ("pending", "blocked")  # the dependent did not run
    events = [e async for e in handle.fetch_history_events()]
    assert agents_scheduled(events) == ["T-1-v1-d1"]
    agent_events = {
        e.event_id
        for e in events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == "run_agent"
    }
    started = [
        e.activity_task_started_event_attributes.attempt
        for e in events
        if e.HasField("activity_task_started_event_attributes")
        and e.activity_task_started_event_attributes.scheduled_event_id in agent_events
    ]
    assert started == [1], f"attempts of the failing command: {started}"


async def test_config_retries_repeat_a_deterministic_failure_as_often_as_asked(env: Env):
    await env.start_worker()
    # fails twice, then succeeds: the workspace counts the tries
    command = "echo x &gt;&gt; tries; test $(wc -l &lt; tries) -ge 3 &amp;&amp; echo ok"
    extra = ', "retries": 2, "retry": {"initialInterval": 0.1, "maximumInterval": 0.1}'
    result = await asyncio.wait_for(
        run_outcome(await env.start(plan(shell("1", command, extra=extra)))), 60
    )
    assert result.status == "completed", result.agents[0].error
    assert result.agents[0].result == "ok"


async def test_config_retries_exhausted_is_final_and_not_replanned_into_more_runs(env: Env):
    """`"retries": 2` on a command that always fails ran it 9 times: 3 attempts, then two
    automatic replans of the same step with 3 attempts each."""
    await env.start_worker()
    extra = ', "retries": 2, "retry": {"initialInterval": 0.1, "maximumInterval": 0.1}'
    handle = await env.start(plan(shell("1", "echo x &gt;&gt; runs.txt; exit 3", extra=extra)))
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "failed" and "retries exhausted (3 attempts" in (
        result.agents[0].error or ""
    ), result.agents[0].error
    ran = (env.settings.runs / handle.id / "workspace" / "runs.txt").read_text().split()
    assert len(ran) == 3, ran
    async with XSky.connect() as x:
        history = await (await x.get(handle.id)).plan_history()
    assert not any("automatic replan" in v.reason for v in history), [v.reason for v in history]


async def test_hold_on_failure_waits_with_an_escalation_until_end(env: Env):
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(
            plan(shell("1", "exit 3"), shell("2", "echo r2"), name="held"),
            options=RunOptions(hold_on_failure=600),
            id=f"xsky-held-{uuid.uuid4().hex[:6]}",
        )

        async def held() -> None:
            requests = await run.requests()
            assert [(r.id, r.kind, r.task_id) for r in requests] == [("E-1", "escalation", "T-1")]
            assert "retry, skip, replan, or end the run" in requests[0].text
            # end_run is refused while an agent still runs (a loaded machine: T-2 may be late)
            assert (await run.task("T-2")).status == "completed"

        await eventually(held, 60)
        assert (await run.temporal_status()) == "running"
        assert (await search_attributes(x, run.id)).get("XskyPending") == 1
        ended = await run.end("nothing to fix today")
        assert "ended by a person: nothing to fix today" in ended.message
        result = await asyncio.wait_for(run.result(), 60)
        assert result.status == "failed"
        assert {a.id: a.status for a in result.agents} == {"1": "failed", "2": "completed"}
        assert (await search_attributes(x, run.id)).get("XskyPending") == 0


async def test_a_run_ended_with_no_task_failed_is_called_cancelled_everywhere(env: Env):
    """`end` of a run waiting on a question: its result said cancelled, while `status` and
    `list` said failed (Temporal's status: the leader raises its result); all say cancelled."""
    from tests.integration.helpers import ask

    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(
            plan(ask("1", "Proceed?"), name="ended"), id=f"xsky-ended-{uuid.uuid4().hex[:6]}"
        )

        async def asked() -> None:
            assert [r.id for r in await run.requests()] == ["Q-1"]

        await eventually(asked, 30)
        await run.end("not today")
        result = await asyncio.wait_for(run.result(), 60)
        assert result.status == "cancelled"
        assert await run.temporal_status() == "cancelled"

        async def listed() -> None:
            (row,) = [r for r in await x.runs() if r.id == run.id]
            assert (row.status, row.xsky_status) == ("cancelled", "cancelled")

        await eventually(listed, 20)


async def test_an_ended_run_is_fixed_and_resumed_without_re_running_what_completed(env: Env):
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(
            plan(
                shell("1", "echo once &gt;&gt; side-effects; echo r1"),
                shell("2", "cat fixed", depends="1"),
                shell("3", "echo r3 from $(cat fixed)", depends="2"),
                name="fix-and-resume",
            ),
            id=f"xsky-resume-{uuid.uuid4().hex[:6]}",
        )
        first = await asyncio.wait_for(run.result(), 60)
        assert first.status == "failed"
        workspace = env.settings.runs / run.id / "workspace"
        (workspace / "fixed").write_text("the fix\n")  # the person fixes what T-2 needs

        said = await run.retry("T-2")
        assert "resumes it" in said.message
        (follow_id,) = [w for w in said.message.split() if w.startswith(f"{run.id}-retry-")]
        follow = await x.get(follow_id)
        result = await asyncio.wait_for(follow.result(), 60)
        assert result.status == "completed", result.summary
        texts = {a.id: a.result for a in result.agents}
        assert texts == {"1": "r1", "2": "the fix", "3": "r3 from the fix"}
        # T-1 ran in the first run only: never scheduled in the follow-up, done once
        first_events = [e async for e in run.handle.fetch_history_events()]
        follow_events = [e async for e in follow.handle.fetch_history_events()]
        assert [a.split("-v")[0] for a in agents_scheduled(first_events)] == ["T-1", "T-2"]
        assert [a.split("-v")[0] for a in agents_scheduled(follow_events)] == ["T-2", "T-3"]
        assert (workspace / "side-effects").read_text() == "once\n"
        # linked both ways: the follow-up names the first run; the first can be found from it
        assert (await search_attributes(x, follow.id)).get("XskyResumes") == run.id
        memo = await (await follow.handle.describe()).memo_value("resumes")
        assert memo == run.id

        async def linked() -> None:  # (the list is eventually consistent)
            assert await run.follow_ups() == [follow.id]

        await eventually(linked, 10)
        history = await follow.plan_history()
        assert history[0].reason.startswith(f"resumes {run.id}: 1 results carried over")


async def test_a_cancelled_run_waits_for_nobody(env: Env):
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(
            plan(shell("1", "echo r1"), name="reviewed"),
            review=True,
            id=f"xsky-cancelled-{uuid.uuid4().hex[:6]}",
        )

        async def waiting() -> None:
            assert (await search_attributes(x, run.id)).get("XskyPending") == 1

        await eventually(waiting, 30)
        await run.cancel()
        result = await asyncio.wait_for(run.result(), 60)
        assert result.status == "cancelled"
        attrs = await search_attributes(x, run.id)
        assert attrs.get("XskyPending") == 0 and attrs.get("XskyStatus") == "cancelled"
        assert await run.handle.query(LeaderWorkflow.pending_requests) == []
        assert run.id not in [r.id for r in await x.runs(waiting=True)]


async def test_a_refused_update_is_one_sentence_without_a_python_traceback(env: Env):
    """What the Web UI and the stock CLI show under a refused update: the reason alone."""
    await env.start_worker()
    handle = await env.start(plan(shell("1", "echo r1")), options=RunOptions(review=True))
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(LeaderWorkflow.retry_task, RetryTaskRequest(task_id="T-9"))
    cause = refused.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "Rejected"
    assert "no task 'T-9'" in cause.message
    assert cause.failure is not None and cause.failure.stack_trace == ""
