"""A run's RunResult however it ended (completed, failed, or cancelled as a whole)."""

from __future__ import annotations

from typing import Any

from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.exceptions import ApplicationError

from xsky.client._consts import OUTCOME_TYPES
from xsky.runs import RunResult

# -- outcomes ------------------------------------------------------------------------------------


def result_of(error: BaseException) -> RunResult | None:
    """The RunResult a failed run carries in its failure, if it is one of ours."""
    cause = error.cause if isinstance(error, WorkflowFailureError) else error
    if isinstance(cause, ApplicationError) and cause.type in OUTCOME_TYPES and cause.details:
        return RunResult.model_validate(cause.details[0])
    return None


async def run_outcome(handle: WorkflowHandle[Any, RunResult]) -> RunResult:
    """Wait for the run; its RunResult whether it completed or its agents failed (a failed
    run's Temporal status is Failed, and its failure carries the result)."""
    try:
        return await handle.result()
    except WorkflowFailureError as e:
        result = result_of(e)
        if result is None:
            raise
        return result


def _status_name(status: WorkflowExecutionStatus | None) -> str:
    return status.name.lower().replace("_", " ") if status else "unknown"
