"""An update typed into the stock ``temporal`` CLI (or the Web UI) with a field misspelt is
refused naming the field — not taken with that field's default. ``{"decison": "deny"}`` once
approved the call a person meant to deny (``decision`` defaults to ``allow_once``); a
``taskID`` set the whole run's budget instead of one task's cap; a ``reslt`` skipped a task
with an empty result. The signals refused such fields already (tests/integration/test_refusals.py)."""

from __future__ import annotations

import asyncio

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.helpers import ask, plan, wait_requests
from tests.integration.test_refusals import temporal
from workflows.leader import LeaderWorkflow
from xsky.leader.state import AnswerRequest, ApproveToolRequest, PageRequest

pytestmark = pytest.mark.integration

# python3 -c is code the checker cannot read: asked for, in every mode.
ASKED = (
    '<agent name="shell" id="2"><task>asked</task><config>'
    '{"tool": "shell", "command": "python3 -c \'print(21 * 2)\'"}</config></agent>'
)

TYPOS: list[tuple[str, str, str]] = [
    ("approve_tool", '{"requestId": "A-2", "decison": "deny"}', "`decision` for `decison`"),
    ("approve_tool", '{"requestId": "A-2", "Decision": "deny"}', "unknown field(s) `Decision`"),
    ("set_budget", '{"taskID": "T-2", "tokens": 5}', "`taskId` for `taskID`"),
    ("skip_task", '{"taskId": "T-1", "reslt": "42"}', "`result` for `reslt`"),
    ("pause_run", '{"cancelRuning": true}', "`cancelRunning` for `cancelRuning`"),
    ("end_run", '{"reasn": "done"}', "`reason` for `reasn`"),
    ("answer", '{"requestId": "Q-1", "text": "x", "txt": "y"}', "unknown field(s) `txt`"),
]


async def test_an_update_with_a_misspelt_field_is_refused_and_changes_nothing(env: Env):
    await env.start_worker()
    handle = await env.start(plan(ask("1", "Which region?"), ASKED))
    await wait_requests(handle, 2)
    wid = ["--workflow-id", handle.id]
    for name, payload, said in TYPOS:
        code, out = await temporal(
            env, "workflow", "update", "execute", *wid, "--name", name, "--input", payload
        )
        assert code != 0 and said in out and "nothing was changed" in out, f"{name}: {out}"
    page = await handle.query(LeaderWorkflow.task_board, PageRequest())
    assert page.state == "waiting", page.state  # not paused, not ended
    assert page.budget is None or not page.budget.limits, page.budget  # no budget was set
    # nothing approved, skipped or answered (the two requests are numbered as they came)
    pending = {r.id[0]: r.id for r in await handle.query(LeaderWorkflow.pending_requests)}
    assert sorted(pending) == ["A", "Q"], pending

    # Spelt right, the same requests are taken.
    await handle.execute_update(
        LeaderWorkflow.approve_tool, ApproveToolRequest(request_id=pending["A"], decision="deny")
    )
    await handle.execute_update(
        LeaderWorkflow.answer, AnswerRequest(request_id=pending["Q"], text="eu-west-1")
    )
    result = await asyncio.wait_for(run_outcome(handle), 60)
    by_id = {a.id: a for a in result.agents}
    assert by_id["1"].result == "eu-west-1"
    assert by_id["2"].status == "failed" and "denied" in (by_id["2"].error or ""), by_id["2"]
