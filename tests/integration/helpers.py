"""Small helpers for integration tests that steer runs."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import (
    RPCTimeoutOrCancelledError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from tests.integration.eventually import eventually
from workflows.leader import LeaderWorkflow
from xsky.config import load_settings
from xsky.leader.state import PageRequest
from xsky.leader.tasks import TaskView


def query_timeout() -> timedelta:
    """xsky's own deadline for a query (Settings.query_timeout: the CLI's and the client's)
    under the sticky wait this test gives its workers (XSKY_STICKY_TIMEOUT, as they read it):
    test_durability's workers wait 3 s, not the default 10, and a query held past it is sent
    on as the legacy query a deadline is there to prevent."""
    sticky = os.environ.get("XSKY_STICKY_TIMEOUT")
    return load_settings({"XSKY_STICKY_TIMEOUT": sticky} if sticky else {}).query_timeout


# Asked again until the helper's own deadline: a query that outwaited its rpc_timeout
# (temporalio raises RPCError with CANCELLED or DEADLINE_EXCEEDED, "Timeout expired"; its
# RPCTimeoutOrCancelledError is an update's), and one the server refused because no worker has
# polled the run's queue yet (FAILED_PRECONDITION, "no poller seen for task queue recently"):
# a worker started again after a kill or a server restart polls a moment later — with a
# deadline under a 3 s sticky wait (1.5 s) the server says so where it waited out 5 s before.
TIMED_OUT = (RPCStatusCode.CANCELLED, RPCStatusCode.DEADLINE_EXCEEDED)
NO_POLLER_YET = "no poller seen"


async def query(
    handle: WorkflowHandle[Any, Any], what: Any, *args: Any, timeout: float = 30
) -> Any:
    """A query, asked again while a run that continued as new reads its state back — and with
    xsky's query deadline, asked again past it: a query that outwaited a killed worker's sticky
    queue reached the worker taking the run over as a legacy query, which sdk-core mishandles
    (chaos12: it made a 3,000-agent run's replay fail)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await handle.query(what, *args, rpc_timeout=query_timeout())
        except WorkflowQueryFailedError as e:
            if "reading its state" not in str(e) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)
        except RPCTimeoutOrCancelledError:
            if time.monotonic() > deadline:
                raise
        except RPCError as e:
            waiting = e.status in TIMED_OUT or (
                e.status == RPCStatusCode.FAILED_PRECONDITION and NO_POLLER_YET in e.message
            )
            if not waiting or time.monotonic() > deadline:
                raise
            if e.status == RPCStatusCode.FAILED_PRECONDITION:
                await asyncio.sleep(0.2)


async def board(handle: WorkflowHandle[Any, Any]) -> dict[str, TaskView]:
    return {
        t.agent_id: t
        for t in (await query(handle, LeaderWorkflow.task_board, PageRequest(limit=2000))).tasks
    }


RUNNING = ("dispatched", "in_progress")


async def board_shows(
    handle: WorkflowHandle[Any, Any], want: Mapping[str, str | tuple[str, ...]]
) -> dict[str, TaskView]:
    """Assert that each agent id in ``want`` has that status (or one of those) on the board;
    return the board. For ``eventually``: ``await eventually(lambda: board_shows(h, {"1": RUNNING}))``."""
    b = await board(handle)
    wanted = {k: (v,) if isinstance(v, str) else v for k, v in want.items()}
    seen = {k: b[k].status if k in b else None for k in want}
    assert all(seen[k] in wanted[k] for k in want), (
        f"board {seen}, wanted {wanted}; errors: { {k: v.error for k, v in b.items() if v.error} }"
    )
    return b


async def requests_pending(handle: WorkflowHandle[Any, Any], count: int) -> list[Any]:
    """Assert that at least ``count`` requests wait for a person; return them."""
    requests = await query(handle, LeaderWorkflow.pending_requests)
    assert len(requests) >= count, (
        f"{len(requests)} pending requests, wanted {count}: {[(r.id, r.text) for r in requests]}"
    )
    return requests


async def wait_requests(
    handle: WorkflowHandle[Any, Any], count: int, timeout: float = 30
) -> list[Any]:
    """At least ``count`` pending requests, once there are."""
    return await eventually(lambda: requests_pending(handle, count), timeout)


