"""Stall detection: the time ladder for tasks without progress, and mechanical loops.

Progress (a report from a working agent) and liveness (Temporal heartbeats) are two
clocks: a worker stuck retrying the same call is alive but makes no progress. The ladder
for a task without progress: nudge → restart from its checkpoint → replan (while the
run's replan budget lasts) → escalate to a person. Any progress starts the ladder over.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from xsky.plan.agent_config import StallWindows

StallAction = Literal["nudge", "restart", "replan", "escalate"]
# Ladder levels: 0 fresh, 1 nudged, 2 restarted, 3 escalated (nothing further).
ESCALATED = 3
# The board's note on a task whose attempt waits for a worker: not a stall (xsky/leader/ladder.py
# ``attempts_seen``); gone when a worker starts it.
WAITING_FOR_WORKER = "waiting for a worker"
# ... and on one an operator paused (Temporal's activity pause): not a stall either (patch
# stall-sees-operator-pause); gone when a worker starts it again.
PAUSED_BY_OPERATOR = "paused by an operator"
# The notes the ladder writes about an attempt that does not run (not an agent's own words).
NOT_RUNNING = (WAITING_FOR_WORKER, PAUSED_BY_OPERATOR)


def stall_step(
    level: int, idle: float, windows: StallWindows, can_replan: bool
) -> StallAction | None:
    """The next rung for a task idle for ``idle`` seconds at ladder ``level``, if due."""
    if not windows.enabled or level >= ESCALATED:
        return None
    if level == 0 and idle >= windows.nudge_after:
        return "nudge"
    if level == 1 and idle >= windows.restart_after:
        return "restart"
    if level == 2 and idle >= windows.restart_after:
        return "replan" if can_replan else "escalate"
    return None


def seconds_to_next_step(level: int, idle: float, windows: StallWindows) -> float | None:
    """How long until the next rung could be due (``None``: nothing left to wait for)."""
    if not windows.enabled or level >= ESCALATED:
        return None
    due = windows.nudge_after if level == 0 else windows.restart_after
    return max(0.0, due - idle)


def stall_message(action: StallAction, idle: float) -> str:
    if action == "nudge":
        return (
            f"You have made no progress for {idle:.0f}s. If you are stuck, try a different approach; "
            "if you have enough, finish now with your best answer."
        )
    if action == "restart":
        return f"no progress for {idle:.0f}s after a nudge: restarted from its checkpoint"
    if action == "replan":
        return f"no progress for {idle:.0f}s after a restart: replanning"
    return f"no progress for {idle:.0f}s after a restart, and no replans left: a person must decide"


class LoopDetector:
    """Counts identical tool calls in a row: 3 → nudge, 5 → stop the attempt."""

    def __init__(self, nudge_at: int = 3, stop_at: int = 5):
        self.nudge_at = nudge_at
        self.stop_at = stop_at
        self._last: str | None = None
        self.repeats = 0

    @staticmethod
    def key(tool: str, arguments: Any) -> str:
        return (
            tool + "\x00" + json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
        )

    def observe(self, tool: str, arguments: Any) -> Literal["nudge", "stop"] | None:
        key = self.key(tool, arguments)
        self.repeats = self.repeats + 1 if key == self._last else 1
        self._last = key
        if self.repeats >= self.stop_at:
            return "stop"
        if self.repeats == self.nudge_at:
            return "nudge"
        return None
