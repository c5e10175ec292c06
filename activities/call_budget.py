"""A leader model call's share of its run's budget: the coordinator's and the planner's.

The leader reserves a share before it schedules the call (xsky/leader/budget.py) and sends it
in the call's input; here every request the activity makes is checked against what is left of
it first (:func:`xsky.plan.budget.call_room`, the check agents' requests pass too), and an
answer that must be short is asked for with ``max_tokens``. What the call spent travels in
its heartbeats, so an attempt that follows a failed or lost one goes on counting from there
(a retry cannot spend the share again), and in the details of the error it may end with, so
the leader charges what was spent rather than guess.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from xsky.plan.budget import BudgetShare, Price, Usage, call_room, estimate_tokens


class CallBudget:
    """One leader call's share and what its attempts have spent of it."""

    def __init__(self, share: BudgetShare | None, price: Price | None) -> None:
        self.share = share
        self.price = price
        self.spent = _carried()

    def before(self, messages: list[dict[str, Any]]) -> int | None:
        """The ``max_tokens`` of the next request (None: no need for one); raises
        :class:`xsky.plan.budget.ShareSpent` when the request would not fit what is left."""
        if self.share is None:
            return None
        estimate = estimate_tokens(messages, None)
        return call_room(self.share, self.spent, estimate, self.price, datetime.now(UTC))

    def count(self, usage: Usage) -> None:
        """A request's usage, and a heartbeat that carries the total to a next attempt."""
        self.spent = self.spent.plus(usage)
        self.beat("counted")

    def details(self, note: str) -> dict[str, Any]:
        return {"note": note, "usage": self.spent.wire()}

    def beat(self, note: str) -> None:
        if activity.in_activity() and not activity.info().is_local:
            activity.heartbeat(self.details(note))

    def failure(self, e: ApplicationError) -> ApplicationError:
        """``e`` with what the call spent in its details (the leader charges that)."""
        return ApplicationError(
            e.message,
            *e.details,
            {"usage": self.spent.wire()},
            type=e.type,
            non_retryable=e.non_retryable,
        )


def _carried() -> Usage:
    """What earlier attempts of this activity spent (their last heartbeat says)."""
    if not activity.in_activity():
        return Usage()  # the CLI's own planner call (starter.py plan)
    for detail in reversed(activity.info().heartbeat_details):
        if isinstance(detail, dict) and isinstance(detail.get("usage"), dict):
            try:
                return Usage.model_validate(detail["usage"])
            except ValueError:
                return Usage()
    return Usage()
