"""Operating xsky: the local server command, a worker per kind, graceful worker shutdown."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import PendingActivityState

from cli.devserver import free_port, is_listening
from client.outcome import run_outcome
from tests.conftest import ROOT, Env
from tests.integration.eventually import eventually
from tests.integration.helpers import board_shows, noop, plan
from tests.integration.test_durability import start_worker_process, stop_worker_process

pytestmark = pytest.mark.integration

PENDING_ACTIVITY_STATE_SCHEDULED = PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED


def run_starter(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "starter.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_server_starts_once_says_when_it_is_up_and_stops(tmp_path: Path):
    port, ui = free_port(), free_port()
    env = dict(os.environ, TEMPORAL_ADDRESS=f"127.0.0.1:{port}", XSKY_HOME=str(tmp_path / "home"))
    first = run_starter("server", "--ui-port", str(ui), env=env)
    try:
        assert first.returncode == 0, first.stderr
        assert "started" in first.stdout and is_listening("127.0.0.1", port)
        assert (tmp_path / "home" / "temporal.db").exists()
        again = run_starter("server", env=env)
        assert again.returncode == 0 and "already up" in again.stdout
    finally:
        stop = run_starter("server", "--stop", env=env)
    assert stop.returncode == 0 and "stopped the Temporal dev server" in stop.stdout
    deadline = time.monotonic() + 20
    while is_listening("127.0.0.1", port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not is_listening("127.0.0.1", port)
    assert "no server started by xsky" in run_starter("server", "--stop", env=env).stdout


async def test_a_worker_for_one_kind_serves_only_that_kind(env: Env, tmp_path: Path):
    await env.start_worker(kinds=["llm", "browser", "file"])  # the leader, and every kind but shell
    shell_plan = plan(
        '<agent name="shell" id="1"><task>t</task><config>{"tool": "shell", "command": "echo from-the-shell-worker"}</config></agent>',
        noop("2", 0),
    )
    handle = await env.start(shell_plan)
    await eventually(lambda: board_shows(handle, {"2": "completed"}))
    # T-1 waits on the shell queue, which no worker of this test polls: its activity is
    # scheduled there and not started, while T-2 ran on the llm queue.
    shell_queue = env.settings.kind_queue("shell")
    assert shell_queue not in {w.task_queue for w in env.workers}
    queues = {
        e.activity_task_scheduled_event_attributes.activity_id: (
            e.activity_task_scheduled_event_attributes.task_queue.name
        )
        async for e in handle.fetch_history_events()
        if e.HasField("activity_task_scheduled_event_attributes")
    }
    assert queues["T-1-v1-d1"] == shell_queue
    assert queues["T-2-v1-d1"] == env.settings.kind_queue("llm")
    (pending,) = (await handle.describe()).raw_description.pending_activities
    assert pending.activity_id == "T-1-v1-d1" and pending.state == PENDING_ACTIVITY_STATE_SCHEDULED
    assert (await handle.query("task_board"))["tasks"][0]["status"] == "dispatched"
    log = tmp_path / "shell-worker.log"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "worker.py"), "--kinds", "shell", "--no-leader"],
        env=env.environ(),
        cwd=ROOT,
        stdout=open(log, "wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        result = await asyncio.wait_for(run_outcome(handle), 60)
        assert result.agents[0].result == "from-the-shell-worker"
        text = log.read_text()
        assert (
            f"shell agents on '{env.settings.task_queue}-shell'" in text
            and "leader workflows" not in text
        )
    finally:
        stop_worker_process(proc)


async def test_sigterm_hands_a_running_agent_back_and_another_worker_finishes_it(
    env: Env, tmp_path: Path
):
    first = start_worker_process(env, tmp_path / "w1.log")
    agent = noop("1", 6, extra=', "heartbeatTimeout": 2')
    handle = await env.start(plan(agent))

    async def running_on_the_first_worker() -> None:
        pending = (await handle.describe()).raw_description.pending_activities
        assert [(p.activity_id, p.state) for p in pending] == [
            ("T-1-v1-d1", PendingActivityState.PENDING_ACTIVITY_STATE_STARTED)
        ], pending

    await eventually(running_on_the_first_worker)
    first.send_signal(signal.SIGTERM)
    first.wait(timeout=30)
    assert "shutting down" in (tmp_path / "w1.log").read_text()
    # --grace 1: it did not wait for the 6 s agent, which had not ended when the worker did
    # (an attempt's end is written to the history once, when it is final).
    events = list((await handle.fetch_history()).events)
    agent_ids = {
        e.event_id
        for e in events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == "run_agent"
    }
    assert agent_ids and not [
        e
        for e in events
        if e.HasField("activity_task_completed_event_attributes")
        and e.activity_task_completed_event_attributes.scheduled_event_id in agent_ids
    ]
    second = start_worker_process(env, tmp_path / "w2.log")
    try:
        result = await asyncio.wait_for(run_outcome(handle), 60)
    finally:
        stop_worker_process(second)
    assert result.status == "completed" and result.agents[0].result == "r1"
