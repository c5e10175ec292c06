"""How long a worker lets workflow code run in one go before it calls it a deadlock.

The Python SDK fails an activation whose code has not given control back within 2 s
("[TMPRL1101] Potential deadlock detected"), and the server hands the workflow task out again.
A large plan's first task decodes its input and builds a task per agent and the plan's first
version: 0.9–1.5 s for 30,000 agents on a 2-core machine (bench/first_task.py). On a
loaded machine the same task takes longer each time it is given, and fails each time: the run
never starts. The Go and Java SDKs let a worker set this allowance (``DeadlockDetectionTimeout``);
the Python SDK has no option for it, so :func:`allow_task_time` sets it on a worker's workflow
side: :data:`ALLOWED`, half the server's default workflow-task timeout (10 s), which ends a
longer task anyway. Code that really is stuck is still reported, with its stack, 3 s later.

Where a release no longer keeps the allowance where this sets it, nothing changes (the SDK's
2 s) and tests/integration/test_task_time.py fails so that the change is seen.
"""

from __future__ import annotations

from temporalio.worker import Worker

ALLOWED = 5.0  # seconds of workflow code between two yields
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
