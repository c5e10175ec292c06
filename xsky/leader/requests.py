"""People's requests (questions, approvals, escalations) and finding tasks by id."""

from __future__ import annotations

from datetime import datetime, timedelta

from xsky.leader.base import CoreBase
from xsky.leader.commands import Rejected
from xsky.leader.state import (
    HumanRequest,
    RequestKind,
    RequestStatus,
)
from xsky.leader.tasks import TaskState, derive_statuses

# The task id of a request about the whole run (a budget spent). Its task is looked up only
# through ``task.waiting_on == request.id``, so an agent whose id is "run" is never mistaken.
RUN_REQUEST = "run"


class Requests(CoreBase):
    """The requests a run has put to people, and the lookups interventions use."""

    # -- lookups -------------------------------------------------------------------------------

    def task_by_id(self, task_id: str) -> TaskState | None:
        """A task by ``T-3`` or ``3``."""
        agent_id = task_id[2:] if task_id.startswith("T-") else task_id
        return self.tasks.get(agent_id)

    def _require_task(self, task_id: str) -> TaskState:
        task = self.task_by_id(task_id)
        if task is None:
            known = ", ".join(t.id for t in self.state.tasks[:20])
            raise Rejected(
                f"no task {task_id!r} in plan v{self.state.plan_version}; tasks: {known}"
            )
        return task

    def _status(self, task: TaskState) -> str:
        return derive_statuses({t.id: t for t in self.state.tasks})[task.id][0]

    def _require_open(self) -> None:
        if self.ended or self.closing:
            raise Rejected("the run has finished; start a new run instead")

    # -- people: requests ------------------------------------------------------------------------

    def _new_request(
        self, kind: RequestKind, task: TaskState | None, text: str, now: datetime
    ) -> HumanRequest:
        """A request about ``task``, or (None) about the whole run: task id "run"."""
        self.state.request_seq += 1
        prefix = {"question": "Q", "approval": "A", "escalation": "E"}[kind]
        request = HumanRequest(
            id=f"{prefix}-{self.state.request_seq}",
            kind=kind,
            task_id=task.id if task is not None else RUN_REQUEST,
            dispatch=task.attempt if task is not None else 0,
            text=text,
            created_at=now,
            deadline=now + timedelta(seconds=self.options.request_timeout),
        )
        self.state.requests.append(request)
        self._pending_requests.append(request)
        self.changed = True
        return request

    def request(self, request_id: str) -> HumanRequest | None:
        return next((r for r in self.state.requests if r.id == request_id), None)

    def pending_requests(self, with_review: bool = False) -> list[HumanRequest]:
        """Requests waiting for a person; ``with_review``: the plan review as one of them."""
        pending = list(self._pending_requests)
        if with_review and self.state.review == "waiting" and not self.needs_plan:
            at = (
                self.state.plan_history[-1].at if self.state.plan_history else self.state.started_at
            )
            pending.insert(
                0,
                HumanRequest(
                    id=f"R-{self.state.plan_version}",
                    kind="review",
                    task_id="plan",
                    dispatch=0,
                    # A plan exists (not needs_plan), so plan_history holds its version and ``at`` is set.
                    created_at=at or self.state.started_at,  # type: ignore[arg-type]
                    deadline=self.state.review_deadline,
                    text=f"review plan v{self.state.plan_version} ({len(self.state.plan.agents)} agents), then approve_plan with version "
                    f"{self.state.plan_version}, or replan",
                ),
            )
        return pending

    def _close_request(self, request: HumanRequest, status: RequestStatus, now: datetime) -> None:
        request.status = status
        request.answered_at = now
        if request in self._pending_requests:
            self._pending_requests.remove(request)

    def close_requests(self, why: str, now: datetime) -> None:
        """The run ends (cancelled, ended, failed): nobody need answer anything any more. Every
        pending request is withdrawn, a waiting review too, so nothing lists the run as waiting
        for a person."""
        for request in list(self._pending_requests):
            self._close_request(request, "withdrawn", now)
            request.answer = why
            task = self.task_by_id(request.task_id)
            if task is not None and task.waiting_on == request.id:
                task.waiting_on = None
                if task.last_progress and task.last_progress.startswith("waiting for "):
                    task.last_progress = f"{request.id} withdrawn: {why}"
        if self.state.review == "waiting":
            self.state.review = "none"
            self.state.review_deadline = None
            self.note_history(
                f"the review of plan v{self.state.plan_version} was withdrawn: {why}", now
            )
        self.changed = True

    def _hold(self, task: TaskState, now: datetime) -> None:
        """A task failed for good and the run holds on failure: an escalation keeps the run
        open for ``hold_on_failure`` seconds while a person decides."""
        request = self._new_request(
            "escalation",
            task,
            f"{task.id} failed: {(task.error or '')[:300]} — retry, skip, replan, or end the run",
            now,
        )
        request.hold = True
        request.deadline = now + timedelta(seconds=self.options.hold_on_failure)

    def _withdraw_holds(self, task: TaskState, why: str, now: datetime) -> None:
        """A held task was decided (retried, skipped, cancelled, replanned): its hold goes."""
        for request in list(self._pending_requests):
            if request.hold and request.task_id == task.id:
                self._close_request(request, "answered", now)
                request.answer = why

    def _withdraw(self, request_id: str | None, why: str, now: datetime) -> None:
        request = self.request(request_id) if request_id else None
        if request is not None and request.status == "pending":
            self._close_request(request, "withdrawn", now)
            request.answer = why
