"""What a run answers when asked: its queries, read only (a query that changed the state would
decide differently on replay; tests/unit/test_leader_core.py checks every view leaves it as it
was). A base of :class:`workflows.leader.LeaderWorkflow` (Temporal finds handlers on bases)."""

# Annotations stay objects (no `from __future__ import annotations`): the SDK reads each
# handler's type hints whenever a run imports this module into its sandbox (see workflow.py).

from typing import TYPE_CHECKING

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from xsky.leader.core import LeaderCore
    from xsky.leader.grants import Grants, GrantsRequest
    from xsky.leader.ledger import LedgerView
    from xsky.leader.state import (
        AuditEntry,
        BoardPage,
        DispatchNews,
        DispatchRequest,
        HumanRequest,
        PageRequest,
        PlanVersion,
        TaskRequest,
    )
    from xsky.runs import ResultsPage


class LeaderQueries:
    """The leader's queries, over the core the workflow holds."""

    if TYPE_CHECKING:  # the workflow's own core (LeaderWorkflow._core)

        @property
        def _core(self) -> LeaderCore: ...

    @workflow.query(
        description="A page of the task board ({offset}, {limit} ≤ 2000, {status}): status, attempts, timings, "
        "result or error, and the counts of the whole board."
    )
    def task_board(self, req: PageRequest | None = None) -> BoardPage:
        return self._core.views.board_page(workflow.now(), req)

    @workflow.query(
        description="The current plan as workflow XML, with statuses and results ({offset}, {limit}: agents per page)."
    )
    def plan(self, req: PageRequest | None = None) -> str:
        return self._core.views.plan_page(req)

    @workflow.query(
        description="Plan versions ({offset}, {limit}): XML (or a reference for large ones) and why it changed."
    )
    def plan_history(self, req: PageRequest | None = None) -> list[PlanVersion]:
        return self._core.views.history_page(req)

    @workflow.query(
        description="A page of results ({offset}, {limit}, {status}): status, inline text or artifact reference, error."
    )
    def results(self, req: PageRequest | None = None) -> ResultsPage:
        return self._core.views.results_page(req)

    @workflow.query(
        description="Questions, tool approvals, escalations and the plan review (R-v) waiting for a person."
    )
    def pending_requests(self) -> list[HumanRequest]:
        return self._core.pending_requests(with_review=True)

    @workflow.query(
        description="Every permission decision so far: tool, call, allow/ask/deny, the rule or role that decided, who."
    )
    def permission_log(self) -> list[AuditEntry]:
        return list(self._core.audit.state.entries)

    @workflow.query(
        description="The leader's ledgers: its mode, the goal and its check, facts learned, each "
        "task's intent, and a page ({offset}, {limit}) of its judgments (result, goal, stall, "
        "question, approval: verdict, reason, by, applied)."
    )
    def ledger(self, req: PageRequest | None = None) -> LedgerView:
        return self._core.views.coordinator.ledger_view(req)

    @workflow.query(
        description="Nudges for one task ({taskId}), oldest first: running agents read these."
    )
    def nudges(self, req: TaskRequest) -> list[str]:
        return self._core.nudges_for(req.task_id)

    @workflow.query(
        name="dispatch_news",
        description="What a running model agent ({taskId}, {dispatch}) learns before each call: "
        "its nudges, and the share of the budget it may spend now (lowered or set by a person "
        "since it was dispatched).",
    )
    def dispatch_news(self, req: DispatchRequest) -> DispatchNews:
        share, known = self._core.budget.share_now(req.task_id.removeprefix("T-"), req.dispatch)
        return DispatchNews(
            nudges=self._core.nudges_for(req.task_id), share=share, share_known=known
        )

    @workflow.query(
        description="What one dispatch ({taskId}, {dispatch}) was given: its approvals, the run's "
        "rules and opened hosts, a plan role a person approved. Workers ask it before they honour "
        "an approval their input carries."
    )
    def grants(self, req: GrantsRequest) -> Grants:
        return self._core.inputs.grants(req)
