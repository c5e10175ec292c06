"""Small helpers for integration tests that steer runs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from temporalio.client import WorkflowHandle, WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from workflows.leader import LeaderWorkflow
from xsky.leader.state import PageRequest
from xsky.leader.tasks import TaskView


async def query(
    handle: WorkflowHandle[Any, Any], what: Any, *args: Any, timeout: float = 30
) -> Any:
    """A query, asked again while a run that continued as new reads its state back."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await handle.query(what, *args)
        except WorkflowQueryFailedError as e:
            if "reading its state" not in str(e) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


async def board(handle: WorkflowHandle[Any, Any]) -> dict[str, TaskView]:
    return {
        t.agent_id: t
        for t in (await query(handle, LeaderWorkflow.task_board, PageRequest(limit=2000))).tasks
    }


async def wait_for(
    handle: WorkflowHandle[Any, Any],
    predicate: Callable[[dict[str, TaskView]], bool],
    timeout: float = 30,
    what: str = "",
) -> dict[str, TaskView]:
    deadline = time.monotonic() + timeout
    last: dict[str, TaskView] = {}
    while time.monotonic() < deadline:
        last = await board(handle)
        if predicate(last):
            return last
        await asyncio.sleep(0.1)
    shown = {k: (v.status, v.error) for k, v in last.items()}
    raise AssertionError(f"timed out waiting for {what or 'a board state'}; board: {shown}")


async def wait_requests(
    handle: WorkflowHandle[Any, Any], count: int, timeout: float = 30
) -> list[Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        requests = await query(handle, LeaderWorkflow.pending_requests)
        if len(requests) >= count:
            return requests
        await asyncio.sleep(0.1)
    raise AssertionError(f"fewer than {count} pending requests after {timeout}s")


async def rejected(handle: WorkflowHandle[Any, Any], update: Any, request: Any) -> str:
    """Send an update that must be refused; return the refusal message."""
    try:
        result = await handle.execute_update(update, request)
    except WorkflowUpdateFailedError as e:
        cause = e.cause
        return cause.message if isinstance(cause, ApplicationError) else str(cause)
    raise AssertionError(f"the update was accepted: {result}")


def noop(agent_id: str, seconds: float = 0, depends: str = "", extra: str = "") -> str:
    dep = f' depends="{depends}"' if depends else ""
    return (
        f'<agent name="llm" id="{agent_id}"{dep}><task>step {agent_id}</task>'
        f'<config>{{"tool": "noop", "seconds": {seconds}, "result": "r{agent_id}", "heartbeatTimeout": 2{extra}}}</config></agent>'
    )


def ask(agent_id: str, question: str, depends: str = "") -> str:
    dep = f' depends="{depends}"' if depends else ""
    return (
        f'<agent name="llm" id="{agent_id}"{dep}><task>ask {agent_id}</task>'
        f'<config>{{"tool": "ask_user", "question": "{question}"}}</config></agent>'
    )


def plan(*agents: str, name: str = "steer") -> str:
    return f'<workflow name="{name}" taskId="{name}">{"".join(agents)}</workflow>'
