"""Pause, resume and nudge a run: through the update twins, which answer (or refuse, saying
why); through the signals only for a run whose worker predates the twins, checked here first
since a signal cannot refuse. The run (client/run.py) tries the update and falls back on these."""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from temporalio.client import WorkflowHandle
from temporalio.service import RPCError

from xsky.errors import ConnectError, RefusedError, UsageError
from xsky.leader.state import BoardPage, InterventionResult
from xsky.leader.tasks import TERMINAL, TaskView

# How the server refuses an update the run's code does not have (an older worker runs it).
UNKNOWN_UPDATE = "expected but not found"
# How a run refuses an update naming a task it does not have (xsky/leader/board.py: it finds a
# task by its exact id, T-3 or 3, only).
NO_SUCH_TASK = "refused: no task "
# A task id's ``T-`` as a person may write it: ``t-3``, or ``T3`` (no dash before a digit).
TASK_PREFIX = re.compile(r"^t(?:-|(?=[0-9]))", re.IGNORECASE)


def predates_update(refused: RefusedError) -> bool:
    """Was the update refused because the run's worker predates it (not by the run itself)?"""
    return UNKNOWN_UPDATE in str(refused)


def no_task(task: str, ids: Sequence[str], where: str) -> UsageError:
    """The refusal of a task id ``where`` (a run, its last plan) does not have: the id closest
    to it when there is one (``T-regoin``: did you mean T-region?), and the first of the rest."""
    close = closest_task(task, ids)
    meant = f" — did you mean {close}?" if close else ""
    shown = ", ".join(ids[:20]) + (f" … ({len(ids)} in all)" if len(ids) > 20 else "")
    return UsageError(f"no task {task!r} in {where}{meant}; tasks: {shown}")


def closest_task(task: str, ids: Sequence[str]) -> str | None:
    """The task id of ``ids`` (T-3) closest to a mistyped ``task``, letters' case aside."""
    bare = {i.removeprefix("T-").lower(): i for i in ids}
    close = difflib.get_close_matches(task.removeprefix("T-").lower(), list(bare), n=1, cutoff=0.6)
    return bare[close[0]] if close else None


def agent_named(agent_ids: Iterable[str], name: str) -> str | None:
    """The agent id ``name`` means among ``agent_ids``: its task id (T-3) or agent id (3), as
    the run finds them; else the one it is written as by a person — ``t-3``, ``T3``, ``3`` for
    an agent ``3``, or the agent id in another case (``Search``) — when it can be only one.
    None when it names none (or several)."""
    ids = set(agent_ids)
    found = exact_agent(ids, name)
    if found is None and len(loose := loose_agents(ids, name)) == 1:
        found = loose[0]
    return found


def exact_agent(agent_ids: Collection[str], name: str) -> str | None:
    """The agent id ``name`` names exactly, as the run finds a task: T-3, else 3."""
    for exact in (name[2:] if name.startswith("T-") else name, name):
        if exact in agent_ids:
            return exact
    return None


def loose_agents(agent_ids: Iterable[str], name: str) -> list[str]:
    """The agent ids ``name`` could mean written as a person writes a task id: in either case,
    with or without ``T-`` (or ``T`` before a digit)."""
    low = name.strip().lower()
    keys = {low, TASK_PREFIX.sub("", low)}
    return sorted({a for a in agent_ids if a.lower() in keys})


def names_task(task_id: str, name: str) -> bool:
    """Does ``name`` (as :func:`agent_named` takes it) name the task ``task_id`` (T-3)?"""
    return agent_named([task_id.removeprefix("T-")], name) is not None


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
    """The task called ``name``: its task id (T-3), its number (3) or its agent id — or any of
    these in another case, or ``T3`` (:func:`agent_named`)."""
    by_agent = {t.agent_id: t for t in tasks}
    found = agent_named(by_agent, name)
    return by_agent[found] if found is not None else None


def exact_task(tasks: list[TaskView], name: str) -> TaskView | None:
    """The task ``name`` names exactly (T-3, 3), as the run itself finds it."""
    by_agent = {t.agent_id: t for t in tasks}
    found = exact_agent(by_agent, name)
    return by_agent[found] if found is not None else None
