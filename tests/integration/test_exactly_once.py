"""Nothing done twice: a command that ended is never run again by the next attempt of its
dispatch — not when its worker is killed milliseconds after it ended, not when the server is
down while it runs (the attempt finishes, its report is lost, the server retries it)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import query
from tests.integration.test_durability import own_server, stop_worker_process
from tests.integration.test_recovery import shell_plan, shell_worker
from tests.sigkill import kill_after
from workflows.leader import LeaderWorkflow
from xsky.leader.state import PageRequest
from xsky.plan.xml import parse_workflow
from xsky.runs import RunInput, RunOptions

pytestmark = pytest.mark.integration

# The side effect goes to a ledger in the workspace; the output names the dispatch's key; the
# last thing the command does is to say it has finished.
EFFECT = 'echo effect >> effects.txt; echo "done by $XSKY_ATTEMPT_KEY"; touch finished'


@pytest.mark.parametrize("delay_ms", [1, 20])
async def test_a_worker_killed_just_after_its_command_ended_has_it_returned_not_run_again(
    env: Env, tmp_path: Path, delay_ms: int
):
    await env.start_worker(kinds=["llm"])  # the leader; the shell agent runs in a process
    handle = await env.start(
        shell_plan(EFFECT, {"heartbeatTimeout": 3}), options=RunOptions(max_auto_replans=0)
    )
    workspace = env.home / "runs" / handle.id / "workspace"
    first = shell_worker(env, tmp_path / "first.log")
    killer = kill_after(workspace / "finished", first, delay_ms / 1000)
    try:
        await asyncio.to_thread(killer.join, 120)
        assert first.wait(timeout=10) == -signal.SIGKILL, "the worker was not killed"
    finally:
        if first.poll() is None:
            first.kill()
    second = shell_worker(env, tmp_path / "second.log")
    try:
        result = await asyncio.wait_for(run_outcome(handle), 90)
    finally:
        stop_worker_process(second)
    assert result.status == "completed", result.summary
    (agent,) = result.agents
    assert (workspace / "effects.txt").read_text() == "effect\n", "the command ran twice"
    assert agent.result is not None and agent.result.startswith("done by xsky:" + handle.id)
    board = (await query(handle, LeaderWorkflow.task_board, PageRequest())).tasks
    if delay_ms == 1:  # far too soon for the attempt to have reported: the retry answered
        assert board[0].tries == 2, board[0]


def outage_plan() -> str:
    """Shell agents that do their side effect at the end: two end while the server is down,
    two after it is back (their attempts are still running when it returns)."""
    agents = []
    for i, seconds in enumerate((2, 3, 13, 15), start=1):
        command = f"sleep {seconds}; echo effect-{i} >> effects.txt; echo {i}"
        agents.append(
            f'<agent name="shell" id="{i}"><task>step {i}</task><config><![CDATA[{{"tool": "shell", '
            f'"command": "{command}", "heartbeatTimeout": 4}}]]></config></agent>'
        )
    return f'<workflow name="outage" taskId="outage">{"".join(agents)}</workflow>'


async def outage_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outage: float) -> None:
    """The server killed while every agent runs, restarted on its database ``outage`` seconds
    later: every agent completes, and every side effect happened once."""
    async with own_server(tmp_path, monkeypatch, "outage") as (server, client, settings):
        handle = await client.start_workflow(
            LeaderWorkflow.run,
            RunInput(workflow=parse_workflow(outage_plan()), options=RunOptions(max_parallel=8)),
            id=f"xsky-outage-{os.getpid()}-{int(time.time())}",
            task_queue=settings.task_queue,
        )
        workspace = settings.runs / handle.id / "workspace"

        async def all_running() -> None:
            board = (await query(handle, LeaderWorkflow.task_board, PageRequest())).tasks
            assert all(t.status == "in_progress" for t in board), [t.status for t in board]

        await eventually(all_running, 60)
        server.stop(kill=True)
        await asyncio.sleep(outage)
        server.start(timeout=90)
        result = await asyncio.wait_for(run_outcome(handle), 120)
    assert result.status == "completed", result.summary
    assert [a.result for a in result.agents] == ["1", "2", "3", "4"]
    effects = sorted((workspace / "effects.txt").read_text().split())
    assert effects == [f"effect-{i}" for i in range(1, 5)], f"side effects: {effects}"


async def test_agents_in_flight_through_a_server_outage_each_complete_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    await outage_run(tmp_path, monkeypatch, outage=8)


@pytest.mark.chaos
async def test_agents_in_flight_through_a_minute_long_server_outage_each_complete_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    await outage_run(tmp_path, monkeypatch, outage=60)
