"""A task no worker serves waits for one: the stall ladder does not climb (patch
stall-waits-for-worker), on a real dev server.

chaos14: the server moved, no worker polled the queue of a run's `shell` task for ~3.5 min,
and the board said "nudged: You have made no progress for 228s"; a longer wait climbed to a
restart and a replan that failed the task "stalled". Here the leader's worker runs, no
worker serves the shell queue, and the stall windows are a fraction of a second: many rungs
would have been due. (The rungs for an attempt a worker runs: tests/integration/
test_leader_tasks.py, the stall ladder test.)"""

from __future__ import annotations

import asyncio

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import RUNNING, board, plan
from tests.integration.histories import replayer
from workflows.leader import LeaderWorkflow
from xsky.leader.state import TaskRequest
from xsky.plan.agent_config import StallWindows
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

SHELL = (
    '<agent name="shell" id="1"><task>say hi</task>'
    '<config>{"tool": "shell", "command": "echo hi", "heartbeatTimeout": 2}</config></agent>'
)


async def test_a_task_no_worker_serves_waits_for_one_and_runs_when_one_comes(env: Env):
    await env.start_worker(kinds=["llm"])  # the leader's worker; none serves the shell queue
    handle = await env.start(
        plan(SHELL),
        options=RunOptions(
            max_auto_replans=1, stall=StallWindows(nudge_after=0.5, restart_after=1.0)
        ),
    )

    async def waiting() -> None:  # (an assertion: ``eventually`` asks again only on one)
        note = (await board(handle))["1"].last_progress or ""
        assert note.startswith("waiting for a worker: attempt 1 scheduled"), note

    await eventually(waiting, timeout=30)
    await asyncio.sleep(4)  # 8 nudge windows, 4 restart windows: a replan and more, before
    b = (await board(handle))["1"]
    assert b.status in RUNNING and b.attempt == 1, (b.status, b.attempt, b.last_progress)
    assert (b.last_progress or "").startswith("waiting for a worker"), b.last_progress
    assert await handle.query(LeaderWorkflow.nudges, TaskRequest(task_id="T-1")) == []
    assert [v.reason for v in await handle.query(LeaderWorkflow.plan_history)][1:] == []
    # A worker for its queue comes: the task runs once, as planned.
    await env.start_worker(kinds=["shell"], leader=False)
    run = await asyncio.wait_for(run_outcome(handle), 60)
    assert run.status == "completed", run
    (agent,) = run.agents
    assert agent.status == "completed" and "hi" in (agent.result or "")
    # Its history (the server asked before each rung, the marker of the patch) replays.
    history = await handle.fetch_history()
    asked = [  # (a local activity's: a marker)
        e
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
        and b"leader_attempts" in e.marker_recorded_event_attributes.SerializeToString()
    ]
    # (looked again after the first: each look starts the idle clock over, the next one a
    # nudge window later; how many fit in the 4 s depends on the machine's load — a fresh
    # clone's run under load made 3)
    assert len(asked) >= 2, len(asked)
    await replayer().replay_workflow(history)


async def test_an_attempt_an_operator_paused_is_said_paused_and_runs_once_unpaused(env: Env):
    """review19: `temporal activity pause` on an attempt — the board said 'waiting for a worker'
    (the server's PAUSED read as scheduled). Now it says paused by an operator, with the
    unpause command, and the ladder does not climb (patch stall-sees-operator-pause)."""
    from cli.devserver import temporal_binary

    async def temporal(*args: str) -> None:
        proc = await asyncio.create_subprocess_exec(
            temporal_binary(), *args, "--address", env.address,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        # (the server may not find the attempt for a moment after the run's first look:
        # "Can't find pending activity with such ID"; asked again, ``eventually``)
        assert proc.returncode == 0, out

    await env.start_worker(kinds=["llm"])  # none serves the shell queue: the attempt waits
    handle = await env.start(
        plan(SHELL),
        options=RunOptions(
            max_auto_replans=1, stall=StallWindows(nudge_after=0.5, restart_after=1.0)
        ),
    )

    async def note_is(prefix: str) -> None:  # (an assertion: ``eventually`` asks until it holds)
        note = (await board(handle))["1"].last_progress or ""
        assert note.startswith(prefix), note

    await eventually(lambda: note_is("waiting for a worker"), timeout=30)
    await eventually(
        lambda: temporal(
            "activity", "pause", "--workflow-id", handle.id, "--activity-id", "T-1-v1-d1"
        ),
        timeout=30,
    )
    await eventually(lambda: note_is("paused by an operator: attempt 1 waits"), timeout=30)
    await asyncio.sleep(3)  # many rungs' windows
    b = (await board(handle))["1"]
    assert b.status in RUNNING and b.attempt == 1, (b.status, b.attempt, b.last_progress)
    assert "temporal activity unpause --activity-id T-1-v1-d1" in (b.last_progress or "")
    assert [v.reason for v in await handle.query(LeaderWorkflow.plan_history)][1:] == []
    await env.start_worker(kinds=["shell"], leader=False)
    await temporal("activity", "unpause", "--workflow-id", handle.id, "--activity-id", "T-1-v1-d1")
    run = await asyncio.wait_for(run_outcome(handle), 60)
    assert run.status == "completed", run
    await replayer().replay_workflow(await handle.fetch_history())
