"""The leader's queries, updates and signals as a client calls them: by name, with the type of
what each answers.

A client does not import the workflow's own code to name its handlers (that is the whole
leader: a tenth of a second a command such as ``status`` has no use for). This table is the
leader's surface as clients see it; ``tests/unit/test_leader_calls.py`` holds it against
LeaderWorkflow's definitions, so a renamed handler or a changed answer fails there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xsky.leader.ledger import LedgerView
from xsky.leader.state import AuditEntry, BoardPage, HumanRequest, PlanVersion
from xsky.runs import ResultsPage, RunResult

WORKFLOW = "LeaderWorkflow"  # the workflow type every run is
RESULT = RunResult  # what a run returns


@dataclass(frozen=True)
class Query:
    name: str
    answer: Any  # the type the answer decodes to


@dataclass(frozen=True)
class Update:
    """Every update of the leader answers an InterventionResult."""

    name: str


@dataclass(frozen=True)
class Signal:
    name: str


TASK_BOARD = Query("task_board", BoardPage)
PENDING_REQUESTS = Query("pending_requests", list[HumanRequest])
PLAN = Query("plan", str)
PLAN_HISTORY = Query("plan_history", list[PlanVersion])
LEDGER = Query("ledger", LedgerView)
PERMISSION_LOG = Query("permission_log", list[AuditEntry])
RESULTS = Query("results", ResultsPage)

PAUSE_RUN = Update("pause_run")
RESUME_RUN = Update("resume_run")
NUDGE_TASK = Update("nudge_task")
PAUSE_TASK = Update("pause_task")
RESUME_TASK = Update("resume_task")
RESET_TASK = Update("reset_task")
SET_TASK_TIMEOUT = Update("set_task_timeout")
ANSWER = Update("answer")
APPROVE_TOOL = Update("approve_tool")
REPLAN = Update("replan")
APPROVE_PLAN = Update("approve_plan")
RETRY_TASK = Update("retry_task")
END_RUN = Update("end_run")
SET_BUDGET = Update("set_budget")
SKIP_TASK = Update("skip_task")
CANCEL_TASK = Update("cancel_task")

# The signals that were the only way in before the updates (a run whose worker predates them).
PAUSE = Signal("pause")
RESUME = Signal("resume")
NUDGE = Signal("nudge")
