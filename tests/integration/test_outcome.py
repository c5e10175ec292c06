"""A run's Temporal status is its outcome, and search attributes say what it is doing."""

from __future__ import annotations

import asyncio
import json

import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError

from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import RUNNING, ask, board_shows, noop, plan, query, wait_requests
from tests.integration.test_cli_runs import starter
from tests.integration.test_temporal_cli import temporal
from workflows.leader import LeaderWorkflow
from xsky.leader.state import AnswerRequest
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

FAILING = '<agent name="shell" id="2"><task>breaks</task><config>{"tool": "shell", "command": "exit 3", "retry": {"maximumAttempts": 1}}</config></agent>'


async def listed(env: Env, query_text: str, expected: list[str]) -> None:
    """Assert that a visibility query finds exactly these runs (visibility is eventually
    consistent: ask again with ``eventually``)."""
    ids = [w.id async for w in env.client.list_workflows(query_text)]
    assert ids == expected, f"{query_text!r} finds {ids}, not {expected}"


async def test_a_run_with_a_failed_agent_is_failed_in_temporal_and_its_result_stays_readable(
    env: Env,
):
    await env.start_worker()
    handle = await env.start(
        plan(noop("1"), FAILING, noop("3", depends="2"), name="fails"),
        options=RunOptions(max_auto_replans=0),
    )
    with pytest.raises(WorkflowFailureError) as info:
        await asyncio.wait_for(handle.result(), 60)
    assert "failed: 1 of 3 agents completed; 1 failed (T-2); 1 blocked (T-3)" in str(
        info.value.cause
    )
    desc = await handle.describe()
    assert desc.status == WorkflowExecutionStatus.FAILED
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "failed" and [a.status for a in result.agents] == [
        "completed",
        "failed",
        "blocked",
    ]
    assert "status 3" in (result.agents[1].error or "")
    page = await query(handle, LeaderWorkflow.results)  # a closed run still answers queries
    assert page.total == 3 and page.agents[1].status == "failed"
    failed = f"WorkflowId='{handle.id}' AND XskyStatus='failed' AND XskyFailed=1"
    await eventually(lambda: listed(env, failed, [handle.id]), timeout=20)


async def test_runs_waiting_on_a_person_are_found_by_xsky_pending(env: Env):
    await env.start_worker()
    handle = await env.start(plan(ask("1", "Go?"), noop("2", depends="1"), name="waits"))
    (req,) = await wait_requests(handle, 1)
    waiting = f"WorkflowId='{handle.id}' AND XskyPending > 0 AND XskyStatus='waiting' AND XskyPlan='waits'"
    await eventually(lambda: listed(env, waiting, [handle.id]), timeout=20)
    # The stock CLI's filter and ours find it too.
    listed_by_temporal = await temporal(
        env,
        "workflow",
        "list",
        "--query",
        f"WorkflowId='{handle.id}' AND XskyPending > 0",
        "-o",
        "json",
    )
    assert handle.id in listed_by_temporal
    code, out, err = await starter(env, "list", "--waiting", "--json")
    rows = [r for r in json.loads(out) if r["workflowId"] == handle.id]
    assert (
        code == 0
        and rows
        and rows[0]["waiting"] == rows[0]["pending"] == 1
        and rows[0]["xskyStatus"] == "waiting"
        and rows[0]["plan"] == "waits"
    )
    code, out, _ = await starter(env, "list", "--status", "failed", "--json")
    assert code == 0 and handle.id not in [r["workflowId"] for r in json.loads(out)]
    await handle.execute_update(LeaderWorkflow.answer, AnswerRequest(request_id=req.id, text="go"))
    assert (await asyncio.wait_for(handle.result(), 60)).status == "completed"
    done = f"WorkflowId='{handle.id}' AND XskyPending = 0 AND XskyStatus='completed'"
    await eventually(lambda: listed(env, done, [handle.id]), timeout=20)


async def test_a_cancelled_run_is_cancelled_in_temporal(env: Env):
    await env.start_worker()
    handle = await env.start(plan(noop("1", 30), name="cancel-me"))
    await eventually(lambda: board_shows(handle, {"1": RUNNING}))
    await handle.cancel()
    with pytest.raises(WorkflowFailureError):
        await asyncio.wait_for(handle.result(), 60)
    assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
