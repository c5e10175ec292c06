"""How long a worker lets workflow code run in one go before it calls it a deadlock.

The Python SDK fails an activation whose code has not given control back within 2 s
("[TMPRL1101] Potential deadlock detected"), and the server hands the workflow task out again.
A large plan's first task decodes its input and builds a task per agent and the plan's first
version: 0.9–1.5 s for 30,000 agents on a 2-core machine (bench/first_task.py). On a
loaded machine the same task takes longer each time it is given, and fails each time: the run
never starts. The Go and Java SDKs let a worker set this allowance (``DeadlockDetectionTimeout``);
the Python SDK has no option for it, so :func:`allow_task_time` sets it on a worker's workflow
side: :data:`ALLOWED`, 8 s of the server's default workflow-task timeout (10 s), which ends a
longer task anyway. It was 5 s until v0.12.4: a 30,000-agent plan's continued executions
decode a 9.7 MB state and index it in 5.3–5.6 s on a loaded 2-core machine, and each such task
failed for time and was given again in full — 13 of the run's 38 minutes (perf40). A task
failed for time is done again from its start, so letting it finish costs nothing a failure
would not; code that really is stuck is still reported, with its stack, 2 s before the server
gives the task up.

Where a release no longer keeps the allowance where this sets it, nothing changes (the SDK's
2 s) and tests/integration/test_task_time.py fails so that the change is seen.
"""

from __future__ import annotations

from temporalio.worker import Worker

ALLOWED = 8.0  # seconds of workflow code between two yields
# The SDK's private field (temporalio/worker/_workflow.py, 1.35): seconds, None when off.
_FIELD = "_deadlock_timeout_seconds"


def allow_task_time(worker: Worker, seconds: float = ALLOWED) -> Worker:
    """``worker`` with ``seconds`` allowed to workflow code between yields (a worker without
    workflows, or a debug-mode one, which checks none, is left as it is)."""
    workflows = getattr(worker, "_workflow_worker", None)
    if workflows is not None and getattr(workflows, _FIELD, None) is not None:
        setattr(workflows, _FIELD, seconds)
    return worker


def allowed(worker: Worker) -> float | None:
    """The seconds ``worker`` allows workflow code between yields (None: it checks none)."""
    workflows = getattr(worker, "_workflow_worker", None)
    return None if workflows is None else getattr(workflows, _FIELD, None)
