"""What the leader's core decides and hands to the workflow: commands, stop reasons, the
refusal of an intervention, and the limits it works within."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from xsky.leader.ledger import ConsultInput
from xsky.plan.budget import BudgetShare, Usage, UsageReport
from xsky.runs import (
    DecisionRecord,
)

# A noop this short runs as a local activity where the leader's worker runs agents (longer
# ones stay activities: a local one holds the workflow task, so the board would not move).
LOCAL_SECONDS = 0.05
# The run's result carries inline results up to this many bytes in all; beyond it, refs only.
INLINE_RESULT_BUDGET = 512 * 1024
# Retry notes a task keeps (the newest).
MAX_RETRY_NOTES = 20
# Runs with more agents than this report them by reference (RunResult.results_ref).
INLINE_AGENTS = 200
# The plan query shows this many agents per page.
PLAN_PAGE = 1000
# Results shown to the planner are cut to this many characters each.
PLANNER_RESULT_CHARS = 2000
SATISFIED = ("completed", "skipped")
RUNNING = ("dispatched", "in_progress")
# The permission audit log keeps this many entries (older ones are counted, not kept).
AUDIT_KEEP = 1000


class StopReason(IntEnum):
    """Why a running attempt is being stopped, weakest first: a stronger reason wins (a task
    cancelled by a person and then caught by a pause stays cancelled)."""

    PAUSE = 0
    RESTART = 1
    CHANGED = 2
    ABANDON = 3
    REMOVED = 4
    SKIP = 5
    CANCEL = 6
    RUN_CANCEL = 7


class Rejected(Exception):
    """An intervention refused by its validator; the message says why and what to do."""


# -- commands ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StartAgent:
    """Run the agent's next attempt (dispatch number ``dispatch``)."""

    agent_id: str
    dispatch: int


@dataclass(frozen=True)
class StopAgent:
    """Cancel the agent's running attempt; the core hears back through ``attempt_ended``."""

    agent_id: str


@dataclass(frozen=True)
class CallPlanner:
    """Replan for ``reason``: automatically (failures, stalls, a goal not met), or because
    a person's answer asked for it (``label``: how plan history names it; None: as an
    automatic replan)."""

    reason: str
    label: str | None = None


@dataclass(frozen=True)
class Consult:
    """Ask the coordinator about a stalled task (``dispatch``: the attempt it was about);
    the shell runs the ``coordinate`` activity and hands its outcome to
    ``LeaderCore.stall_judged``."""

    agent_id: str
    dispatch: int
    consult: ConsultInput


Command = StartAgent | StopAgent | CallPlanner | Consult


@dataclass(frozen=True)
class AttemptFailure:
    """How an attempt failed after Temporal's retries (``None`` for a cancelled one)."""

    message: str
    decisions: list[DecisionRecord] = field(default_factory=list)
    attempt: int = 0  # Temporal's attempt number of the last try (0: not known)
    lost: bool = False  # the last try's worker was lost (no heartbeat): not the agent's failure
    # The failure would repeat (a non-zero exit, an HTTP 4xx, a refused argument): no
    # automatic replan follows it unless the run opts in (RunOptions.replan_deterministic).
    deterministic: bool = False
    usage: UsageReport | None = None  # what the agent's conversation had used when it failed


@dataclass
class Flight:
    """A dispatch's hold on the run's budget while it runs (only in runs with a budget)."""

    dispatch: int
    share: BudgetShare | None  # None: it calls no model and has no time limit
    start: Usage  # its task's settled usage when it was dispatched
    model: bool  # it may call a model
    reported: bool = False  # its end said what it used
    # What it holds on the budget when that is not its share: the share it had before a
    # person's change fitted it down (Budget.refit) — it may have spent more than it reported
    # so far, and that stays held (and charged, should it never say) until it ends.
    hold: BudgetShare | None = None

    @property
    def holding(self) -> BudgetShare | None:
        return self.hold if self.hold is not None else self.share
