"""The request book: what the run has asked people — questions ``Q-n``, tool approvals ``A-n``,
escalations ``E-n`` — and what became of each (answered, expired, withdrawn). The plan review
``R-v`` is listed with them while it waits, but it is the plan's (xsky/leader/plans.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from xsky.leader.commands import Rejected
from xsky.leader.ledger import cut
from xsky.leader.state import (
    ApproveToolRequest,
    AuditEntry,
    HumanRequest,
    PlanState,
    RequestKind,
    RequestState,
    RequestStatus,
    ToolApproval,
)
from xsky.leader.tasks import TaskState
from xsky.runs import RunOptions

# The task id of a request about the whole run (a budget spent). Its task is looked up only
# through ``task.waiting_on == request.id``, so an agent whose id is "run" is never mistaken.
RUN_REQUEST = "run"


# The most of a failed task's error an escalation says (its fix is often its last sentence).
ESCALATION_ERROR_CHARS = 1000


class RequestBook:
    """The run's requests to people, the pending ones indexed."""

    def __init__(self, state: RequestState, options: RunOptions) -> None:
        self.state = state
        self.options = options
        # the workflow's patch question (xsky/leader/growth.py Patched), asked where it matters
        self.patched: Callable[[str], bool] = lambda patch_id: True
        self.pending = [r for r in state.requests if r.status == "pending"]

    def new(
        self, kind: RequestKind, task: TaskState | None, text: str, now: datetime
    ) -> HumanRequest:
        """A request about ``task``, or (None) about the whole run: task id "run"."""
        self.state.seq += 1
        prefix = {"question": "Q", "approval": "A", "escalation": "E"}[kind]
        request = HumanRequest(
            id=f"{prefix}-{self.state.seq}",
            kind=kind,
            task_id=task.id if task is not None else RUN_REQUEST,
            dispatch=task.attempt if task is not None else 0,
            text=text,
            created_at=now,
            deadline=now + timedelta(seconds=self.options.request_timeout),
        )
        self.state.requests.append(request)
        self.pending.append(request)
        return request

    def get(self, request_id: str) -> HumanRequest | None:
        """The request ``request_id`` names, its case as a person types it (``q-1`` is Q-1: our
        CLI and the live page took it so; the stock CLI's update was refused). Only an id no
        request has exactly is read again in capitals, so an update accepted before finds the
        same request; one refused before left no history, so nothing replayed changes."""
        exact = next((r for r in self.state.requests if r.id == request_id), None)
        if exact is not None or request_id == request_id.upper():
            return exact
        return next((r for r in self.state.requests if r.id == request_id.upper()), None)

    def listed(self, plan: PlanState | None = None) -> list[HumanRequest]:
        """Requests waiting for a person; with ``plan``, its review as one of them (R-v)."""
        pending = list(self.pending)
        if plan is not None and plan.review == "waiting" and plan.history:
            pending.insert(
                0,
                HumanRequest(
                    id=f"R-{plan.version}",
                    kind="review",
                    task_id="plan",
                    dispatch=0,
                    created_at=plan.history[-1].at,
                    deadline=plan.review_deadline,
                    text=f"review plan v{plan.version} ({len(plan.plan.agents)} agents), then approve_plan with version "
                    f"{plan.version}, or replan",
                ),
            )
        return pending

    def close(self, request: HumanRequest, status: RequestStatus, now: datetime) -> None:
        request.status = status
        request.answered_at = now
        if request in self.pending:
            self.pending.remove(request)

    def withdraw(self, request_id: str | None, why: str, now: datetime) -> None:
        request = self.get(request_id) if request_id else None
        if request is not None and request.status == "pending":
            self.close(request, "withdrawn", now)
            request.answer = why

    def hold(self, task: TaskState, now: datetime) -> None:
        """A task failed for good and the run holds on failure: an escalation keeps the run
        open for ``hold_on_failure`` seconds while a person decides."""
        error = task.error or ""
        # (cut at 300 with no mark, an error lost its end — the fix it names, the file it
        # blames: "not retried: retrying would not — retry, …"; the board keeps it whole)
        if len(error) > 300 and self.patched("escalation-says-whole-error"):
            error = cut(error, ESCALATION_ERROR_CHARS) or ""
        else:
            error = error[:300]
        request = self.new(
            "escalation",
            task,
            f"{task.id} failed: {error} — retry, skip, replan, or end the run",
            now,
        )
        request.hold = True
        request.deadline = now + timedelta(seconds=self.options.hold_on_failure)

    def withdraw_holds(self, task: TaskState, why: str, now: datetime) -> None:
        """A held task was decided (retried, skipped, cancelled, replanned): its hold goes."""
        for request in list(self.pending):
            if request.hold and request.task_id == task.id:
                self.close(request, "answered", now)
                request.answer = why

    def about(self, subject: str) -> list[HumanRequest]:
        """Pending requests about ``subject`` ("budget", "goal")."""
        return [r for r in self.pending if r.about == subject]

    def due(self, now: datetime) -> list[HumanRequest]:
        """Pending requests past their deadline: expired now (their tasks are the caller's)."""
        expired = [r for r in self.pending if r.deadline is not None and now >= r.deadline]
        for request in expired:
            request.status = "expired"
            self.pending.remove(request)
        return expired

    def require_pending(self, request_id: str, plan: PlanState) -> HumanRequest:
        """The pending request ``request_id`` an intervention answers, or why not."""
        request = self.get(request_id)
        if request is None and request_id.upper().startswith("R-") and plan.review == "waiting":
            raise Rejected(
                f"{request_id} is the plan review: approve it with approve_plan (version {plan.version}), or replan"
            )
        if request is None:
            pending = ", ".join(r.id for r in self.pending) or "none"
            raise Rejected(f"no request {request_id!r}; pending requests: {pending}")
        if request.status != "pending":
            raise Rejected(f"{request.id} is already {request.status}")
        return request

    def deadlines(self) -> list[datetime]:
        return [r.deadline for r in self.pending if r.deadline is not None]


# -- a person's decision on a tool request -----------------------------------------------------------


def person_decided(request: HumanRequest, req: ApproveToolRequest, now: datetime) -> AuditEntry:
    """The permission log's entry of a person's decision on ``request``."""
    return AuditEntry(
        at=now,
        task_id=request.task_id,
        tool=request.tool or "",
        arguments=request.text,
        effect="deny" if req.decision == "deny" else "allow",
        reason=f"{req.decision} by a person" + (f": {req.message}" if req.message else ""),
        by="person",
        request_id=request.id,
    )


def approval_of(request: HumanRequest, req: ApproveToolRequest) -> ToolApproval:
    """A person's decision, as the task's next dispatch is given it."""
    return ToolApproval(
        request_id=request.id,
        tool=request.tool or "",
        arguments=request.arguments or {},
        decision=req.decision,
        message=req.message,
    )


def decision_said(request: HumanRequest, decision: str, direct: bool) -> str:
    """What happens next, told to the person who decided (``direct``: the task is a direct tool
    agent, whose one call this was)."""
    if decision != "deny":
        then = f"{request.task_id} runs again and makes the call"
    elif direct:
        # a direct tool agent has only this one call: refused, it has nothing left to do
        # (a run with nothing else to do then ends: skip no longer applies, retry still does)
        then = (
            f"{request.task_id} fails: its one tool call was denied (retry it to run it again; "
            "skip it only while the run still goes on)"
        )
    else:
        then = f"{request.task_id} runs again and is told the call was denied"
    return f"{request.id}: {decision}; {then}"
