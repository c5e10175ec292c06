"""A worker SIGKILLed during a slow MCP call: its pooled server goes with it, the interrupted call
is sent again by the next worker, and the calls before it are not (the agent loop's checkpoint
after every call)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.helpers import board, plan, wait_requests
from tests.integration.mcp_helpers import MCP_ROLE, TEST_SERVER, agent, roles, write_settings
from tests.integration.test_durability import start_worker_process, stop_worker_process
from tests.integration.test_recovery import descendants
from workflows.leader import LeaderWorkflow
from xsky.leader.state import AnswerRequest

pytestmark = pytest.mark.integration


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def test_a_killed_worker_leaves_no_server_and_only_the_interrupted_call_is_retried_once_a_person_says_so(
    env: Env, fake_llm: FakeLLM, tmp_path: Path
):
    write_settings(tmp_path / "user-settings.json", {"t": TEST_SERVER}, roles=MCP_ROLE)
    script = [
        calls(("mcp__t__add", {"a": 1, "b": 2})),
        calls(("mcp__t__slow", {"seconds": 4, "label": "s"})),
    ]

    def responder(req: dict, i: int) -> Reply:
        turn = turn_of(req)
        outputs = [m["content"] for m in req["messages"] if m.get("role") == "tool"]
        return script[turn] if turn < len(script) else text(" | ".join(outputs))

    fake_llm.responder = responder
    await env.start_worker(kinds=["shell"])  # the leader here; the agent (role: llm queue) there
    config = {"heartbeatTimeout": 2, "retry": {"maximumAttempts": 2, "initialInterval": 0.1}}
    handle = await env.start(plan(agent("1", "mcpuser", "add, then work", config)), roles=roles())
    log = env.home / "runs" / handle.id / "workspace" / "calls.log"
    hold = log.parent / "s.hold"

    def lines() -> list[str]:
        return log.read_text().splitlines() if log.exists() else []

    def slow_started() -> None:
        assert "start s" in lines(), lines()

    async def slow_reports_progress() -> (
        None
    ):  # the server's progress notifications reach the board
        note = (await board(handle))["1"].last_progress or ""
        assert "mcp__t__slow: s working" in note, note

    first = start_worker_process(
        env, tmp_path / "w1.log", "--kinds", "llm", "--no-leader", "--no-skills"
    )
    try:
        await eventually(slow_started, 60, interval=0.05)
        hold.touch()  # the first call keeps working until the kill, whatever the load
        await eventually(slow_reports_progress, 30, interval=0.1)
        servers = [
            pid
            for pid in descendants(first.pid)
            if b"server.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]
        assert servers, "the pooled server runs under its worker"
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()

    def gone() -> None:
        assert not [pid for pid in servers if alive(pid)], "the dead worker's server still runs"

    await eventually(gone, 10)
    hold.unlink()  # the call sent again works its 4 s and ends
    second = start_worker_process(
        env, tmp_path / "w2.log", "--kinds", "llm", "--no-leader", "--no-skills"
    )
    try:
        # The interrupted call may have run, and its server does not call it read-only: it is
        # not repeated until a person says so (tests/integration/test_in_doubt_run.py).
        (asked,) = await wait_requests(handle, 1, timeout=60)
        assert asked.choices == ["again", "skip", "done"] and "mcp__t__slow" in asked.text
        assert "readOnlyHint" in asked.text and lines() == ["add 1 2", "start s"]
        await handle.execute_update(
            LeaderWorkflow.answer, AnswerRequest(request_id=asked.id, text="again")
        )
        result = await asyncio.wait_for(run_outcome(handle), 90)
    finally:
        stop_worker_process(second)
    assert result.status == "completed", result.summary
    assert result.agents[0].result == "3 | s done after 4s"
    # add ran once; slow twice (the first cut short by the kill), finished once
    assert lines() == ["add 1 2", "start s", "start s", "end s"]
    turns = [turn_of(r) for r in fake_llm.requests]
    assert turns.count(0) == 1 and turns.count(1) == 1  # the model was not asked again
