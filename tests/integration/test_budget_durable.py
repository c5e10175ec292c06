"""A budget's figures survive what Temporal survives: a worker SIGKILLed while its agents
wait on the model (their retries resume each conversation from its checkpoint, and count
what the lost attempts used exactly once), and a run that continues as new between its
agents (the spend and the raised limits travel in its state)."""

# These runs measure what agents spend: the leader's coordinator is off (its own calls count
# against a budget too, and it is not consulted without room: tests/integration/test_coordinator.py).

from __future__ import annotations

import asyncio
import os
import signal
import threading
import uuid
from pathlib import Path

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, first_user, turn_of
from tests.integration.eventually import eventually
from tests.integration.helpers import plan, query, wait_requests
from tests.integration.test_budget_run import PER_AGENT, llm
from tests.integration.test_durability import own_server, start_worker_process, stop_worker_process
from tests.integration.test_scale import CAN_EVERY_30
from workflows.leader import LeaderWorkflow
from xsky.leader.state import PauseRequest, ResumeRequest, SetBudgetRequest
from xsky.plan.budget import Limits, RunBudget
from xsky.plan.xml import parse_workflow
from xsky.runs import RunInput, RunOptions

pytestmark = pytest.mark.integration

AGENTS = 4


async def test_the_figures_survive_a_worker_sigkilled_while_its_agents_wait_on_the_model(
    env: Env, fake_llm: FakeLLM, tmp_path: Path
):
    """Each agent's first call (a tool call, 1,000 tokens) is checkpointed; its second waits
    on the model when the worker is killed. The retries resume from the checkpoints: each
    agent is charged its first call once and its second once — 2,000 — though the model was
    asked three times."""
    held = threading.Event()

    def responder(req: dict, i: int) -> Reply:
        if turn_of(req) == 0:
            reply = calls(("read_skill", {"name": "nothing"}))
            reply.tokens, reply.completion = PER_AGENT, 100
            return reply
        return Reply(content="done", tokens=PER_AGENT, completion=100, hold=held)

    fake_llm.responder = responder
    await env.start_worker(kinds=["shell"])  # the leader here; llm agents only in the subprocess
    budget = RunBudget(run=Limits(tokens=50_000))
    handle = await env.start(
        plan(*(llm(str(i)) for i in range(1, AGENTS + 1)), name="killed"),
        options=RunOptions(coordinator="off", budget=budget, heartbeat_timeout=2),
    )
    worker = start_worker_process(
        env, tmp_path / "w1.log", "--kinds", "llm", "--no-leader", "--no-skills"
    )
    try:

        def all_second_calls_waiting() -> None:
            second = [r for r in fake_llm.requests if turn_of(r) == 1]
            assert len(second) == AGENTS, f"{len(second)} second calls so far"

        await eventually(all_second_calls_waiting, 60)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
    finally:
        if worker.poll() is None:
            worker.kill()
    held.set()  # the killed calls' answers go nowhere
    fake_llm.responder = lambda req, i: (
        responder(req, i)
        if turn_of(req) == 0
        else Reply(content="done", tokens=PER_AGENT, completion=100)
    )
    second = start_worker_process(
        env, tmp_path / "w2.log", "--kinds", "llm", "--no-leader", "--no-skills"
    )
    try:
        result = await asyncio.wait_for(run_outcome(handle), 120)
    finally:
        stop_worker_process(second)
    assert result.status == "completed", result.summary
    for i in range(1, AGENTS + 1):  # asked three times: once, then twice for its second call
        assert [turn_of(r) for r in fake_llm.for_task(f"answer {i}")] == [0, 1, 1]
    assert [a.usage.tokens for a in result.agents] == [2 * PER_AGENT] * AGENTS  # type: ignore[union-attr]
    assert result.usage.tokens == AGENTS * 2 * PER_AGENT and result.usage.calls == AGENTS * 2
    assert result.budget is not None and result.budget.unconfirmed.empty()
    assert all(a.attempts == 1 for a in result.agents)  # one dispatch each, retried by Temporal
    assert all(first_user(r) for r in fake_llm.requests)


