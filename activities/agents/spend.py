"""What an agent's model calls spend, and the share of the budget it may spend.

Every call's tokens (from the response's ``usage``) and their cost (the worker's price of the
model, settings.json ``prices``) go into the conversation's checkpoint, so a retry after a
lost worker, or the next dispatch, goes on counting from there. Before each call the share
the leader gave this dispatch (``AgentInput.budget_share``) is checked: when what is left
cannot cover the request's estimated input and a minimal answer, or its time is up, the
attempt stops cleanly (:class:`BudgetStop`, outcome ``budget``); otherwise a call whose share
is tight passes ``max_tokens``, so its answer cannot overrun the share.
"""

from __future__ import annotations

import json
import math
import uuid
from datetime import UTC, datetime
from typing import Any

from temporalio.exceptions import ApplicationError

from activities import metrics
from activities.agents.checkpoint import Checkpoint, Checkpoints
from activities.agents.key import AgentKey
from activities.artifacts import ArtifactStore
from activities.server_clock import server_time
from xsky.plan.budget import (
    ANSWER_CAP,
    MIN_ANSWER,
    BudgetShare,
    Price,
    ShareSpent,
    Usage,
    UsageReport,
    call_room,
    cost,
    estimate_tokens,
)


def server_now() -> datetime:
    """The server's time now as this attempt knows it: the time the server gave the attempt out
    (``started_time``) plus what the monotonic clock counted since the worker first asked
    (activities/server_clock.py). A share's ``until`` is on the server's clock (the leader's
    ``workflow.now()``): checked by this worker's wall clock, a worker whose clock jumped an
    hour ahead refused every model call of a 30-minute budget as "time spent" one second in,
    and one an hour behind called on an hour past it (chaos15). The wall clock outside an
    activity."""
    now = server_time()
    return datetime.now(UTC) if now is None else datetime.fromtimestamp(now, UTC)


class BudgetStop(ShareSpent):
    """The next model call would not fit this dispatch's share: stop, checkpointed."""


def stored_usage(store: ArtifactStore, key: AgentKey) -> UsageReport:
    """What the agent's checkpointed conversation has used (nothing, for a direct agent)."""
    return usage_report(Checkpoints(store, key).load(), key.dispatch_key)


def usage_report(cp: Checkpoint | None, dispatch_key: str) -> UsageReport:
    """What a conversation used, in all and in this dispatch (nothing, without one)."""
    if cp is None:
        return UsageReport()
    mine = cp.usage.minus(cp.share_base) if cp.share_key == dispatch_key else Usage()
    return UsageReport(conversation=cp.conversation, total=cp.usage, dispatch=mine)


class Meter:
    """One attempt's spend against its dispatch's share."""

    def __init__(
        self,
        share: BudgetShare | None,
        prices: dict[str, Price],
        model: str,
        dispatch_key: str,
        settings_file: str = "settings.json",
    ):
        self.share = share
        self.price = prices.get(model)
        self.model = model
        self.dispatch_key = dispatch_key
        self.capped: int | None = None  # the max_tokens the share set for the last call
        self.estimate = 0  # the last call's estimated input
        # How much the server's count of a call's input exceeded its estimate (at least 1): the
        # estimate of 3 bytes a token undercounts some text (a CJK character can be 2 tokens,
        # hex and base64 runs are short tokens), and the share must hold what is really sent.
        self.undercount = 1.0
        if share is not None and share.usd is not None and self.price is None:
            example = json.dumps({"prices": {model: {"input": 0.15, "output": 0.6}}})
            raise ApplicationError(
                f"the run has a USD budget, and model {model!r} has no price on this worker: add "
                f"prices.{model} to the worker's {settings_file} (USD per million tokens, e.g. "
                f"{example}), or start the run without usd=",
                type="BudgetPriceMissing",
                non_retryable=True,
            )

    def begin(self, cp: Checkpoint) -> None:
        """The conversation's id, and where this dispatch's spending starts (a retry of the
        same dispatch goes on from where its lost attempt was)."""
        if not cp.conversation:
            cp.conversation = uuid.uuid4().hex[:16]
        if cp.share_key != self.dispatch_key:
            cp.share_key, cp.share_base = self.dispatch_key, cp.usage
        self.undercount = max(self.undercount, cp.undercount)

    def before(
        self, cp: Checkpoint, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> int | None:
        """The ``max_tokens`` the next call is made with (None: no need for one); raises
        :class:`BudgetStop` when the call would not fit the share."""
        self.capped = None
        share = self.share
        if share is None:
            return None
        if share.usd is not None and self.price is None:
            # A USD limit set since it started (dispatch_news), on a model this worker has no
            # price for: it cannot count what a call costs, so it stops cleanly; its next
            # dispatch says what is missing (BudgetPriceMissing).
            raise BudgetStop("usd")
        estimate = self.estimate = math.ceil(estimate_tokens(messages, tools) * self.undercount)
        try:
            room = call_room(
                share, cp.usage.minus(cp.share_base), estimate, self.price, server_now()
            )
        except ShareSpent as spent:
            raise BudgetStop(spent.stopped, spent.need) from None
        self.capped = room
        return room

    def count(self, cp: Checkpoint, response: Any, messages: list[dict[str, Any]]) -> None:
        """A call's usage into the conversation's total. A server that reports none is
        counted by estimate (its input, and its answer's length), never as free."""
        usage = getattr(response, "usage", None)
        tokens_in = getattr(usage, "prompt_tokens", 0) or 0
        tokens_out = getattr(usage, "completion_tokens", 0) or 0
        if self.estimate and tokens_in > self.estimate:  # (the estimate of what was sent)
            self.undercount *= tokens_in / self.estimate
            cp.undercount = self.undercount  # (saved with the answer's checkpoint)
        if usage is None:
            tokens_in = estimate_tokens(messages, None)
            reply = response.choices[0].message if getattr(response, "choices", None) else None
            tokens_out = estimate_tokens([{"r": getattr(reply, "content", None) or ""}], None)
        usd = cost(tokens_in, tokens_out, self.price) if self.price is not None else 0.0
        cp.usage = cp.usage.plus(
            Usage(input_tokens=tokens_in, output_tokens=tokens_out, usd=usd, calls=1)
        )
        metrics.model_cost(self.model, usd)

    def cut(self, response: Any) -> BudgetStop | None:
        """The answer was cut at the ``max_tokens`` the share set: it is dropped (a cut answer
        is not an answer) and the agent stops, asking for room for a whole one next time. Cut
        at :data:`ANSWER_CAP` (the share had more room) it is not the share's doing: it goes on
        as an answer cut at the model's own limit does."""
        if self.capped is None or self.capped >= ANSWER_CAP:
            return None
        if response.choices[0].finish_reason != "length":
            return None
        used = getattr(getattr(response, "usage", None), "completion_tokens", None)
        if isinstance(used, int) and used < self.capped:
            return None  # cut below the share's room: the server's own lower limit, not the share
        answer = 2 * max(self.capped, MIN_ANSWER)
        usd = cost(self.estimate, answer, self.price) if self.price is not None else 0.0
        return BudgetStop(
            "tokens", Usage(input_tokens=self.estimate, output_tokens=answer, usd=usd)
        )

    def report(self, cp: Checkpoint) -> UsageReport:
        return usage_report(cp, self.dispatch_key)
