"""How a failed activity is told to people (one line, with what Temporal already tried) and
to the leader's core (an AttemptFailure)."""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    TimeoutError,
    TimeoutType,
)

from workflows.patches import patched

with workflow.unsafe.imports_passed_through():
    from xsky.leader.core import AttemptFailure
    from xsky.plan.budget import UsageReport
    from xsky.runs import DecisionRecord


def describe_failure(err: ActivityError) -> str:
    """One readable line for an activity that failed after its retries."""
    cause = err.cause
    if isinstance(cause, ApplicationError):
        message = cause.message
    elif isinstance(cause, TimeoutError):
        kind = cause.type.name.lower().replace("_", "-") if cause.type else "activity"
        message = f"{kind} timeout"
        if cause.type is not None and cause.type.name == "HEARTBEAT":
            message += " (the worker stopped answering: crashed, killed or stuck)"
    elif isinstance(cause, CancelledError):
        message = "cancelled"
    else:
        message = str(cause or err)
    state = err.retry_state.name if err.retry_state is not None else ""
    if state == "MAXIMUM_ATTEMPTS_REACHED":
        message += " — retries exhausted"
    elif state == "NON_RETRYABLE_FAILURE" and "retries exhausted" not in message:
        # (an agent that spent its error budget says so itself: it was retried)
        message += " — not retried: retrying would not help"
    return message


def attempt_failure(err: ActivityError) -> AttemptFailure:
    """An attempt's failure for the core: its message, the permission decisions made before
    it and its attempt number (both travel in the details), and whether its worker was lost."""
    cause = err.cause
    details = (
        [d for d in cause.details if isinstance(d, dict)]
        if isinstance(cause, ApplicationError)
        else []
    )
    decisions = [
        DecisionRecord.model_validate(r)
        for d in details
        if "permissionDecisions" in d
        for r in d["permissionDecisions"]
    ]
    attempt = max([d["attempt"] for d in details if isinstance(d.get("attempt"), int)], default=0)
    lost = isinstance(cause, TimeoutError) and cause.type == TimeoutType.HEARTBEAT
    # Asked only of a deterministic failure, so the marker is written where it decides.
    deterministic = any(d.get("failure") == "deterministic" for d in details) and patched(
        "deterministic-failures-final"
    )
    usage = next(
        (
            UsageReport.model_validate(d["usage"])
            for d in details
            if isinstance(d.get("usage"), dict)
        ),
        None,
    )
    return AttemptFailure(describe_failure(err), decisions, attempt, lost, deterministic, usage)
