"""xsky's metrics recorded by the leader workflow: agents started, completed and failed,
stall-ladder steps, and requests waiting for a person.

Through ``workflow.metric_meter()``: nothing is recorded while a workflow replays (so a
worker that takes over a run does not count its past again), and recording is no command
(history is the same with or without it). Workflow code: deterministic, no I/O.
"""

from __future__ import annotations

import asyncio
import re

from temporalio import workflow
from temporalio.exceptions import ActivityError, CancelledError

with workflow.unsafe.imports_passed_through():
    from xsky.plan.budget import Usage

# How LeaderCore logs a step of the stall ladder (xsky/leader/ladder.py StallLadder.logged):
# ``counted`` is a direct tool agent's first rung, which nudges nothing (stall-rung-named).
_STALL_STEP = re.compile(r"^stall ladder: \S+ (nudge|counted|restart|replan|escalate) \(")


class LeaderMetrics:
    def __init__(self) -> None:
        meter = workflow.metric_meter()
        self._started = meter.create_counter(
            "xsky_agents_started", "agents started, by kind (once per dispatch)"
        )
        self._completed = meter.create_counter(
            "xsky_agents_completed", "agents that completed, by kind"
        )
        self._failed = meter.create_counter(
            "xsky_agents_failed", "agents that failed after their retries, by kind"
        )
        self._stall = meter.create_counter(
            "xsky_stall_steps", "steps of the stall ladder taken, by step"
        )
        # Two counters, no run label: a gauge per run was one series per run, for ever.
        # Waiting now, fleet-wide: sum(xsky_requests_opened) - sum(xsky_requests_closed).
        self._opened = meter.create_counter(
            "xsky_requests_opened",
            "requests put to a person (questions, approvals, escalations, reviews)",
        )
        self._closed = meter.create_counter(
            "xsky_requests_closed", "requests answered, withdrawn or expired"
        )
        self._shown: int | None = None  # the pending count this worker last accounted for
        self._tokens = meter.create_counter(
            "xsky_run_tokens", "model tokens runs settled (agents, planner, leader), all runs"
        )
        self._usd = meter.create_counter(
            "xsky_run_usd_micro", "model cost runs settled, in millionths of a USD, all runs"
        )

    def started(self, kind: str) -> None:
        self._started.add(1, {"kind": kind})

    def returned(self, kind: str, outcome: str) -> None:
        """An attempt that returned: completed, or waiting for a person (not counted)."""
        if outcome == "completed":
            self._completed.add(1, {"kind": kind})

    def failed(self, kind: str, error: BaseException) -> None:
        """An attempt that raised: a failure, unless it was stopped (cancelled) on purpose."""
        stopped = isinstance(error, asyncio.CancelledError) or (
            isinstance(error, ActivityError) and isinstance(error.cause, CancelledError)
        )
        if not stopped:
            self._failed.add(1, {"kind": kind})

    def spent(self, usage: Usage) -> None:
        """Usage the run settled since it last said (a replay records nothing)."""
        if usage.tokens:
            self._tokens.add(usage.tokens)
        if usage.usd:
            self._usd.add(round(usage.usd * 1_000_000))

    def stall_steps(self, log: list[str]) -> None:
        for line in log:
            step = _STALL_STEP.match(line)
            if step is not None:
                self._stall.add(1, {"step": step.group(1)})

    def pending_requests(self, count: int) -> None:
        """The run's pending count now: its change is counted as opened or closed requests.
        A replay records nothing; the first count a worker sees live (a run it took over, or
        a continued one) was accounted for by whoever saw the requests open."""
        if workflow.unsafe.is_replaying() or count == self._shown:
            return
        if self._shown is not None:
            delta = count - self._shown
            (self._opened if delta > 0 else self._closed).add(abs(delta))
        elif workflow.info().continued_run_id is None and count > 0:
            self._opened.add(count)  # a run's first look: nobody counted these yet
        self._shown = count
