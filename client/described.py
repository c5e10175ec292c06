"""A run's status as the server describes it — what ``status`` and ``list`` ask before they
need any of the leader's models (which are a tenth of a second of a command's start-up)."""

from __future__ import annotations

from typing import Any

from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from xsky.config import Settings
from xsky.errors import ConnectError, RunNotFoundError


def status_name(status: WorkflowExecutionStatus | None, xsky_status: object = None) -> str:
    """Temporal's status of a run in xsky's words ("cancelled", as a run's result and its
    tasks say it, where Temporal writes CANCELED). A run a person ended with no task failed
    (``end``), or whose review was cancelled, ends Failed in Temporal — the leader raises its
    result, type RunCancelled — and its own verdict, ``xsky_status`` (the XskyStatus search
    attribute), is "cancelled": that is what it is called, as its result calls it."""
    if status == WorkflowExecutionStatus.CANCELED:
        return "cancelled"
    if status == WorkflowExecutionStatus.FAILED and xsky_status == "cancelled":
        return "cancelled"
    return status.name.lower().replace("_", " ") if status else "unknown"


async def described_status(handle: WorkflowHandle[Any, Any], settings: Settings) -> str:
    """The run's status (:func:`status_name`); RunNotFoundError when the server has no run of
    that id, ConnectError when it cannot be asked."""
    try:
        desc = await handle.describe()
        said = {key.name: value for key, value in desc.typed_search_attributes}
        return status_name(desc.status, said.get("XskyStatus"))
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            raise RunNotFoundError(
                f"no run with id {handle.id}",
                "XSky.runs() lists the recent ones",
                topic="not-found",
                subject=handle.id,
            ) from None
        raise ConnectError(
            f"cannot reach Temporal at {settings.address} ({e.message}); is the server up?"
        ) from None
