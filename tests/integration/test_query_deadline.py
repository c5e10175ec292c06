"""xsky's queries stop waiting before the sticky wait is out, so a run taken over from a dead
worker replays (Settings.query_timeout; tests/unit/test_query_deadlines.py holds every asker
to it).

Without xsky, plain temporalio: a workflow whose next activities depend on how many results
it has seen as it wakes. Its worker is SIGKILLed while the run is quiet (a timer), queries are
asked meanwhile, a second worker takes the run over. A query the server held on the dead
worker's sticky queue for the sticky wait is sent on to the run's queue as a legacy query
whose history runs past the last workflow task, and sdk-core (temporalio 1.35) applies those
events to the run the second worker caches: the workflow acts on part of a workflow task's
results, and the run's history fails to replay (4 runs of 4 with queries that wait as long as
it takes, on this machine; the 3,000-agent run of test_replay_queried.py 1 in 8–15). The server
sends a query on only while its asker still waits: asked with xsky's deadline, none is sent on.

    python -m tests.integration.test_query_deadline --worker ADDRESS QUEUE STICKY  (a worker)
"""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import sys
import time
import uuid
from datetime import timedelta

import pytest
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner, Worker

from tests.conftest import ROOT
from xsky.config import load_settings

WIDTH = 20


@activity.defn
async def tick(i: int) -> int:
    await asyncio.sleep(random.uniform(0, 0.05))
    return i


@workflow.defn
class Waves:
    def __init__(self) -> None:
        self.done = 0

    @workflow.query
    def count(self) -> int:
        return self.done

    async def one(self, i: int, wake: int) -> None:
        await workflow.execute_activity(  # its id says in which wake it was started
            tick, i, start_to_close_timeout=timedelta(seconds=10), activity_id=f"a-{i}-w{wake}"
        )
        self.done += 1

    @workflow.run
    async def run(self, total: int) -> int:
        await workflow.sleep(13)  # quiet: no workflow task pending, queries go to the worker
        started = seen = wakes = 0
        for _ in range(WIDTH):
            asyncio.ensure_future(self.one(started, wakes))
            started += 1
        while self.done < total:
            await workflow.wait_condition(lambda seen=seen: self.done > seen)
            new, seen = self.done - seen, self.done
            wakes += 1
            for _ in range(min(new, total - started)):  # one more per result seen
                asyncio.ensure_future(self.one(started, wakes))
                started += 1
        return wakes


async def serve(address: str, queue: str, sticky: float) -> None:
    client = await Client.connect(address)
    async with Worker(
        client,
        task_queue=queue,
        workflows=[Waves],
        activities=[tick],
        workflow_runner=UnsandboxedWorkflowRunner(),
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=sticky),
    ):
        await asyncio.Event().wait()


def spawn(address: str, queue: str, sticky: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.test_query_deadline", "--worker"]
        + [address, queue, str(sticky)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.mark.chaos
async def test_a_run_queried_with_xskys_deadline_while_its_worker_is_replaced_replays(server):
    settings = load_settings({})
    deadline = settings.query_timeout
    assert deadline.total_seconds() < settings.sticky_timeout
    client = await Client.connect(server.address)
    queue = f"waves-{uuid.uuid4().hex[:6]}"
    first = spawn(server.address, queue, settings.sticky_timeout)
    second = None
    try:
        handle = await client.start_workflow(
            Waves.run, 1500, id=f"waves-{uuid.uuid4().hex[:6]}", task_queue=queue
        )
        await asyncio.sleep(2.5)  # the first worker ran the first task: the run is sticky to it
        first.send_signal(signal.SIGKILL)
        first.wait()
        second = spawn(server.address, queue, settings.sticky_timeout)

        async def ask() -> None:
            try:
                await handle.query(Waves.count, rpc_timeout=deadline)
            except Exception:  # noqa: BLE001 - unanswered (its worker is dead): as expected
                pass

        asks = []
        began = time.monotonic()
        await asyncio.sleep(0.3)
        while time.monotonic() - began < 3.0:  # asked while the run is quiet, its worker dead
            asks.append(asyncio.create_task(ask()))
            await asyncio.sleep(0.1)
        await asyncio.wait_for(handle.result(), 240)
        await asyncio.gather(*asks)
        history = await handle.fetch_history()
        replayed = await Replayer(
            workflows=[Waves], workflow_runner=UnsandboxedWorkflowRunner()
        ).replay_workflow(history, raise_on_replay_failure=False)
        assert replayed.replay_failure is None, replayed.replay_failure
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


if __name__ == "__main__":
    if "--worker" in sys.argv:
        at = sys.argv.index("--worker")
        asyncio.run(serve(sys.argv[at + 1], sys.argv[at + 2], float(sys.argv[at + 3])))
