"""Replay histories of the verdicts (recorded with test_replay.py's, the same command): a held
run whose cancel survives a replan and that end_run closes, a follow-up run, a cancelled run
that withdraws its question."""

from __future__ import annotations

import pytest
from temporalio.client import WorkflowFailureError

from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import ask, board, noop, plan, query, wait_requests
from tests.integration.histories import agents_scheduled
from tests.integration.test_replay import finish, shell
from workflows.leader import LeaderWorkflow
from xsky.leader.state import EndRunRequest, ReplanRequest, TaskRequest
from xsky.runs import ResumeFrom, RunOptions

pytestmark = pytest.mark.integration


async def test_a_held_run_keeps_a_cancel_through_a_replan_and_is_ended(env: Env):
    """T-1 fails deterministically (no automatic replan) and the run holds with E-1; a person
    cancels T-2 and replans with the same plan: T-1 runs again, T-2 stays cancelled; T-1 fails
    again, E-2 holds, end_run closes the run (patches deterministic-failures-final,
    cancelled-stays-cancelled, requests-end-with-run)."""
    await env.start_worker()
    xml = plan(shell("1", "exit 3"), ask("2", "which?"), name="held")
    handle = await env.start(xml, options=RunOptions(hold_on_failure=600))
    held = await wait_requests(handle, 2)
    assert sorted(r.id for r in held) == ["E-2", "Q-1"] or sorted(r.id for r in held) == [
        "E-1",
        "Q-2",
    ]
    await handle.execute_update(LeaderWorkflow.cancel_task, TaskRequest(task_id="T-2"))
    await handle.execute_update(LeaderWorkflow.replan, ReplanRequest(xml=xml))

    async def held_again() -> None:
        reqs = await query(handle, LeaderWorkflow.pending_requests)
        assert [(r.kind, r.task_id) for r in reqs] == [("escalation", "T-1")], reqs
        assert (await board(handle))["1"].attempt == 2

    await eventually(held_again, 60)
    assert (await board(handle))["2"].status == "cancelled"
    await handle.execute_update(LeaderWorkflow.end_run, EndRunRequest(reason="by hand"))
    result = await run_outcome(handle)
    assert result.status == "failed"
    assert await query(handle, LeaderWorkflow.pending_requests) == []
    history = await finish("held_ended", handle)
    assert agents_scheduled(history) == ["T-1-v1-d1", "T-2-v1-d1", "T-1-v2-d2"]


async def test_a_follow_up_run_carries_what_completed_and_replays(env: Env):
    await env.start_worker()
    first = await env.start(plan(noop("1"), shell("2", "cat fixed", depends="1"), name="fix"))
    failed = await run_outcome(first)
    assert failed.status == "failed"
    (env.settings.runs / first.id / "workspace" / "fixed").write_text("fixed\n")
    resume = ResumeFrom(
        run_id=first.id,
        workspace_of=first.id,
        carried=[a for a in failed.agents if a.status == "completed"],
        rerun=["2"],
    )
    handle = await env.start(
        plan(noop("1"), shell("2", "cat fixed", depends="1"), name="fix"), resume=resume
    )
    result = await run_outcome(handle)
    assert result.status == "completed" and [a.result for a in result.agents] == ["r1", "fixed"]
    history = await finish("resumed", handle)
    assert agents_scheduled(history) == ["T-2-v1-d1"]


async def test_a_cancelled_run_withdraws_what_waited_and_replays(env: Env):
    await env.start_worker()
    handle = await env.start(plan(ask("1", "which?"), name="cancelled"))
    await wait_requests(handle, 1)
    await handle.cancel()
    with pytest.raises(WorkflowFailureError):  # Cancelled in Temporal: no return value
        await handle.result()
    assert (await handle.describe()).status.name == "CANCELED"  # type: ignore[union-attr]
    assert await query(handle, LeaderWorkflow.pending_requests) == []
    await finish("cancelled_waiting", handle)
