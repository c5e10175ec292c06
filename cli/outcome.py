"""A run's RunResult however it ended: returned (completed), or carried by the failure of
a run whose agents failed (its Temporal status is Failed, so the Web UI and
``temporal workflow list`` tell the truth, and the result is still at hand)."""

from __future__ import annotations

from typing import Any

from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from xsky.runs import RunResult

# The failure types a leader ends with when it has a RunResult to give.
OUTCOME_TYPES = ("RunFailed", "RunCancelled")


def result_of(error: BaseException) -> RunResult | None:
    """The RunResult a failed run carries in its failure, if it is one of ours."""
    cause = error.cause if isinstance(error, WorkflowFailureError) else error
    if isinstance(cause, ApplicationError) and cause.type in OUTCOME_TYPES and cause.details:
        return RunResult.model_validate(cause.details[0])
    return None


async def run_outcome(handle: WorkflowHandle[Any, RunResult]) -> RunResult:
    """Wait for the run; its RunResult whether it completed or its agents failed."""
    try:
        return await handle.result()
    except WorkflowFailureError as e:
        result = result_of(e)
        if result is None:
            raise
        return result
