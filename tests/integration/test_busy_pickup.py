"""A run started while its worker's every workflow slot is busy (a long workflow task) is not
said unserved: client/workers.py ``picked_up`` read only the queue's polls since the start, and a
worker with no free slot does not poll — an UnservedRunError ("a worker the server still lists
has stopped") for a live worker, busy for a few seconds more."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio import workflow
from temporalio.client import Client
from temporalio.runtime import Runtime, TelemetryConfig
from temporalio.worker import Worker

from cli.devserver import DevServer, free_port
from client.workers import picked_up, workers_on
from tests.integration.eventually import eventually

pytestmark = pytest.mark.integration


@workflow.defn(sandboxed=False)
class Slow:
    @workflow.run
    async def run(self, seconds: float) -> str:
        if seconds:
            time.sleep(seconds)  # a long workflow task: the worker's only slot is taken
        return "ok"


@pytest_asyncio.fixture
async def server(tmp_path: Path) -> AsyncIterator[DevServer]:
    dev = DevServer(
        db_path=tmp_path / "t.db", port=free_port(), headless=True, log_path=tmp_path / "s.log"
    )
    dev.start(timeout=90)
    try:
        yield dev
    finally:
        dev.stop(kill=True)


@pytest.mark.timeout(90)
async def test_a_run_beside_a_busy_worker_is_not_said_unserved(server: DevServer):
    beating = Runtime(telemetry=TelemetryConfig(), worker_heartbeat_interval=timedelta(seconds=1))
    own = await Client.connect(server.address, runtime=beating)
    client = await Client.connect(server.address)
    queue = f"busy-{uuid.uuid4().hex[:6]}"
    # no deadlock detection (debug_mode): the one task may hold the one slot for 8 s
    async with Worker(
        own, task_queue=queue, workflows=[Slow], max_concurrent_workflow_tasks=1, debug_mode=True
    ):

        async def listed() -> None:
            assert await workers_on(client, "default", queue)

        await eventually(listed, 20)
        # (its task may take 8 s and more under load: past the server's 10 s it would be given
        # again, and again, holding the one slot before the run's task — a fresh clone's run
        # timed out so)
        await client.start_workflow(
            Slow.run,
            8.0,
            id=f"slow-{uuid.uuid4().hex[:6]}",
            task_queue=queue,
            task_timeout=timedelta(seconds=60),
        )
        await asyncio.sleep(0.5)
        run = await client.start_workflow(
            Slow.run, 0.0, id=f"run-{uuid.uuid4().hex[:6]}", task_queue=queue
        )
        assert await picked_up(client, run.id, wait=3.0)
        # (not waited for to its end: a worker of one workflow slot took 5 s to 55 s to give
        # the run its first task after the slow one ended — the SDK's pollers, not xsky; the
        # run being served is what picked_up answers, and the busy worker's heartbeats said so)
        await run.terminate("test over")