# -- facts in a run's history: what it has decided, not what it might do after a while -------------

_ENDS = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: "activity_task_completed_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: "activity_task_failed_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: "activity_task_timed_out_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED: "activity_task_canceled_event_attributes",
}


def _decided_after(events: list[HistoryEvent], index: int, what: str) -> None:
    """A workflow task completed after ``events[index]``: the workflow has acted on it (events
    that come while a workflow task runs are written after it, so that task started later)."""
    assert any(
        e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED for e in events[index + 1 :]
    ), f"{what} is in the history, not yet handled by a workflow task"


async def handled_end_of(
    handle: WorkflowHandle[Any, Any], activity_id: str | None = None, activity_type: str = ""
) -> list[HistoryEvent]:
    """Assert that the run has handled the end of an activity (by id, or the last of a type),
    so every decision that end leads to is in the history; return its events."""
    events = list((await handle.fetch_history()).events)
    scheduled = {
        e.event_id: e.activity_task_scheduled_event_attributes
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    }
    ends = [
        i
        for i, e in enumerate(events)
        if e.event_type in _ENDS
        and (a := scheduled.get(getattr(e, _ENDS[e.event_type]).scheduled_event_id)) is not None
        and (activity_id is None or a.activity_id == activity_id)
        and (not activity_type or a.activity_type.name == activity_type)
    ]
    what = f"the end of activity {activity_id or activity_type}"
    assert ends, f"{what} is not in the history yet"
    _decided_after(events, ends[-1], what)
    return events


async def handled_signal(handle: WorkflowHandle[Any, Any], name: str) -> list[HistoryEvent]:
    """Assert that the run has handled the last ``name`` signal it received."""
    events = list((await handle.fetch_history()).events)
    signals = [
        i
        for i, e in enumerate(events)
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
        and e.workflow_execution_signaled_event_attributes.signal_name == name
    ]
    assert signals, f"no {name} signal in the history yet"
    _decided_after(events, signals[-1], f"the {name} signal")
    return events


async def settled(handle: WorkflowHandle[Any, Any]) -> int:
    """Assert that a workflow has nothing in flight: no workflow task and no activity pending.
    It has acted on everything it received and waits for something new, so what it shows is
    what it decided. Returns its history length (compare two calls: nothing came between)."""
    desc = await handle.describe()
    raw = desc.raw_description
    assert not raw.HasField("pending_workflow_task"), f"{handle.id}: a workflow task is pending"
    assert not raw.pending_activities, (
        f"{handle.id}: activities pending: {[p.activity_type.name for p in raw.pending_activities]}"
    )
    return desc.history_length


def agents_scheduled(events: list[HistoryEvent]) -> list[str]:
    """The activity ids (``T-1-v1-d2``: task, plan version, dispatch) of the agent attempts
    a history has scheduled, in order."""
    return [
        e.activity_task_scheduled_event_attributes.activity_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "run_agent"
    ]


async def rejected(handle: WorkflowHandle[Any, Any], update: Any, request: Any) -> str:
    """Send an update that must be refused; return the refusal message."""
    try:
        result = await handle.execute_update(update, request)
    except WorkflowUpdateFailedError as e:
        cause = e.cause
        return cause.message if isinstance(cause, ApplicationError) else str(cause)
    raise AssertionError(f"the update was accepted: {result}")


def noop(
    agent_id: str, seconds: float = 0, depends: str = "", extra: str = "", result: str = ""
) -> str:
    dep = f' depends="{depends}"' if depends else ""
    said = json.dumps(result or f"r{agent_id}")
    return (
        f'<agent name="llm" id="{agent_id}"{dep}><task>step {agent_id}</task>'
        f'<config>{{"tool": "noop", "seconds": {seconds}, "result": {said}, "heartbeatTimeout": 2{extra}}}</config></agent>'
    )


def ask(agent_id: str, question: str, depends: str = "") -> str:
    dep = f' depends="{depends}"' if depends else ""
    return (
        f'<agent name="llm" id="{agent_id}"{dep}><task>ask {agent_id}</task>'
        f'<config>{{"tool": "ask_user", "question": "{question}"}}</config></agent>'
    )


def plan(*agents: str, name: str = "steer") -> str:
    return f'<workflow name="{name}" taskId="{name}">{"".join(agents)}</workflow>'
