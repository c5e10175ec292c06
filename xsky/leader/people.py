"""What people do to a running run — from ``starter.py``, the stock ``temporal`` CLI or the Web
UI: each intervention's handler, calling the components in the order written in it (its
validator, in xsky/leader/checks.py, has passed). Answers and tool decisions, retries, skips and
cancellations, pauses and nudges, budgets and roles, ending the run, and messages refused."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from xsky.leader.audit import AuditLog
from xsky.leader.board import TaskBoard
from xsky.leader.briefs import Briefs
from xsky.leader.budget import Budget
from xsky.leader.cast import Cast
from xsky.leader.checks import Checks
from xsky.leader.commands import RUNNING, Command, StopReason
from xsky.leader.coordinator.oversight import Oversight
from xsky.leader.coordinator.requests import RequestJudge
from xsky.leader.flow import Flow
from xsky.leader.ladder import StallLadder
from xsky.leader.plans import PlanBook
from xsky.leader.requests import RequestBook, approval_of, decision_said, person_decided
from xsky.leader.shell_readings import as_replayed
from xsky.leader.state import (
    Answer,
    AnswerRequest,
    ApprovePlanRequest,
    ApproveToolRequest,
    DefineRoleRequest,
    EndRunRequest,
    HumanRequest,
    InterventionResult,
    Nudge,
    NudgeRequest,
    PauseRequest,
    ResetTaskRequest,
    RetryTaskRequest,
    RunFacts,
    SetBudgetRequest,
    SkipTaskRequest,
    TaskRequest,
    TaskTimeoutRequest,
)
from xsky.leader.tasks import TaskState, subject_of
from xsky.plan import dag
from xsky.plan.agent_config import tool_name
from xsky.plan.models import RoleCapabilityModel
from xsky.security.permissions import run_rules_for

# Of what reading a replan's XML said, the lines its reply carries (state.REPLY_READ_MARKS).
READ_SHOWN = 5


class People:
    """Every intervention's handler."""

    def __init__(
        self,
        flow: Flow,
        run: RunFacts,
        board: TaskBoard,
        plans: PlanBook,
        cast: Cast,
        requests: RequestBook,
        briefs: Briefs,
        budget: Budget,
        ladder: StallLadder,
        audit: AuditLog,
        asks: RequestJudge,
        oversight: Oversight,
        checks: Checks,
    ) -> None:
        self.flow = flow
        self.run = run
        self.board = board
        self.plans = plans
        self.cast = cast
        self.requests = requests
        self.briefs = briefs
        self.budget = budget
        self.ladder = ladder
        self.audit = audit
        self.asks = asks
        self.oversight = oversight
        self.checks = checks
        # the workflow's patch question (LeaderCore.configure), asked only where it matters
        self.patched: Callable[[str], bool] = lambda patch_id: True

    def close_requests(self, why: str, now: datetime) -> None:
        """The run ends (cancelled, ended, failed): nobody need answer anything any more. Every
        pending request is withdrawn, a waiting review too, so nothing lists the run as waiting
        for a person."""
        for request in list(self.requests.pending):
            self.requests.close(request, "withdrawn", now)
            request.answer = why
            task = self.board.task_by_id(request.task_id)
            if task is not None and task.waiting_on == request.id:
                task.waiting_on = None
                if task.last_progress and task.last_progress.startswith("waiting for "):
                    task.last_progress = f"{request.id} withdrawn: {why}"
        self.plans.withdraw_review(why, now)
        self.flow.changed = True

    # -- interventions: replan and review -------------------------------------------------------------

    def replan_result(self, summary: str, read: list[str] | None = None) -> InterventionResult:
        """``read``: what reading the person's XML said on the way (parts of an Eko plan left
        out, repairs), a line each after the summary (the first few: the CLI shows them all)."""
        review = " — review it and approve_plan" if self.plans.reviewing else ""
        said = [f"warning: {line}" for line in (read or [])[:READ_SHOWN]]  # (each "<plan>:…")
        if read and len(read) > READ_SHOWN:
            said.append(f"… and {len(read) - READ_SHOWN} more (`starter.py validate` the file)")
        return InterventionResult(
            message="\n".join([f"plan v{self.plans.version}: {summary}{review}", *said]),
            plan_version=self.plans.version,
        )

    def approve_plan(self, req: ApprovePlanRequest, now: datetime) -> InterventionResult:
        note = self.plans.approve(req, now)
        self.flow.changed = True
        return InterventionResult(message=note, plan_version=self.plans.version)

    # -- interventions: tasks ---------------------------------------------------------------------------

    def retry(self, req: RetryTaskRequest, now: datetime) -> InterventionResult:
        """Run a failed, cancelled or escalated task again (with new text: a new plan version)."""
        task = self.checks.task(req.task_id)
        self.oversight.withdraw_goal_requests(f"withdrawn: {task.id} runs again", now)
        if req.task:
            self.plans.retext(task.agent_id, req.task, f"{task.id} retried with new task text", now)
            task.description, task.subject = req.task, subject_of(req.task)
            self.board.index(self.plans.plan)
        self.requests.withdraw(task.waiting_on, f"withdrawn: {task.id} retried", now)
        self.requests.withdraw_holds(task, "retried", now)
        self.briefs.forget_doubts(task.id)
        task.waiting_on = None
        task.error = None
        task.ended_at = None
        self.board.set_stored(task, "pending")
        self.ladder.forget(task.id)
        self.flow.changed = True
        message = f"{task.id} will run again"
        tool = tool_name(self.board.agents[task.agent_id].config)
        if req.task and tool is not None:
            # (the text is kept — the board and the plan show it — but no model reads it)
            message += (
                f" — with the same call: it runs a direct {tool} tool, which does what its "
                "<config> says, not its task text; to change the call, replan it (starter.py "
                "replan ID --xml PLAN) or fork with --plan"
            )
        return InterventionResult(message=message, plan_version=self.plans.version)

    def _end_by_person(
        self, task: TaskState, intent: StopReason, done: str, now: datetime
    ) -> list[Command]:
        """Before a person's skip or cancel: stop the running attempt, withdraw its request."""
        commands = self.board.stop(task.agent_id, intent) if task.stored in RUNNING else []
        self.requests.withdraw(task.waiting_on, f"withdrawn: {task.id} {done}", now)
        self.requests.withdraw_holds(task, done, now)
        task.waiting_on = None
        return commands

    def skip(self, req: SkipTaskRequest, now: datetime) -> tuple[InterventionResult, list[Command]]:
        task = self.checks.task(req.task_id)
        commands = self._end_by_person(task, StopReason.SKIP, "skipped", now)
        task.result = req.result
        task.result_ref = None
        self.board.finish(task, "skipped", now)
        self.flow.changed = True
        return InterventionResult(
            message=f"{task.id} skipped; its dependents get {len(req.result)} characters",
            plan_version=self.plans.version,
        ), commands

    def cancel(self, req: TaskRequest, now: datetime) -> tuple[InterventionResult, list[Command]]:
        task = self.checks.task(req.task_id)
        commands = self._end_by_person(task, StopReason.CANCEL, "cancelled", now)
        self.board.finish(task, "cancelled", now, error="cancelled by a person")
        self.flow.changed = True
        blocked = dag.descendants(self.plans.plan, task.agent_id)
        note = f"; blocked now: {', '.join('T-' + b for b in blocked[:10])}" if blocked else ""
        return InterventionResult(
            message=f"{task.id} cancelled{note}", plan_version=self.plans.version
        ), commands

    # -- interventions: answers and approvals ----------------------------------------------------------

    def answer(self, req: AnswerRequest, now: datetime) -> InterventionResult:
        """A person's answer: to an agent's question or escalation, to the leader's question
        about the goal (a replan follows), or in place of the leader's answer."""
        asked = self.requests.get(req.request_id)
        if asked is not None and asked.about == "goal":
            self.requests.close(asked, "answered", now)
            asked.by, asked.answer = "person", req.text
            self.flow.outbox.append(self.oversight.goal_answered(asked, req.text))
            self.flow.replanning = True
            return InterventionResult(
                message=f"{asked.id} answered; the plan is changed with your answer",
                plan_version=self.plans.version,
            )
        overridden = self.asks.overridable(req.request_id)
        if overridden is not None:
            said = self.asks.override(overridden, req, now)
            self.flow.changed = True
            return InterventionResult(message=said, plan_version=self.plans.version)
        request, task = self._answered(req.request_id, now)
        request.answer = req.text
        if task is not None:
            if request.kind == "question":
                self.briefs.answer(
                    task.id, Answer(request_id=request.id, question=request.text, answer=req.text)
                )
            else:  # escalation: the answer is guidance for the next attempt
                self.briefs.nudge(Nudge(task_id=task.id, message=req.text, at=now, source="person"))
                self.ladder.forget(task.id)
        return InterventionResult(
            message=f"{request.id} answered; {request.task_id} will continue",
            plan_version=self.plans.version,
        )

    def _answered(self, request_id: str, now: datetime) -> tuple[HumanRequest, TaskState | None]:
        """Mark a request answered; return it and its task if that task still waits on it."""
        request = self.requests.get(request_id)
        assert request is not None
        self.requests.close(request, "answered", now)
        self.flow.changed = True
        task = self.board.task_by_id(request.task_id)
        if task is None or task.waiting_on != request.id:
            return request, None
        self.board.set_waiting(task, None)
        return request, task

    def approve_tool(self, req: ApproveToolRequest, now: datetime) -> InterventionResult:
        """A person decides a tool request: the permission log takes it, an "allow for this
        run" adds its rules (and answers the same call another agent waits on), and the
        task's next dispatch gets the decision."""
        request = self.requests.get(req.request_id)
        assert request is not None
        alike = [
            r
            for r in self.requests.pending
            if r.kind == "approval"
            and r is not request
            and (r.tool, r.arguments) == (request.tool, request.arguments)
        ]
        said = self._decide_tool(req, now)
        if req.decision == "allow_run" and alike and self.patched("approve-run-answers-alike"):
            for other in alike:
                then = self._decide_tool(req.model_copy(update={"request_id": other.id}), now)
                said += f"; the same call of {other.task_id}: {then}"
        return InterventionResult(message=said, plan_version=self.plans.version)

    def _decide_tool(self, req: ApproveToolRequest, now: datetime) -> str:
        request, task = self._answered(req.request_id, now)
        request.decision, request.answer = req.decision, req.message
        self.audit.add(person_decided(request, req, now))
        if req.decision == "allow_run" and request.tool:
            tool, arguments = request.tool, request.arguments or {}
            rules = (
                as_replayed(lambda: run_rules_for(tool, arguments), self.patched)
                if tool == "shell"
                else run_rules_for(tool, arguments)
            )
            values = arguments.get("values") if tool == "shell" else None
            approved = (
                {k: v for k, v in values.items() if isinstance(k, str) and isinstance(v, str)}
                if isinstance(values, dict)
                else None
            )
            self.briefs.allow_for_run(rules, request.id, approved)
        if task is not None:
            self.briefs.approve(task.id, approval_of(request, req))
        direct = task is not None and tool_name(self.board.agents[task.agent_id].config) is not None
        return decision_said(request, req.decision, direct)

    # -- interventions: the run -------------------------------------------------------------------------

    def end(self, req: EndRunRequest, now: datetime) -> InterventionResult:
        """A person closes the run: nothing more runs, no request waits; it ends with the
        status its tasks have (failed when any failed)."""
        why = "the run was ended by a person" + (f": {req.reason}" if req.reason else "")
        self.close_requests(why, now)
        self.plans.note(why, now)
        self.flow.ended = why
        self.flow.ended_by_person = True
        self.flow.changed = True
        return InterventionResult(
            message=f"{why}; it finishes now", plan_version=self.plans.version
        )

    def set_budget(self, req: SetBudgetRequest, now: datetime) -> InterventionResult:
        """A person raises or lowers limits: budget escalations that no longer apply close,
        and dispatch goes on."""
        what = self.budget.set_budget(req, self.plans.version, now)
        # Running agents are bound by the new limits too (their shares are fitted; each learns
        # it before its next model call). Asked only where a task runs.
        if self.budget.running_work() and self.patched("budget-changes-bind-running-agents"):
            fitted = self.budget.refit(now)
            if fitted:
                what += f"; the running {', '.join(fitted[:10])} fitted to it"
        self.plans.note(f"a person set {what}", now)
        closed = self.budget.review_requests(now)
        self.flow.changed = True
        then = f"; {', '.join(closed)} closed: dispatch goes on" if closed else ""
        return InterventionResult(
            message=f"set {what} ({self.budget.budget_view(now).summary()}){then}",
            plan_version=self.plans.version,
        )

    # -- interventions: roles -----------------------------------------------------------------------------

    def define_role(self, req: DefineRoleRequest) -> InterventionResult:
        role = RoleCapabilityModel(**req.model_dump(by_alias=False))
        verb = "redefined" if self.cast.define(role) else "defined"
        self.flow.changed = True
        return InterventionResult(
            message=f"role {role.name} {verb}; agents named {role.name} use it from their next dispatch"
        )

    # -- signals and their twins ---------------------------------------------------------------------------

    def refuse(self, what: str, payload: str, why: str, now: datetime, task_id: str = "") -> None:
        """A refused message: counted, the last on the board, each in the permission log."""
        self.audit.refuse(what, payload, why, now, task_id)
        self.flow.changed = True

    # -- one agent at a time (the checks are Checks.pause_task …) ----------------------------------

    def pause_task(self, req: TaskRequest) -> tuple[InterventionResult, list[Command]]:
        """Hold one agent: not dispatched until resumed; a running attempt is stopped (its
        conversation is checkpointed after every model turn and tool call: it goes on from
        there when resumed)."""
        task = self.checks.task(req.task_id)
        task.held = True
        stops = self._stop_if_running(task, StopReason.PAUSE)
        said = "its attempt is stopped; " if stops else ""
        return InterventionResult(
            message=f"{task.id} paused: {said}resume_task goes on from its checkpoint",
            plan_version=self.plans.version,
        ), stops

    def resume_task(self, req: TaskRequest) -> InterventionResult:
        task = self.checks.task(req.task_id)
        task.held = False
        self.board.consider(task.agent_id)
        self.flow.changed = True
        return InterventionResult(
            message=f"{task.id} resumed: it runs again in its turn", plan_version=self.plans.version
        )

    def reset_task(self, req: ResetTaskRequest) -> tuple[InterventionResult, list[Command]]:
        """Start one agent's attempt again: from its checkpoint, or from scratch (``fresh``)."""
        task = self.checks.task(req.task_id)
        if req.fresh:  # the next dispatch, and only it, starts from scratch
            task.fresh = task.attempt + 1
        stops = self._stop_if_running(task, StopReason.RESTART)
        how = "from scratch" if req.fresh else "from its checkpoint"
        when = "now" if stops else "when it next starts"
        return InterventionResult(
            message=f"{task.id} reset: its attempt starts again {how}, {when}",
            plan_version=self.plans.version,
        ), stops

    def _stop_if_running(self, task: TaskState, reason: StopReason) -> list[Command]:
        """The task's attempt stopped, if one runs (the board changed either way)."""
        self.flow.changed = True
        return self.board.stop(task.agent_id, reason) if task.stored in RUNNING else []

    def task_timeout(self, req: TaskTimeoutRequest) -> InterventionResult:
        task = self.checks.task(req.task_id)
        task.timeout = req.seconds
        self.flow.changed = True
        running = (
            " (the attempt running now keeps its own: reset_task applies it at once)"
            if task.stored in RUNNING
            else ""
        )
        return InterventionResult(
            message=f"{task.id}: its next attempt may take {req.seconds:g}s{running}",
            plan_version=self.plans.version,
        )

    def pause(self, req: PauseRequest) -> list[Command]:
        self.run.paused = True
        self.run.pause_reason = req.reason
        self.flow.changed = True
        return self.board.stop_everything(StopReason.PAUSE) if req.cancel_running else []

    def resume(self) -> None:
        self.run.paused = False
        self.run.pause_reason = None
        self.flow.changed = True

    def pause_run(self, req: PauseRequest) -> tuple[InterventionResult, list[Command]]:
        commands = self.pause(req)
        said = (
            "paused; running agents stop and resume later"
            if req.cancel_running
            else "paused: running agents finish, no new ones start"
        )
        return InterventionResult(message=said, plan_version=self.plans.version), commands

    def resume_run(self) -> InterventionResult:
        was = self.run.paused
        self.resume()
        return InterventionResult(
            message="resumed" if was else "the run was not paused; it goes on",
            plan_version=self.plans.version,
        )

    def nudge(self, req: NudgeRequest, now: datetime) -> bool:
        task = self.board.task_by_id(req.task_id)
        if task is None or not req.message.strip():
            return False
        self.briefs.nudge(Nudge(task_id=task.id, message=req.message, at=now, source="person"))
        if self.plans.options.messages == "interrupt" and task.stored in RUNNING:
            # The step in progress is stopped; the attempt starts again from its checkpoint and
            # reads the nudge before anything else (RunOptions.messages).
            self.flow.outbox += self.board.stop(task.agent_id, StopReason.RESTART)
        self.flow.changed = True
        return True

    def nudge_task(self, req: NudgeRequest, now: datetime) -> InterventionResult:
        task = self.checks.task(req.task_id)
        interrupted = self.plans.options.messages == "interrupt" and task.stored in RUNNING
        self.nudge(req, now)
        return InterventionResult(
            message=f"nudge for {task.id} kept: "
            + (
                "its step was stopped; it starts again from its checkpoint and reads it first"
                if interrupted
                else "its agent reads it at its next step"
            ),
            plan_version=self.plans.version,
        )
