"""Budgets that hold, on the real dev server with the real openai client against the scripted
fake server: a run of 20 parallel agents on a budget for 12 pauses with one escalation and
an overrun of at most one reservation, is raised with set_budget and completes with exact
figures; an agent stops cleanly before a call its share cannot cover; a USD limit with an
unpriced model fails clearly. (A worker SIGKILL and continue-as-new: test_budget_durable.py.)"""

# These runs measure what agents spend: the leader's coordinator is off (its own calls count
# against a budget too, and it is not consulted without room: tests/integration/test_coordinator.py).

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowUpdateFailedError

from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.helpers import board, plan, query, wait_requests
from tests.integration.test_cli_runs import starter
from tests.integration.test_temporal_cli import temporal
from workflows.leader import LeaderWorkflow
from xsky.leader.state import SetBudgetRequest
from xsky.plan.budget import Limits, RunBudget
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

PER_AGENT = 1000  # each agent's one model call: 900 tokens in, 100 out


def llm(agent_id: str, config: str = "") -> str:
    cfg = f"<config>{config}</config>" if config else ""
    return f'<agent name="llm" id="{agent_id}"><task>answer {agent_id}</task>{cfg}</agent>'


def priced(tmp_path: Path) -> None:
    """The worker's price of the fake model: $1 per million tokens in, $10 out."""
    settings = tmp_path / "user-settings.json"  # XSKY_USER_SETTINGS (tests/conftest.py)
    settings.write_text(json.dumps({"prices": {"fake-model": {"input": 1.0, "output": 10.0}}}))


async def test_twenty_agents_on_a_budget_for_twelve_pause_with_e_n_and_complete_when_raised(
    env: Env, fake_llm: FakeLLM, tmp_path: Path
):
    priced(tmp_path)
    fake_llm.responder = lambda req, i: Reply(content="done", tokens=PER_AGENT, completion=100)
    await env.start_worker()
    budget = RunBudget(run=Limits(tokens=12_000), reserve=PER_AGENT)
    handle = await env.start(
        plan(*(llm(str(i)) for i in range(1, 21)), name="budget20"),
        options=RunOptions(coordinator="off", max_parallel=20, budget=budget),
    )
    (request,) = await wait_requests(handle, 1, timeout=60)
    assert (request.kind, request.about, request.task_id) == ("escalation", "budget", "run")
    assert request.text.startswith("budget: 12,000 of 12,000 tokens used")
    page = await query(handle, LeaderWorkflow.task_board)
    spent = page.budget.spent.tokens
    assert spent <= 12_000 + PER_AGENT, "overran the budget by more than one reservation"
    assert len(fake_llm.requests) == 12 and page.counts == {"completed": 12, "pending": 8}
    assert page.state == "waiting" and any("E-" in n and "budget" in n for n in page.notes)

    code, out, _ = await starter(env, "status", handle.id)
    assert code == 0 and "budget: 12,000 of 12,000 tokens" in out, out
    assert "(1,000 tokens · $0.0019)" in out, out

    code, out, _ = await starter(env, "budget", handle.id)
    assert code == 0 and out.count("1,000 tokens · $0.0019") == 12, out
    code, out, _ = await starter(env, "budget", handle.id, "tokens=20000")
    assert code == 0 and "E-1 closed: dispatch goes on" in out, out
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed", result.summary
    assert result.usage.tokens == 20 * PER_AGENT and result.usage.calls == 20
    assert result.usage.usd == pytest.approx(20 * (900e-6 + 100e-5))
    assert [a.usage.tokens for a in result.agents] == [PER_AGENT] * 20  # type: ignore[union-attr]
    assert result.budget is not None and result.budget.limits == Limits(tokens=20_000)
    assert len(fake_llm.requests) == 20  # nobody asked the model twice


async def test_an_agent_stops_before_a_call_its_cap_cannot_cover_and_goes_on_when_raised(
    env: Env, fake_llm: FakeLLM
):
    """T-1's cap is 1,500 tokens: its first call uses 1,000 and asks for a tool; the second
    would not fit, so it is never sent. Its own E-n waits; raising its cap lets it finish from
    its checkpoint."""

    def responder(req: dict, i: int) -> Reply:
        if turn_of(req) == 0:
            reply = calls(("read_skill", {"name": "nothing"}))
            reply.tokens, reply.completion = PER_AGENT, 100
            return reply
        return Reply(content="finished", tokens=PER_AGENT, completion=100)

    fake_llm.responder = responder
    await env.start_worker()
    handle = await env.start(
        plan(llm("1", '{"budget": {"tokens": 1500}}'), name="capped"),
        options=RunOptions(coordinator="off", budget=RunBudget(run=Limits(tokens=100_000))),
    )
    (request,) = await wait_requests(handle, 1, timeout=60)
    assert request.task_id == "T-1" and request.about == "budget"
    assert request.text.startswith("budget: T-1 used 1,000 of 1,500 tokens (its own cap)")
    assert len(fake_llm.requests) == 1, "a call the share could not cover was sent"
    task = (await board(handle))["1"]
    assert task.status == "blocked" and task.spend is not None and task.spend.usage.tokens == 1000

    await handle.execute_update(
        LeaderWorkflow.set_budget, SetBudgetRequest(task_id="T-1", tokens=5000)
    )
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed" and result.agents[0].result == "finished"
    assert result.usage.tokens == 2 * PER_AGENT and len(fake_llm.requests) == 2
    assert turn_of(fake_llm.requests[1]) == 1  # the second dispatch went on from the checkpoint


