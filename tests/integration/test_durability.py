"""Crashes: a worker killed with SIGKILL mid-run, the server killed and restarted mid-run."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.agents import AgentActivities
from cli.devserver import DevServer, free_port
from tests.conftest import ROOT, Env
from workflows.leader import LeaderWorkflow
from worker import build_workers
from xsky.config import load_settings
from xsky.kinds import TOOL_AGENT_KINDS
from xsky.runs import RunInput
from xsky.xml import parse_workflow

pytestmark = pytest.mark.integration


def ledger_chain(n: int, sleep: float) -> str:
    """A chain of shell agents that each log 'start N' to a ledger, work, then answer N."""
    agents = []
    for i in range(1, n + 1):
        depends = f' depends="{i - 1}"' if i > 1 else ""
        agents.append(
            f'<agent name="shell" id="{i}"{depends}><task>step {i}</task><config><![CDATA[{{"tool": "shell", '
            f'"command": "echo start {i} >> ledger.txt; sleep {sleep}; echo {i}", "heartbeatTimeout": 2, '
            f'"retry": {{"maximumAttempts": 5, "initialInterval": 0.2}}}}]]></config></agent>'
        )
    return f'<workflow name="ledger" taskId="ledger">{"".join(agents)}</workflow>'


def start_worker_process(env: Env, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as fh:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "worker.py"), "--grace", "1"],
            env=env.environ(), cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while b"serving" not in log.read_bytes():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "worker did not start"
        time.sleep(0.1)
    return proc


async def wait_for_completed(handle, count: int, timeout: float = 60) -> set[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        board = await handle.query(LeaderWorkflow.task_board)
        done = {t.agent_id for t in board if t.status == "completed"}
        if len(done) >= count:
            return done
        await asyncio.sleep(0.1)
    raise AssertionError(f"fewer than {count} agents completed in {timeout}s")


async def test_a_worker_killed_mid_run_is_replaced_and_nothing_completed_runs_twice(env: Env, tmp_path: Path):
    first = start_worker_process(env, tmp_path / "worker1.log")
    handle = await env.start(ledger_chain(6, 0.6), workflow_id=f"xsky-ledger-{uuid.uuid4().hex[:6]}")
    try:
        completed_before = await wait_for_completed(handle, 2)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
    second = start_worker_process(env, tmp_path / "worker2.log")
    try:
        result = await asyncio.wait_for(handle.result(), 90)
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
    assert result.status == "completed", result.summary
    assert [a.result for a in result.agents] == [str(i) for i in range(1, 7)]

    ledger = (env.home / "runs" / handle.id / "workspace" / "ledger.txt").read_text().split("\n")
    starts = Counter(line.split()[1] for line in ledger if line.startswith("start"))
    assert completed_before, "the kill must come after some agents completed"
    for agent_id in completed_before:
        assert starts[agent_id] == 1, f"agent {agent_id} completed before the kill but ran {starts[agent_id]} times"
    in_flight = [a for a in starts if starts[a] > 1]
    assert len(in_flight) <= 1, f"only the agent in flight at the kill may run again: {dict(starts)}"
    assert all(starts[str(i)] >= 1 for i in range(1, 7))
    retried = [a for a in result.agents if a.id in in_flight]
    assert all(a.attempts == 1 for a in retried)  # one dispatch; Temporal retried the attempt


async def test_the_server_killed_and_restarted_on_its_database_finishes_the_run(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XSKY_HOME", str(tmp_path / "xsky"))
    monkeypatch.setenv("XSKY_TASK_QUEUE", f"r{uuid.uuid4().hex[:6]}")
    server = DevServer(db_path=tmp_path / "restart.db", port=free_port(), headless=True, log_path=tmp_path / "server.log")
    server.start(timeout=90)
    workers = []
    try:
        client = await Client.connect(server.address, data_converter=pydantic_data_converter)
        monkeypatch.setenv("TEMPORAL_ADDRESS", server.address)
        settings = load_settings()
        workers = build_workers(client, settings, list(TOOL_AGENT_KINDS), True, 1.0, AgentActivities(settings))
        tasks = [asyncio.create_task(w.run()) for w in workers]
        handle = await client.start_workflow(
            LeaderWorkflow.run, RunInput(workflow=parse_workflow(ledger_chain(5, 0.5))),
            id=f"xsky-restart-{uuid.uuid4().hex[:6]}", task_queue=settings.task_queue,
        )
        await wait_for_completed(handle, 1)
        server.stop(kill=True)
        await asyncio.sleep(1.0)
        server.start(timeout=90)
        result = await asyncio.wait_for(handle.result(), 120)
        assert result.status == "completed", result.summary
        assert [a.result for a in result.agents] == ["1", "2", "3", "4", "5"]
    finally:
        await asyncio.gather(*(w.shutdown() for w in workers), return_exceptions=True)
        server.stop()
