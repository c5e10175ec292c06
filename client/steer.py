"""Pause, resume and nudge a run: through the update twins, which answer (or refuse, saying
why); through the signals only for a run whose worker predates the twins, checked here first
since a signal cannot refuse. The run (client/run.py) tries the update and falls back on these."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from temporalio.client import WorkflowHandle
from temporalio.service import RPCError

from xsky.errors import ConnectError, RefusedError, UsageError
from xsky.leader.state import BoardPage, InterventionResult
from xsky.leader.tasks import TERMINAL, TaskView

# How the server refuses an update the run's code does not have (an older worker runs it).
UNKNOWN_UPDATE = "expected but not found"


def predates_update(refused: RefusedError) -> bool:
    """Was the update refused because the run's worker predates it (not by the run itself)?"""
    return UNKNOWN_UPDATE in str(refused)


def no_task(task: str, ids: Sequence[str], where: str) -> UsageError:
    """The refusal of a task id ``where`` (a run, its last plan) does not have: the id closest
    to it when there is one (``T-regoin``: did you mean T-region?), and the first of the rest."""
    bare = [i.removeprefix("T-") for i in ids]
    close = difflib.get_close_matches(task.removeprefix("T-"), bare, n=1, cutoff=0.6)
    meant = f" — did you mean T-{close[0]}?" if close else ""
    shown = ", ".join(ids[:20]) + (f" … ({len(ids)} in all)" if len(ids) > 20 else "")
    return UsageError(f"no task {task!r} in {where}{meant}; tasks: {shown}")


def check_signalled(
    board: BoardPage, row: TaskView | None, task: str, run_id: str, what: str
) -> None:
    """The task a signal names (``row``, found on ``board``) must be there and not have ended."""
    if row is None and board.total <= len(board.tasks):
        raise no_task(task, [t.id for t in board.tasks], run_id)
    if row is not None and row.status in TERMINAL:
        raise UsageError(
            f"{row.id} has already ended ({row.status}): a {what} reaches only agents that run or wait"
        )


async def send_signal(
    handle: WorkflowHandle[Any, Any], signal: Any, request: Any, what: str
) -> InterventionResult:
    try:
        await handle.signal(signal, request)
    except RPCError as e:
        raise ConnectError(f"could not signal {handle.id}: {e.message}") from None
    return InterventionResult(
        message=f"{what} sent as a signal (the run's worker predates the answering update)"
    )


def find_task(tasks: list[TaskView], name: str) -> TaskView | None:
    """The task called ``name``: its task id (T-3), its number (3) or its agent id."""
    return next((t for t in tasks if name in (t.id, t.agent_id, t.id.removeprefix("T-"))), None)
