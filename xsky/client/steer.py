"""Pause, resume and nudge a run: through the update twins, which answer (or refuse, saying
why); through the signals only for a run whose worker predates the twins, checked here first
since a signal cannot refuse."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from temporalio.service import RPCError

from xsky.errors import ConnectError, RefusedError, UsageError
from xsky.leader.state import InterventionResult
from xsky.leader.tasks import TERMINAL, TaskView

if TYPE_CHECKING:
    from xsky.client.run import Run

# How the server refuses an update the run's code does not have (an older worker runs it).
UNKNOWN_UPDATE = "expected but not found"


async def steer(
    run: Run, update: Any, signal: Any, request: Any, what: str, task: str | None = None
) -> InterventionResult:
    """The update ``update`` (answered), or for an older run the signal ``signal``."""
    try:
        return await run._update(update, request)
    except RefusedError as e:
        if UNKNOWN_UPDATE not in str(e):
            raise
    await send_signal(run, signal, request, what, task)
    return InterventionResult(
        message=f"{what} sent as a signal (the run's worker predates the answering update)"
    )


async def send_signal(
    run: Run, signal: Any, request: Any, what: str, task: str | None = None
) -> None:
    await run._running(what)
    if task is not None:  # signals cannot refuse: check the task exists first
        board = await run.board(limit=2000)
        row = find_task(board.tasks, task)
        if row is None and board.total <= len(board.tasks):
            raise UsageError(
                f"no task {task!r} in {run.id}; tasks: {', '.join(t.id for t in board.tasks[:20])}"
            )
        if row is not None and row.status in TERMINAL:
            raise UsageError(
                f"{row.id} has already ended ({row.status}): a {what} reaches only agents that run or wait"
            )
    try:
        await run.handle.signal(signal, request)
    except RPCError as e:
        raise ConnectError(f"could not signal {run.id}: {e.message}") from None


def find_task(tasks: list[TaskView], name: str) -> TaskView | None:
    """The task called ``name``: its task id (T-3), its number (3) or its agent id."""
    return next((t for t in tasks if name in (t.id, t.agent_id, t.id.removeprefix("T-"))), None)
