"""Are workers polling the queues a plan needs? (a run nobody runs waits silently).

Two checks, because the server's list of pollers cannot tell a live worker from one that
stopped a moment ago (both show the same last access: a live poller's long poll lasts up
to a minute). Before a start, :func:`require_workers`: a queue no poller has touched for
:data:`LIVE_POLLER_SECONDS` has no worker (wait a little, then refuse, nothing started).
After it, :func:`picked_up`: a live worker takes the run's first workflow task at once, so
one still waiting after :data:`PICKUP_WAIT` seconds means nobody polls that queue now
(an :class:`UnservedRunError`; the run stays started and begins once a worker comes).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import PendingActivityState, PendingWorkflowTaskState, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import (
    DescribeTaskQueueRequest,
    DescribeWorkflowExecutionRequest,
    DescribeWorkflowExecutionResponse,
)
from temporalio.client import (
    Client,
)
from temporalio.service import RPCError

from xsky.client._consts import (
    LIVE_POLLER_SECONDS,
    PICKUP_WAIT,
    RUNNING_STATUS,
    UNTAKEN_SECONDS,
    WORKER_WAIT,
)
from xsky.config import Settings
from xsky.errors import (
    NoWorkerError,
    UnservedRunError,
)


async def queue_pollers(
    client: Client, settings: Settings, queue: str, kind: TaskQueueType.ValueType
) -> int:
    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=settings.namespace, task_queue=TaskQueue(name=queue), task_queue_type=kind
        )
    )
    # The server lists a poller for minutes after its worker died; a live one polls again
    # at least every minute (a long poll), so only recent ones count.
    now = time.time()
    return sum(
        1
        for p in response.pollers
        if not p.HasField("last_access_time")
        or now - p.last_access_time.ToSeconds() < LIVE_POLLER_SECONDS
    )


async def missing_queues(client: Client, settings: Settings, kinds: list[str]) -> list[str]:
    """The queues a run needs that no worker polls: the leader's (workflow tasks) and each kind's."""
    wanted = [(settings.task_queue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)]
    wanted += [(settings.kind_queue(k), TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY) for k in kinds]
    counts = await asyncio.gather(*(queue_pollers(client, settings, q, t) for q, t in wanted))
    return [q for (q, _), n in zip(wanted, counts, strict=True) if not n]


def no_worker_error(settings: Settings, missing: list[str]) -> NoWorkerError:
    if settings.task_queue in missing:  # nothing leads runs: a full worker serves every queue
        return NoWorkerError(
            f"no worker serves the task queue '{settings.task_queue}' at {settings.address}",
            "start one with `python worker.py`; nothing was started",
            topic="worker",
        )
    kinds = [q.removeprefix(settings.task_queue + "-") for q in missing]
    return NoWorkerError(
        f"no worker runs {', '.join(kinds)} agents (task queue{'s' if len(kinds) > 1 else ''} "
        f"{', '.join(repr(q) for q in missing)} at {settings.address}), which this plan needs",
        f"start one with `python worker.py --kinds {','.join(kinds)} --no-leader`; nothing was started",
        topic="worker-kinds",
        subject=",".join(kinds),
    )


async def require_workers(
    client: Client,
    settings: Settings,
    kinds: list[str],
    wait: float = WORKER_WAIT,
    on_wait: Any = None,
) -> None:
    """Return once workers poll every queue the run needs; a NoWorkerError with the fix otherwise."""
    deadline = time.monotonic() + wait
    told = False
    while True:
        try:
            missing = await missing_queues(client, settings, kinds)
        except RPCError:
            return  # the server cannot say (an old server, no permission): start as before
        if not missing:
            return
        if time.monotonic() >= deadline:
            raise no_worker_error(settings, missing)
        if not told and on_wait is not None:
            on_wait(f"waiting for a worker on {', '.join(missing)} …")
            told = True
        await asyncio.sleep(0.5)


async def picked_up(client: Client, workflow_id: str, wait: float = PICKUP_WAIT) -> bool:
    """Has a worker taken the workflow's first task within ``wait`` seconds of now? (True
    when it has ended, or the server cannot say.)"""
    deadline = time.monotonic() + wait
    request = DescribeWorkflowExecutionRequest(
        namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id)
    )
    while True:
        try:
            response = await client.workflow_service.describe_workflow_execution(request)
        except RPCError:
            return True  # cannot tell; do not cry wolf
        if (
            response.workflow_execution_info.status != RUNNING_STATUS
            or not response.HasField("pending_workflow_task")
            or response.pending_workflow_task.state
            != PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED
            or response.workflow_execution_info.history_length > 2  # a task was done already
        ):
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.2)


def unserved_error(settings: Settings, queue: str, workflow_id: str, what: str) -> UnservedRunError:
    return UnservedRunError(
        f"no worker is polling the task queue '{queue}' at {settings.address}: none took "
        f"the first task of {what} {workflow_id} within {PICKUP_WAIT:g} s (a worker the server "
        "still lists has stopped)",
        f"start one with `python worker.py`; {workflow_id} is started and begins once a "
        "worker polls",
        topic="unserved",
        subject=workflow_id,
    )


def untaken(
    described: DescribeWorkflowExecutionResponse, now: float, after: float = UNTAKEN_SECONDS
) -> tuple[str, float] | None:
    """(task id, seconds) of the agent attempt that has waited longest, past ``after`` seconds,
    for a worker to take it: a first attempt, scheduled and never started (a worker of its
    kind would have taken it at once). None when there is none."""
    waits = [
        (a.activity_id.rsplit("-v", 1)[0], now - a.scheduled_time.ToSeconds())
        for a in described.pending_activities
        if a.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
        and a.attempt <= 1
        and not a.HasField("last_started_time")
        and a.HasField("scheduled_time")
    ]
    longest = max(waits, key=lambda w: w[1], default=None)
    return longest if longest is not None and longest[1] >= after else None