async def test_the_figures_and_a_raised_limit_survive_continue_as_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLM
):
    """A chain of 8 agents on a server that suggests continue-as-new every 30 events, with a
    budget for 4: it pauses with E-n (in a later execution than it started in), is raised, and
    ends with every figure exact."""
    fake_llm.responder = lambda req, i: Reply(content="ok", tokens=PER_AGENT, completion=100)
    async with own_server(tmp_path, monkeypatch, "can", CAN_EVERY_30) as (_, client, settings):
        chain = [
            llm(str(i)).replace("<agent ", f'<agent depends="{i - 1}" ' if i > 1 else "<agent ")
            for i in range(1, 9)
        ]
        handle = await client.start_workflow(
            LeaderWorkflow.run,
            RunInput(
                workflow=parse_workflow(plan(*chain, name="continued-budget")),
                options=RunOptions(
                    coordinator="off",
                    inline_limit=1024,
                    budget=RunBudget(run=Limits(tokens=4 * PER_AGENT), reserve=PER_AGENT),
                ),
            ),
            id=f"xsky-budget-can-{uuid.uuid4().hex[:8]}",
            task_queue=settings.task_queue,
        )
        (request,) = await wait_requests(handle, 1, timeout=90)
        assert request.text.startswith("budget: 4,000 of 4,000 tokens used")
        page = await query(handle, LeaderWorkflow.task_board)
        assert page.budget.spent.tokens == 4 * PER_AGENT and page.counts["completed"] == 4
        await handle.execute_update(LeaderWorkflow.set_budget, SetBudgetRequest(tokens=10_000))
        result = await asyncio.wait_for(run_outcome(handle), 120)
        assert result.status == "completed", result.summary
        assert result.usage.tokens == 8 * PER_AGENT and result.usage.calls == 8
        assert [a.usage.tokens for a in result.agents] == [PER_AGENT] * 8  # type: ignore[union-attr]
        assert result.budget is not None and result.budget.limits == Limits(tokens=10_000)
        assert result.budget.agents == 8
        described = await handle.describe()
        assert described.run_id != handle.first_execution_run_id, "it never continued as new"


async def test_an_agent_stopped_by_a_pause_says_what_it_used_and_goes_on_from_there(
    env: Env, fake_llm: FakeLLM
):
    """Paused with --cancel-running while its second call waits on the model: the stopped
    attempt reports its conversation's total on its way out (a cancelled activity carries no
    details), so nothing is charged unconfirmed; resumed, it goes on from its checkpoint."""
    held = threading.Event()

    def responder(req: dict, i: int) -> Reply:
        if turn_of(req) == 0:
            reply = calls(("read_skill", {"name": "nothing"}))
            reply.tokens, reply.completion = PER_AGENT, 100
            return reply
        hold = None if held.is_set() else held
        return Reply(content="done", tokens=PER_AGENT, completion=100, hold=hold)

    fake_llm.responder = responder
    await env.start_worker()
    handle = await env.start(
        plan(llm("1"), name="paused"),
        options=RunOptions(coordinator="off", budget=RunBudget(run=Limits(tokens=50_000))),
    )
    await eventually(lambda: _asked(fake_llm, 2), 60)
    await handle.signal(LeaderWorkflow.pause, PauseRequest(cancel_running=True))

    async def stopped() -> None:
        page = await query(handle, LeaderWorkflow.task_board)
        assert page.tasks[0].status == "pending", page.tasks[0].status
        assert page.budget.spent.tokens == PER_AGENT and page.budget.unconfirmed.empty()

    await eventually(stopped, 60)
    held.set()
    await handle.signal(LeaderWorkflow.resume, ResumeRequest())
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed" and result.usage.tokens == 2 * PER_AGENT
    assert [turn_of(r) for r in fake_llm.requests] == [0, 1, 1]


def _asked(fake: FakeLLM, count: int) -> None:
    assert len(fake.requests) >= count, f"{len(fake.requests)} model calls so far"
