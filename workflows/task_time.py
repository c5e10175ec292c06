"""How long a worker lets workflow code run in one go before it calls it a deadlock.

The Python SDK fails an activation whose code has not given control back within 2 s
("[TMPRL1101] Potential deadlock detected"), and the server hands the workflow task out again.
A large plan's first task decodes its input and builds a task per agent and the plan's first
version: 0.9–1.5 s for 30,000 agents on a 2-core machine (bench/first_task.py). On a
loaded machine the same task takes longer each time it is given, and fails each time: the run
never starts. The Go and Java SDKs let a worker set this allowance (``DeadlockDetectionTimeout``);
the Python SDK has no option for it, so :func:`allow_task_time` sets it on a worker's workflow
side: :data:`ALLOWED`, 60 s.

The detector does not stop the code it catches: it raises an exception into the workflow's
thread wherever that thread is, and the SDK then evicts the run — and eviction runs under the
same allowance. On a loaded machine both can overrun any few seconds: a 30,000-agent run at
load 20 had a 3 MB execution's tasks take 8–18 s; the detector interrupted them mid-way, then
the run's eviction timed out under the same allowance and was retried, failing each time ("Timed
out running eviction job …", "Eviction processed, but 84 tasks remain": tasks of the interrupted
loop that were never run), and the worker held the run, wedged, for over an hour with its CPU
idle (v0.12.6, bench/scale.py --sizes 30000; the SDK retries an eviction that timed out while
the first may still be running on its thread).
A task that outruns the server's workflow-task timeout (10 s) is given out again anyway, and
its late completion refused — cleanly, by the run's own eviction, when the code was let finish.
So the allowance is there only for code that really is stuck, and well past what load makes of
real work: 60 s, where it was 8 s in v0.12.4–v0.12.5 and 5 s before (2 s short of the task
timeout, so that a stuck task's stack was logged before the server gave it up).

Where a release no longer keeps the allowance where this sets it, nothing changes (the SDK's
2 s) and tests/integration/test_task_time.py fails so that the change is seen.
"""

from __future__ import annotations

from temporalio.worker import Worker

ALLOWED = 60.0  # seconds of workflow code between two yields (and for an eviction)
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
