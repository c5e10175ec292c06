"""A busy queue is not a missing worker: a run whose first task waits behind others on a
worker that is taking them one by one is served (no UnservedRunError), while one whose worker
is gone is not (tests/integration/test_worker_checks.py)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from temporalio import workflow
from temporalio.worker import Worker

from client._consts import PICKUP_WAIT
from client.workers import picked_up
from tests.conftest import Env

pytestmark = pytest.mark.integration


@workflow.defn(sandboxed=False)
class SlowFirstTask:
    """A workflow whose one task takes 1.5 s of the worker's only workflow slot."""

    @workflow.run
    async def run(self) -> None:
        time.sleep(1.5)


async def test_a_first_task_waiting_behind_others_is_served_not_unserved(env: Env) -> None:
    queue = f"busy-{uuid.uuid4().hex[:6]}"
    async with Worker(
        env.client,
        task_queue=queue,
        workflows=[SlowFirstTask],
        max_concurrent_workflow_tasks=1,
        max_cached_workflows=0,
    ):
        # Started together (one by one, on a loaded machine, the worker got through the first
        # before the last was started): 8 × 1.5 s of work ahead of the last one.
        ahead = await asyncio.gather(
            *(
                env.client.start_workflow(
                    SlowFirstTask.run, id=f"{queue}-ahead-{i}", task_queue=queue
                )
                for i in range(8)
            )
        )
        began = time.monotonic()
        last = await env.client.start_workflow(
            SlowFirstTask.run, id=f"{queue}-last", task_queue=queue
        )
        # Eight tasks of 1.5 s ahead of it on one slot: its own waits past the pickup window.
        assert await picked_up(env.client, last.id)
        assert time.monotonic() - began >= PICKUP_WAIT  # it did wait: served, only busy
        await asyncio.gather(*(h.result() for h in [*ahead, last]))
