"""A budget lowered, or set, while agents run binds them too: each learns its fitted share
before its next model call and stops cleanly when that call would not fit (a security review
found an agent spending 7.5x a lowered limit, and 15x one set on a run that had none)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls
from tests.integration.eventually import eventually
from tests.integration.helpers import plan, query
from workflows.leader import LeaderWorkflow
from xsky.leader.state import SetBudgetRequest
from xsky.plan.budget import Limits, RunBudget
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration
PER_CALL = 1000  # tokens each model call reports
TURNS = 15


def looping(req: dict[str, Any], i: int) -> Reply:
    time.sleep(0.25)  # a slow model: the person acts while the agents run
    turn = sum(1 for m in req["messages"] if m.get("role") == "assistant")
    r = calls(("read_skill", {"name": f"nothing-{turn}"})) if turn < TURNS - 1 else Reply("done")
    r.tokens, r.completion = PER_CALL, 100
    return r


def agent(i: int) -> str:
    return (
        f'<agent name="llm" id="{i}"><task>answer {i}</task>'
        f'<config>{{"maxIterations": {TURNS + 2}}}</config></agent>'
    )


RESERVE = 4096  # the run's default reservation: the guarantee's margin (docs/budgets.md)


async def _bound_after(
    env: Env, fake: FakeLLM, limit: int, running: int, handle: Any, at_change: int
) -> None:
    """Once the change: what the model served stays within the limit (or what was spent
    already), one reservation, and one call per running agent (the call each may have had
    under way), and the run waits on the budget."""

    async def waits() -> None:
        page = await query(handle, LeaderWorkflow.task_board)
        assert page.counts.get("in_progress", 0) == 0 and page.counts.get("dispatched", 0) == 0
        requests = await handle.query(LeaderWorkflow.pending_requests)
        assert any(r.kind == "escalation" and "budget" in r.text for r in requests), requests

    await eventually(waits, 60)
    served = len(fake.served) * PER_CALL
    bound = max(limit, at_change) + RESERVE + running * PER_CALL
    assert served <= bound, (
        f"{served} tokens served for a limit of {limit} ({at_change} at the change)"
    )
    await handle.terminate("test over")


async def test_a_budget_lowered_mid_run_binds_the_agents_already_running(
    env: Env, fake_llm: FakeLLM
):
    fake_llm.responder = looping
    await env.start_worker()
    budget = RunBudget(run=Limits(tokens=100_000), per_agent=Limits(tokens=20_000))
    handle = await env.start(
        plan(*(agent(i) for i in range(1, 6)), name="lowered"),
        options=RunOptions(coordinator="off", max_parallel=5, budget=budget),
    )
    await eventually(lambda: _served(fake_llm, 5), 60)
    said = await handle.execute_update(LeaderWorkflow.set_budget, SetBudgetRequest(tokens=10_000))
    at_change = len(fake_llm.served) * PER_CALL
    assert "fitted to it" in said.message, said.message
    await _bound_after(env, fake_llm, 10_000, 5, handle, at_change)


async def test_a_budget_set_on_a_run_that_had_none_binds_its_running_agents(
    env: Env, fake_llm: FakeLLM
):
    fake_llm.responder = looping
    await env.start_worker()
    handle = await env.start(
        plan(*(agent(i) for i in range(1, 4)), name="unbudgeted"),
        options=RunOptions(coordinator="off", max_parallel=3),
    )
    await eventually(lambda: _served(fake_llm, 3), 60)
    before = len(fake_llm.served) * PER_CALL
    limit = before + 3_000
    await handle.execute_update(LeaderWorkflow.set_budget, SetBudgetRequest(tokens=limit))
    await _bound_after(env, fake_llm, limit, 3, handle, len(fake_llm.served) * PER_CALL)


def _served(fake: FakeLLM, n: int) -> None:
    assert len(fake.served) >= n
