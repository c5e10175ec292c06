"""When a run's leader may be queried: not while a workflow task of it waits to be taken.

A query asked of a run with no workflow task in flight is sent straight to a worker, a
"legacy" query that carries the run's history as it is when a worker takes it. When a workflow
task of the run is scheduled and not yet started — after the leader's worker died, for the
sticky wait and longer — that history runs past the run's last workflow task (the results that
made the new one), and sdk-core (temporalio 1.35) applies those events to the run that the
worker taking the query caches, in an activation of their own: the leader acts on part of a
workflow task's results, the run's history no longer replays, and that worker's workflow tasks
of the run fail for good (docs/deployment.md, "Queries while a workflow task waits to be taken";
tests/integration/test_query_deadline.py). So xsky asks a leader only when no workflow task of
it waits to be taken: a run described as having none has no events past its last task (the
moment between the description and the query is the window left), and a query asked while a
task is in flight waits for that task and rides on the next, which sdk-core handles.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

from temporalio.api.enums.v1 import PendingWorkflowTaskState
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionResponse

WAITING = PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED


def task_waits(described: DescribeWorkflowExecutionResponse) -> bool:
    """Does a workflow task of the described run wait to be taken (scheduled, not started)?"""
    return (
        described.HasField("pending_workflow_task")
        and described.pending_workflow_task.state == WAITING
    )


async def may_query(handle: Any, timeout: timedelta, patience: float) -> bool:
    """Whether ``handle``'s run may be queried now: described again every 0.2 s for up to
    ``patience`` seconds while a workflow task of it waits to be taken (a live worker takes one
    within milliseconds; one the server holds for a dead worker's sticky queue waits seconds)."""
    until = time.monotonic() + patience
    while True:
        described = await handle.describe(rpc_timeout=timeout)
        if not task_waits(described.raw_description):
            return True
        if time.monotonic() >= until:
            return False
        await asyncio.sleep(0.2)
