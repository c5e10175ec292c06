"""LeaderCore: the leader's decisions as a pure, deterministic state machine.

The scheduler, the task board, people's requests, the stall ladder, replan merging and
the rules of every intervention live here, with no Temporal import: the core takes
``now`` and events (an attempt ended, an update, a signal, a timer) and returns commands
(:class:`StartAgent`, :class:`StopAgent`, :class:`CallPlanner`). ``workflows/leader.py``
turns Temporal events into calls and commands into activities and cancellations, so all
of this is tested without a server (tests/unit/test_leader_core.py drives it through
generated event sequences).

Per-event cost does not grow with the plan: the ready set is a heap of plan positions,
each task counts its unfinished dependencies, and status counters are kept as states
change. Whole-board work (derived ``blocked`` statuses, the board's rows) happens only
in queries and when the board is published.

Validators (``check_*``) raise :class:`Rejected` and change nothing; handlers assume the
check passed.
"""

from __future__ import annotations

from xsky.leader.commands import (
    AUDIT_KEEP,
    INLINE_AGENTS,
    INLINE_RESULT_BUDGET,
    LOCAL_SECONDS,
    MAX_RETRY_NOTES,
    PLAN_PAGE,
    PLANNER_RESULT_CHARS,
    QUEUE_KINDS,
    RUNNING,
    SATISFIED,
    AttemptFailure,
    CallPlanner,
    Command,
    Consult,
    Rejected,
    StartAgent,
    StopAgent,
    StopReason,
)
from xsky.leader.ledger_views import LedgerViews


class LeaderCore(LedgerViews):
    """One run's leader, its concerns layered one module each (lowest first): the state and
    its indexes (:mod:`~xsky.leader.base`), people's requests (:mod:`~xsky.leader.requests`),
    an attempt's input (:mod:`~xsky.leader.attempt_input`), the run's course
    (:mod:`~xsky.leader.course`), the stall ladder (:mod:`~xsky.leader.ladder`), the
    interventions (:mod:`~xsky.leader.interventions`), the signals' checks and refusals
    (:mod:`~xsky.leader.refusals`), the coordinator's judgment
    (:mod:`~xsky.leader.coordination`) and, beside them, the read-only views
    (:mod:`~xsky.leader.views`, :mod:`~xsky.leader.ledger_views`). Each layer calls only the
    layers below it; a lower layer leaves hooks (``_take_result``, ``_requested``,
    ``_judge_stall``) that the coordination layer fills."""


__all__ = [
    "AUDIT_KEEP",
    "INLINE_AGENTS",
    "INLINE_RESULT_BUDGET",
    "LOCAL_SECONDS",
    "MAX_RETRY_NOTES",
    "PLANNER_RESULT_CHARS",
    "PLAN_PAGE",
    "QUEUE_KINDS",
    "RUNNING",
    "SATISFIED",
    "AttemptFailure",
    "CallPlanner",
    "Command",
    "Consult",
    "LeaderCore",
    "Rejected",
    "StartAgent",
    "StopAgent",
    "StopReason",
]
