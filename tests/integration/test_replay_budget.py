"""Replay history of a budget (recorded with test_replay.py's, the same command): a run that
spends its budget, waits on E-n, is raised with set_budget and completes (patch budgets)."""

# These runs measure what agents spend: the leader's coordinator is off (its own calls count
# against a budget too, and it is not consulted without room: tests/integration/test_coordinator.py).

from __future__ import annotations

import asyncio

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply
from tests.integration.helpers import plan, wait_requests
from tests.integration.histories import agents_scheduled, replayer
from tests.integration.test_budget_run import PER_AGENT, llm
from tests.integration.test_replay import finish
from workflows.leader import LeaderWorkflow
from xsky.leader.state import SetBudgetRequest
from xsky.plan.budget import Limits, RunBudget
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration


async def test_a_run_that_spends_its_budget_is_raised_and_completes_and_replays(
    env: Env, fake_llm: FakeLLM
):
    fake_llm.responder = lambda req, i: Reply(content="ok", tokens=PER_AGENT, completion=100)
    await env.start_worker()
    handle = await env.start(
        plan(*(llm(str(i)) for i in range(1, 5)), name="budget"),
        options=RunOptions(
            coordinator="off", budget=RunBudget(run=Limits(tokens=2 * PER_AGENT), reserve=PER_AGENT)
        ),
    )
    (request,) = await wait_requests(handle, 1, timeout=60)
    assert request.about == "budget" and request.task_id == "run"
    await handle.execute_update(LeaderWorkflow.set_budget, SetBudgetRequest(tokens=4 * PER_AGENT))
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed" and result.usage.tokens == 4 * PER_AGENT
    history = await finish("budget", handle)
    await replayer().replay_workflow(history)
    assert sorted(agents_scheduled(history)) == [f"T-{i}-v1-d1" for i in range(1, 5)]
