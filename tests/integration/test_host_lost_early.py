"""A workspace host lost before its first worker heartbeat is found lost within a few heartbeat
timeouts, not when its last poll is a minute old.

The server lists a worker by its heartbeats, the first one interval after the worker starts; a
host killed right after it took its first attempt (a replacement host, a host just scaled up)
was never listed, and ``host_alive`` (activities/hosts.py ``_served``) read its last poll as
alive for 75 s: the run stood still ~80 s (measured) before its agent went to another host.
Here the doomed host sends no periodic worker heartbeat (tests/integration/no_beat_worker.py)
and is killed the moment the server says it took the attempt (the server lists a worker from
its first activity heartbeat too; listed first, the case is not reached: skipped). The run's
heartbeat timeout is 2 s.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client

from cli.devserver import DevServer, free_port
from client.connect import DATA_CONVERTER
from client.outcome import run_outcome
from client.workers import workers_on
from tests.conftest import ROOT
from tests.integration.eventually import eventually
from tests.integration.helpers import board
from tests.integration.test_durability import start_worker_process, stop_worker_process
from tests.s3server import s3_server
from workflows.leader import LeaderWorkflow
from xsky.plan.xml import parse_workflow
from xsky.runs import RunInput, RunOptions

pytestmark = pytest.mark.integration

PLAN = """<workflow name="early" taskId="early">
  <agent name="shell" id="1"><task>work</task>
    <config>{"tool": "shell", "command": "echo started >> runs.log; sleep 3; echo done"}</config></agent>
  <agent name="shell" id="2" depends="1"><task>count</task>
    <config>{"tool": "shell", "command": "cat runs.log"}</config></agent>
</workflow>"""


class Hosts:
    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.tmp, self.env = tmp, env
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, host: str, *args: str, script: Path = ROOT / "worker.py") -> None:
        env = {**self.env, "XSKY_HOME": str(self.tmp / host), "XSKY_HOST": host}
        self.procs[host] = start_worker_process(env, self.tmp / f"{host}.log", *args, script=script)


@pytest_asyncio.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[Client, Hosts]]:
    with s3_server() as s3:
        server = DevServer(
            db_path=tmp_path / "t.db",
            port=free_port(),
            headless=True,
            log_path=tmp_path / "server.log",
        )
        server.start(timeout=90)
        env = {
            **os.environ,
            **s3.env(s3.bucket(f"early-{uuid.uuid4().hex[:8]}")),
            "TEMPORAL_ADDRESS": server.address,
            "XSKY_TASK_QUEUE": f"e{uuid.uuid4().hex[:6]}",
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("XSKY_ARTIFACTS", None)
        env.pop("XSKY_RUNS", None)
        hosts = Hosts(tmp_path, env)
        try:
            client = await Client.connect(server.address, data_converter=DATA_CONVERTER)
            yield client, hosts
        finally:
            for proc in hosts.procs.values():
                if proc.poll() is None:
                    stop_worker_process(proc)
            server.stop(kill=True)


@pytest.mark.timeout(150)
async def test_a_host_killed_before_its_first_heartbeat_is_found_lost_within_heartbeats(
    cluster: tuple[Client, Hosts],
):
    client, hosts = cluster
    queue = hosts.env["XSKY_TASK_QUEUE"]
    hosts.start("h1", "--kinds", "llm,browser", "--no-skills")  # leads; holds no workspace
    hosts.start(
        "h2",
        "--kinds",
        "file,shell",
        "--no-leader",
        "--no-skills",
        script=ROOT / "tests" / "integration" / "no_beat_worker.py",
    )
    handle = await client.start_workflow(
        LeaderWorkflow.run,
        RunInput(workflow=parse_workflow(PLAN), options=RunOptions(heartbeat_timeout=2.0)),
        id=f"early-{uuid.uuid4().hex[:6]}",
        task_queue=queue,
    )

    async def taken_on_h2() -> None:  # the server's word, sooner than the board's
        described = await handle.describe()
        started = [
            a
            for a in described.raw_description.pending_activities
            if a.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
            and a.activity_type.name == "run_agent"
        ]
        assert started and started[0].last_worker_identity.startswith(f"{h2.pid}@"), started

    h2 = hosts.procs["h2"]
    await eventually(taken_on_h2, 60, interval=0.02)
    if await workers_on(client, "default", f"{queue}-host-h2"):
        # the server lists a worker from its first activity heartbeat as well: it beat first
        pytest.skip("the host was listed before it could be killed: the case was not reached")
    doomed = hosts.procs["h2"]
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait()
    killed = time.monotonic()
    hosts.start("h3", "--kinds", "file,shell", "--no-leader", "--no-skills")

    async def moved() -> None:
        assert (await board(handle))["1"].host == "h3"

    # heartbeat timeout (2 s) + not taken on h2's queue (4 s) + host_alive: a lost host is
    # found once its last poll is older than the leader's window (10 s); it was 75 s
    await eventually(moved, 40, interval=0.5)
    took = time.monotonic() - killed
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed", result.summary
    results = {a.id: a.result for a in result.agents}
    assert results["1"] == "done" and results["2"] == "started", results  # once, on h3
    assert took < 40, took
