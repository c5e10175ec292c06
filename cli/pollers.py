"""Before a run starts: is any worker there to lead it? Without one a run would wait
forever without a word (Temporal queues the workflow task until a worker polls)."""

from __future__ import annotations

import asyncio
import time

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

from cli.plans import UsageError
from cli.render import err
from xsky.config import Settings

# A worker that was just started (`starter.py up`) may take a moment to poll.
WAIT_SECONDS = 10.0


async def leader_pollers(client: Client, settings: Settings) -> int:
    """Workers polling the leader's queue for workflow tasks (the server remembers recent polls)."""
    response = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
        namespace=settings.namespace, task_queue=TaskQueue(name=settings.task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW))
    return len(response.pollers)


async def require_worker(client: Client, settings: Settings, wait: float = WAIT_SECONDS) -> None:
    """Return once a worker polls the leader's queue; a sentence with the fix otherwise."""
    deadline = time.monotonic() + wait
    told = False
    while True:
        try:
            if await leader_pollers(client, settings):
                return
        except RPCError:
            return  # the server cannot say (an old server, no permission): start as before
        if time.monotonic() >= deadline:
            raise UsageError(f"no worker serves the task queue '{settings.task_queue}' at {settings.address}: start one with "
                             "`starter.py up` (a server and a worker) or `python worker.py`; nothing was started")
        if not told:
            err.print(f"waiting for a worker on '{settings.task_queue}' …")
            told = True
        await asyncio.sleep(0.5)
