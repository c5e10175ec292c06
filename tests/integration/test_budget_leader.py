"""The leader's own model calls on a budget, on the real dev server with the real openai client
against the scripted fake server: a 4,000-token budget with a coordinator that checks every
result never spends past its cap by more than one reservation — the checks hold their share
before they are made, the ones without room are skipped and each such task says "not checked
(budget)" — and the run said at its start that the budget was too small for its checks.

The fake server counts a coordinator request's prompt as a real one would (its size), so a
check that reads a long result costs what it would; the agents' results are long, their own
calls cheap."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, coordinator_point
from tests.integration.helpers import board, plan, query, wait_requests
from tests.integration.test_cli_runs import starter
from workflows.leader import LeaderWorkflow
from xsky.plan.budget import Limits, RunBudget, estimate_tokens
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

LIMIT = 4000
RESERVE = 300  # what an agent reserves; one reservation is what the run may overrun by
AGENT_TOKENS = 150  # each agent's one call: 100 in, 50 out
LONG = "The release notes, line by line. " * 150  # ~5 KB: each check reads it


def coordinator(req: dict[str, Any], i: int) -> Reply:
    """Accepts every result; its usage is what a real server would count for the request."""
    content = json.dumps(
        {
            "verdict": "accept" if coordinator_point(req) == "result" else "met",
            "reason": "it does its task",
        }
    )
    prompt = estimate_tokens(req["messages"], None)
    return Reply(content=content, tokens=prompt + 40, completion=40)


def spent(fake: FakeLLM) -> int:
    """Every token the fake server said it served (agents' and the coordinator's)."""
    return AGENT_TOKENS * len(fake.requests) + sum(
        estimate_tokens(r["messages"], None) + 40 for r in fake.coordinator_requests
    )


async def test_a_4000_token_budget_with_a_coordinator_spends_at_most_one_reservation_more(
    env: Env, fake_llm: FakeLLM
) -> None:
    fake_llm.responder = lambda req, i: Reply(content=LONG, tokens=AGENT_TOKENS, completion=50)
    fake_llm.coordinator = coordinator
    await env.start_worker()
    agents = "".join(
        f'<agent name="llm" id="{n}"><task>summarise part {n}</task></agent>' for n in range(1, 16)
    )
    handle = await env.start(
        plan(agents, name="leader-budget"),
        options=RunOptions(
            coordinator="act",
            max_parallel=1,
            budget=RunBudget(run=Limits(tokens=LIMIT), reserve=RESERVE),
        ),
    )
    (request,) = await wait_requests(handle, 1, timeout=90)  # the run's budget is spent
    assert (request.about, request.task_id) == ("budget", "run"), request.text
    page = await query(handle, LeaderWorkflow.task_board)
    served = spent(fake_llm)
    assert served <= LIMIT + RESERVE, f"{served} tokens reached the model on a {LIMIT} budget"
    assert page.budget is not None and page.budget.spent.tokens == served  # all of it counted
    assert fake_llm.coordinator_requests, "the coordinator was never consulted"
    assert "leader" in page.budget.sources  # its calls are the run's spend, shown apart
    rows = await board(handle)
    done = [t for t in rows.values() if t.status == "completed"]
    assert done and any(t.check == "not checked (budget)" for t in done), [
        (t.id, t.check) for t in done
    ]
    ledger = await handle.query(LeaderWorkflow.ledger)
    assert any(e.reason.startswith("not checked (budget)") for e in ledger.entries)
    assert any("too little for the leader" in n for n in page.notes)

    code, out, _ = await starter(env, "budget", handle.id)
    assert code == 0 and "leader:" in out, out
    await handle.terminate("test over")
