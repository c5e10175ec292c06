"""How a failed activity is told to people: one line, with what Temporal already tried."""

from __future__ import annotations

from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, TimeoutError


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
