"""Refusals that are heard: 250 malformed signals and updates sent with the stock `temporal`
CLI. Every malformed signal is on the board's count and in the permission log with what was
wrong; every malformed update is refused to its sender in one sentence naming the field (and
logged by the worker); the run is not paused by any of them and completes."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections import Counter

import pytest

from cli.devserver import temporal_binary
from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import ask, plan, wait_requests
from workflows.leader import LeaderWorkflow
from xsky.leader.state import AnswerRequest, PageRequest

pytestmark = pytest.mark.integration

TOTAL = 250

# (kind, name, extra CLI arguments, what the refusal must say)
SIGNALS: list[tuple[str, list[str], str]] = [
    ("pause", ["--input", "null"], "must be a JSON object"),
    ("pause", ["--input", '{"frobnicate": true}'], "unknown field(s) `frobnicate`"),
    ("pause", ["--input", '{"cancelRunning": "yes please"}'], "field `cancelRunning`"),
    ("pause", ["--input", '"lunch"'], "must be a JSON object"),
    ("pause", ["--input", "[1, 2]"], "must be a JSON object"),
    ("pause", ["--input", '{"reason": 42}'], "field `reason`"),
    ("resume", ["--input", "17"], "must be a JSON object"),
    ("resume", ["--input", '{"why": "x"}'], "unknown field(s) `why`"),
    ("nudge", ["--input", '{"taskId": "T-2"}'], "field `message` is missing"),
    ("nudge", ["--input", '{"taskId": 2, "message": "x"}'], "field `taskId`"),
    ("nudge", ["--input", '{"taskId": "T-99", "message": "x"}'], "no task"),
    ("nudge", ["--input", "true"], "must be a JSON object"),
    ("nudge", ["--input-meta", "encoding=binary/plain", "--input", '"raw bytes"'], "not JSON"),
    ("report_progress", ["--input", '{"taskId": "T-1"}'], "field `dispatch` is missing"),
    ("report_progress", ["--input", '{"taskId": "T-1", "dispatch": "one"}'], "field `dispatch`"),
]
UPDATES: list[tuple[str, list[str], str]] = [
    ("answer", ["--input", '{"requestId": "Q-1", "text": 42}'], "field `text`"),
    ("answer", ["--input", '{"text": "x"}'], "field `requestId` is missing"),
    ("answer", ["--input", "null"], "must be a JSON object"),
    ("approve_tool", ["--input", '{"requestId": "A-1", "decision": "maybe"}'], "field `decision`"),
    ("replan", ["--input", "[]"], "must be a JSON object"),
    ("retry_task", ["--input", '{"taskId": 3}'], "field `taskId`"),
    ("skip_task", ["--input", '{"result": "x"}'], "field `taskId` is missing"),
    ("pause_run", ["--input", '{"cancelRunning": []}'], "field `cancelRunning`"),
    ("nudge_task", ["--input", '{"taskId": "T-2", "message": null}'], "field `message`"),
    ("end_run", ["--input", '{"reason": 5}'], "field `reason`"),
]


async def temporal(env: Env, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        temporal_binary(),
        *args,
        "--address",
        env.address,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode()


async def test_250_malformed_signals_and_updates_are_refused_where_people_see_them(
    env: Env, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.WARNING, logger="xsky.refusals")
    await env.start_worker()
    reader = '<agent name="llm" id="2" depends="1"><task>sum up</task><input>{{agent_1_result}}</input></agent>'
    handle = await env.start(plan(ask("1", "Which region?"), reader))
    await wait_requests(handle, 1)
    wid = ["--workflow-id", handle.id]
    messages = list(
        itertools.islice(
            itertools.cycle([("signal", *s) for s in SIGNALS] + [("update", *u) for u in UPDATES]),
            TOTAL,
        )
    )
    gate = asyncio.Semaphore(6)

    async def send(kind: str, name: str, extra: list[str]) -> tuple[int, str]:
        async with gate:
            if kind == "update":
                # The server turns an update away while the run's state is held by the others
                # ("Workflow is busy", under load: suite41): sent again, as a person would — a
                # malformed one is refused before it changes anything.
                for _ in range(5):
                    code, out = await temporal(
                        env, "workflow", "update", "execute", *wid, "--name", name, *extra
                    )
                    if "workflow is busy" not in out.lower():
                        break
                    await asyncio.sleep(0.5)
                return code, out
            # A CLI that fails on a busy machine (once in CI, its output unseen) is run again:
            # what it may have delivered anyway is counted from the history below.
            for _ in range(3):
                code, out = await temporal(env, "workflow", "signal", *wid, "--name", name, *extra)
                if code == 0:
                    break
            return code, out

    results = await asyncio.gather(*(send(k, n, x) for k, n, x, _ in messages))
    signals = [(m, r) for m, r in zip(messages, results, strict=True) if m[0] == "signal"]
    updates = [(m, r) for m, r in zip(messages, results, strict=True) if m[0] == "update"]
    failed = [(m[1], out) for m, (code, out) in signals if code != 0]
    assert not failed, f"a signal was not delivered: {failed[:3]}"
    for (_, name, _, said), (code, out) in updates:
        # refused to the sender, in one sentence naming what was wrong, no Python dump
        assert code != 0 and said in out, f"{name}: {out}"
        assert "validation error" not in out and "Traceback" not in out, out

    # A query's argument that does not fit is refused in one sentence too (not "Failed decoding").
    code, out = await temporal(
        env, "workflow", "query", *wid, "--type", "task_board", "--input", '{"limit": "lots"}'
    )
    assert code != 0 and "field `limit`" in out and "Failed decoding" not in out, out

    # Every signal the run received (each sent, and any a failed CLI delivered before it was run
    # again) is refused and recorded.
    delivered = Counter(
        [
            f"{e.workflow_execution_signaled_event_attributes.signal_name} signal"
            async for e in handle.fetch_history_events()
            if e.HasField("workflow_execution_signaled_event_attributes")
        ]
    )
    assert delivered >= Counter(f"{name} signal" for (_, name, _, _), _ in signals)

    async def all_refused() -> None:
        log = await handle.query(LeaderWorkflow.permission_log)
        refusals = [e for e in log if e.reason.startswith("refused:")]
        assert len(refusals) == delivered.total(), (
            f"{len(refusals)} of {delivered.total()} recorded"
        )

    await eventually(all_refused, 60)
    log = [e for e in await handle.query(LeaderWorkflow.permission_log) if e.by == "person"]
    # Sent six at a time, they arrive in any order: each refusal says what was wrong with one.
    assert Counter(e.tool for e in log) == delivered
    reasons = {(f"{name} signal", said) for (_, name, _, said), _ in signals}
    for entry in log:
        assert any(tool == entry.tool and said in entry.reason for tool, said in reasons), entry
    page = await handle.query(LeaderWorkflow.task_board, PageRequest())
    assert page.state != "paused", "a malformed pause was taken"
    assert any(
        f"{delivered.total()} signal(s) refused (malformed, spoofed or not applicable)" in n
        for n in page.notes
    )
    refused_updates = [r for r in caplog.records if r.name == "xsky.refusals"]
    assert len(refused_updates) >= len(updates), "the worker did not log every refused update"

    (question,) = await handle.query(LeaderWorkflow.pending_requests)
    await handle.execute_update(
        LeaderWorkflow.answer, AnswerRequest(request_id=question.id, text="eu-west-1")
    )
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed", result.summary
    assert json.loads(json.dumps(result.agents[0].result)) == "eu-west-1"


async def test_a_report_of_a_dispatch_that_was_never_sent_is_refused_and_its_usage_not_counted(
    env: Env,
):
    """A forged report_progress naming another dispatch number (`dispatch: 7` with 900 million
    tokens) skipped the token check and was settled: the run stopped on its budget."""
    from xsky.plan.budget import Limits, RunBudget
    from xsky.runs import RunOptions

    await env.start_worker()
    later = '<agent name="noop" id="2" depends="1"><task>after</task></agent>'
    handle = await env.start(
        plan(ask("1", "Which region?"), later, name="forged"),
        options=RunOptions(budget=RunBudget(run=Limits(tokens=1_000_000))),
    )
    await wait_requests(handle, 1)  # dispatch 1 of T-1 was sent, and asked; T-2 waits
    usage = {"conversation": "forged", "total": {"inputTokens": 900_000_000}}
    # another dispatch's number, the one sent (without its token), and a task never dispatched
    for task, dispatch in (("T-1", 7), ("T-1", 1), ("T-2", 7)):
        forged = {"taskId": task, "dispatch": dispatch, "token": "wrong", "usage": usage}
        await handle.signal("report_progress", forged)

    async def refused() -> None:
        log = await handle.query(LeaderWorkflow.permission_log)
        reasons = [e.reason for e in log if e.tool == "report_progress signal"]
        assert len(reasons) == 3, reasons
        assert any("dispatch 7 of T-1, which the run never sent" in r for r in reasons), reasons
        assert any("dispatch 7 of T-2, which the run never sent" in r for r in reasons), reasons

    await eventually(refused, 30)
    page = await handle.query(LeaderWorkflow.task_board, PageRequest())
    assert page.budget is not None and page.budget.spent.tokens < 1_000_000, page.budget
    assert len(await handle.query(LeaderWorkflow.pending_requests)) == 1  # no budget escalation
    await handle.terminate("test over")