async def test_a_usd_limit_with_an_unpriced_model_fails_the_agent_before_any_call(
    env: Env, fake_llm: FakeLLM
):
    fake_llm.responder = lambda req, i: text("never")
    await env.start_worker()
    handle = await env.start(
        plan(llm("1"), name="unpriced"),
        options=RunOptions(coordinator="off", budget=RunBudget(run=Limits(usd=1.0))),
    )
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "failed" and fake_llm.requests == []
    error = result.agents[0].error or ""
    assert "model 'fake-model' has no price on this worker: add prices.fake-model" in error
    assert "not retried" in error and result.agents[0].attempts == 1


async def test_time_up_pauses_dispatch_and_set_budget_from_the_stock_cli_lets_it_run(
    env: Env, fake_llm: FakeLLM
):
    """A run with a minute limit already spent (minutes=0.001): nothing starts, E-n says so; a
    bad set_budget is refused with the fix; raising minutes with the stock `temporal` CLI
    (plain JSON) starts it."""
    fake_llm.responder = lambda req, i: text("ok")
    await env.start_worker()
    handle = await env.start(
        plan(llm("1"), name="timed"),
        options=RunOptions(coordinator="off", budget=RunBudget(run=Limits(minutes=0.001))),
    )

    async def timed_out() -> None:
        (request,) = await wait_requests(handle, 1)
        assert "minutes used; raise it" in request.text

    await eventually(timed_out, 60)
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(LeaderWorkflow.set_budget, SetBudgetRequest(tokens="lots"))
    assert "set_budget: tokens='lots' is not a whole number" in str(refused.value.cause)
    await temporal(
        env, "workflow", "update", "execute", "--workflow-id", handle.id,
        "--name", "set_budget", "--input", '{"minutes": 60}',
    )  # fmt: skip
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed" and result.budget is not None


async def test_an_offline_run_with_a_budget_spends_nothing_and_completes(env: Env):
    """No model: the llm agents answer offline. Each is still reserved a share (the leader
    cannot know the worker has no model), says it used nothing, and gives the share back."""
    await env.start_worker()
    agents = [
        f'<agent name="llm" id="{i}"><task>summarise</task><input>Fact {i}. More.</input></agent>'
        for i in range(1, 4)
    ]
    handle = await env.start(
        plan(*agents, name="offline-budget"),
        options=RunOptions(
            coordinator="off", budget=RunBudget(run=Limits(tokens=5000))
        ),  # one 4,096 share at a time
    )
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed", result.summary
    assert result.usage.empty() and result.budget is not None
    assert result.budget.unconfirmed.empty() and result.budget.reserved_tokens == 0
    assert all(a.provider == "offline" and a.usage is None for a in result.agents)


async def test_an_answer_cut_at_the_shares_max_tokens_is_not_the_result_and_is_asked_again(
    env: Env, fake_llm: FakeLLM
):
    """A 1,000-token share leaves the answer less room than the 900 tokens the model writes:
    the call passes max_tokens, the server cuts the answer there (finish_reason "length"), the
    agent keeps nothing of it and stops; dispatched again with room for a whole answer, it
    completes. Both calls are counted."""
    fake_llm.responder = lambda req, i: Reply(
        content="the whole answer", tokens=1000, completion=900
    )
    await env.start_worker()
    handle = await env.start(
        plan(llm("1"), name="cut"),
        options=RunOptions(
            coordinator="off", budget=RunBudget(run=Limits(tokens=10_000), reserve=1000)
        ),
    )
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed" and result.agents[0].result == "the whole answer"
    first, second = fake_llm.requests
    assert isinstance(first["max_tokens"], int) and first["max_tokens"] < 900
    assert second.get("max_tokens") is None or second["max_tokens"] >= 900
    cut = 100 + first["max_tokens"]
    assert result.usage.tokens == cut + 1000 and result.agents[0].attempts == 2
