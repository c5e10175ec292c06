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
        # Nine runs started together, each first task 1.5 s of the worker's one slot: 13.5 s of
        # work, so by the end of the pickup window at least four still wait — whichever (the
        # server does not hand a queue's tasks out in the order they came).
        runs = await asyncio.gather(
            *(
                env.client.start_workflow(SlowFirstTask.run, id=f"{queue}-{i}", task_queue=queue)
                for i in range(9)
            )
        )

        async def checked(workflow_id: str) -> tuple[bool, float]:
            began = time.monotonic()
            served = await picked_up(env.client, workflow_id)
            return served, time.monotonic() - began

        checks = await asyncio.gather(*(checked(h.id) for h in runs))
        assert all(served for served, _ in checks), checks  # no run said to be unserved
        waited = [w for _, w in checks if w >= PICKUP_WAIT]
        assert len(waited) >= 2, checks  # and some of them were served only busy, after waiting
        await asyncio.gather(*(h.result() for h in runs))
