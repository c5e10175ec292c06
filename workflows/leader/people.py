"""The leader's dealings with people outside its handlers: the plan review it waits for,
requests closed when the run ends, cancellations kept across replans. Workflow code
(deterministic): called only from :class:`workflows.leader.LeaderWorkflow`."""

from __future__ import annotations

from temporalio import workflow

from workflows.leader.io import Board
from workflows.patches import patched

with workflow.unsafe.imports_passed_through():
    from xsky.leader.core import LeaderCore


async def review_gate(core: LeaderCore, board: Board) -> bool:
    """Wait for approve_plan when the run asked for review. False if the run ends here."""
    if not core.plans.reviewing:
        return True
    board.publish(core)
    # No deadline: an automatic replan's review from before the patch replan-review-deadline,
    # carried over by continue-as-new; it waits for approve_plan as it did then.
    deadline = core.plans.state.review_deadline
    remaining = None if deadline is None else max(0.0, (deadline - workflow.now()).total_seconds())
    try:
        await workflow.wait_condition(
            lambda: not core.plans.reviewing,
            timeout=remaining,
            timeout_summary="plan review",
        )
    except TimeoutError:
        return core.review_timed_out(workflow.now())
    return True


def close_requests(core: LeaderCore, why: str) -> None:
    """Nothing waits for a person once the run ends (the patch is asked only when something
    would: a run that ends with nothing pending records no marker)."""
    if core.pending_requests(with_review=True) and patched("requests-end-with-run"):
        core.people.close_requests(why, workflow.now())


def keep_cancelled(core: LeaderCore) -> bool:
    """Whether a replan keeps people's cancellations (asked only when there is one to keep)."""
    return any(t.stored == "cancelled" for t in core.board.state.tasks) and patched(
        "cancelled-stays-cancelled"
    )


def budget_gate(core: LeaderCore) -> None:
    """A run that has a budget (from its start, its plan or a replan's plan) asks the patch
    ``budgets`` — once: the SDK remembers the answer. A history from before budgets existed
    had none, and keeps none."""
    if core.budget.limits is not None and not patched("budgets"):
        core.keep_no_budget()
