"""Interventions: each update's validator (``check_*``, which raises :class:`Rejected` and
changes nothing) and its handler, and the signals."""

from __future__ import annotations

from datetime import datetime

from xsky.errors import PlanError
from xsky.leader.commands import RUNNING, SATISFIED, Command, Rejected, StopReason
from xsky.leader.ladder import StallLadder
from xsky.leader.limits import (
    ANSWER_CHARS,
    REPLAN_PROMPT_CHARS,
    ROLE_TEXT_CHARS,
    SKIP_RESULT_CHARS,
    over,
)
from xsky.leader.state import (
    Answer,
    AnswerRequest,
    ApprovePlanRequest,
    ApproveToolRequest,
    AuditEntry,
    DefineRoleRequest,
    EndRunRequest,
    HumanRequest,
    InterventionResult,
    Nudge,
    NudgeRequest,
    PauseRequest,
    PlanVersion,
    ReplanRequest,
    RetryTaskRequest,
    SkipTaskRequest,
    TaskRequest,
    ToolApproval,
)
from xsky.leader.tasks import TaskState, subject_of
from xsky.plan import dag
from xsky.plan.agent_config import tool_name
from xsky.plan.models import RoleCapabilityModel
from xsky.plan.planning import problems_text
from xsky.plan.xml import parse_workflow, workflow_to_xml
from xsky.security.permissions import ApprovedRule, run_rules_for
from xsky.security.roles import role_problems


class Interventions(StallLadder):
    """What people (and the stock ``temporal`` CLI) can do to a running run."""

    # -- interventions: replan and review ---------------------------------------------------------

    def check_replan(self, req: ReplanRequest) -> None:
        self._require_open()
        if self.replanning:
            raise Rejected("a replan is already in progress; wait for it to finish")
        if (problem := req.problem()) is not None:
            raise Rejected(problem)
        if req.prompt is not None and (
            long := over(
                "replan prompt",
                req.prompt,
                REPLAN_PROMPT_CHARS,
                "say what to change in fewer words, or send the whole new plan as xml",
            )
        ):
            raise Rejected(long)
        if req.xml is not None:
            try:
                self.checked(parse_workflow(req.xml))
            except PlanError as e:
                raise Rejected(f"the new plan is not valid:\n{problems_text(e)}") from None

    def replan_result(self, summary: str) -> InterventionResult:
        review = " — review it and approve_plan" if self.state.review == "waiting" else ""
        return InterventionResult(
            message=f"plan v{self.state.plan_version}: {summary}{review}",
            plan_version=self.state.plan_version,
        )

    def check_approve_plan(self, req: ApprovePlanRequest) -> None:
        self._require_open()
        if self.needs_plan or not self.state.plan_history:
            raise Rejected(
                "the plan is still being made; look at it (the plan query) once it is there, then approve it"
            )
        if self.replanning:
            raise Rejected("a replan is in progress; approve the plan it produces")
        if self.state.review != "waiting":
            raise Rejected(
                "no plan is waiting for review"
                + (" (it was already approved)" if self.state.review == "approved" else "")
            )
        if req.version is not None and req.version != self.state.plan_version:
            raise Rejected(
                f"you reviewed v{req.version} but the plan is now v{self.state.plan_version}; look at it again (the plan query) and approve that"
            )

    def approve_plan(self, req: ApprovePlanRequest, now: datetime) -> InterventionResult:
        self.state.review = "approved"
        note = f"plan v{self.state.plan_version} approved" + (
            f": {req.comment}" if req.comment else ""
        )
        self.note_history(note, now)
        self.changed = True
        return InterventionResult(message=note, plan_version=self.state.plan_version)

    # -- interventions: tasks ----------------------------------------------------------------------

    def check_retry(self, req: RetryTaskRequest) -> None:
        self._require_open()
        if self.replanning:
            raise Rejected("a replan is in progress; retry once it is done")
        task = self._require_task(req.task_id)
        escalated = (
            task.waiting_on is not None
            and (r := self.request(task.waiting_on)) is not None
            and r.kind == "escalation"
        )
        if task.stored not in ("failed", "cancelled") and not escalated:
            raise Rejected(
                f"{task.id} is {self._status(task)}; only failed, cancelled or escalated tasks can be retried"
            )
        if req.task is not None and not req.task.strip():
            raise Rejected("the new task text is empty")

    def retry(self, req: RetryTaskRequest, now: datetime) -> InterventionResult:
        task = self._require_task(req.task_id)
        if req.task:
            # Only this agent's text changes: a new plan version, nothing else reset.
            agent = self.agents[task.agent_id].model_copy(update={"task": req.task})
            self.state.plan = self.state.plan.model_copy(
                update={
                    "agents": [agent if a.id == agent.id else a for a in self.state.plan.agents]
                }
            )
            self.state.plan_version += 1
            self.state.plan_history.append(
                PlanVersion(
                    version=self.state.plan_version,
                    xml=workflow_to_xml(self.state.plan),
                    reason=f"{task.id} retried with new task text",
                    at=now,
                )
            )
            task.description, task.subject = req.task, subject_of(req.task)
            self._index()
        self._withdraw(task.waiting_on, f"withdrawn: {task.id} retried", now)
        self._withdraw_holds(task, "retried", now)
        task.waiting_on = None
        task.error = None
        task.ended_at = None
        self._set_stored(task, "pending")
        self.state.stall_levels.pop(task.id, None)
        self.changed = True
        return InterventionResult(
            message=f"{task.id} will run again", plan_version=self.state.plan_version
        )

    def _end_by_person(
        self, task: TaskState, intent: StopReason, done: str, now: datetime
    ) -> list[Command]:
        """Before a person's skip or cancel: stop the running attempt, withdraw its request."""
        commands = self._stop(task.agent_id, intent) if task.stored in RUNNING else []
        self._withdraw(task.waiting_on, f"withdrawn: {task.id} {done}", now)
        self._withdraw_holds(task, done, now)
        task.waiting_on = None
        return commands

    def check_skip(self, req: SkipTaskRequest) -> None:
        self._require_open()
        task = self._require_task(req.task_id)
        if task.stored in SATISFIED:
            raise Rejected(f"{task.id} is already {task.stored}")
        long = over(
            "result",
            req.result,
            SKIP_RESULT_CHARS,
            "write it to a file in the run's workspace and give its path as the result",
        )
        if long:
            raise Rejected(long)

    def skip(self, req: SkipTaskRequest, now: datetime) -> tuple[InterventionResult, list[Command]]:
        task = self._require_task(req.task_id)
        commands = self._end_by_person(task, StopReason.SKIP, "skipped", now)
        task.result = req.result
        task.result_ref = None
        self._finish(task, "skipped", now)
        return InterventionResult(
            message=f"{task.id} skipped; its dependents get {len(req.result)} characters",
            plan_version=self.state.plan_version,
        ), commands

    def check_cancel(self, req: TaskRequest) -> None:
        self._require_open()
        task = self._require_task(req.task_id)
        if task.terminal:
            raise Rejected(f"{task.id} is already {task.stored}")

    def cancel(self, req: TaskRequest, now: datetime) -> tuple[InterventionResult, list[Command]]:
        task = self._require_task(req.task_id)
        commands = self._end_by_person(task, StopReason.CANCEL, "cancelled", now)
        self._finish(task, "cancelled", now, error="cancelled by a person")
        blocked = dag.descendants(self.state.plan, task.agent_id)
        note = f"; blocked now: {', '.join('T-' + b for b in blocked[:10])}" if blocked else ""
        return InterventionResult(
            message=f"{task.id} cancelled{note}", plan_version=self.state.plan_version
        ), commands

    # -- interventions: answers and approvals -------------------------------------------------------

    def _require_pending(self, request_id: str) -> HumanRequest:
        self._require_open()
        request = self.request(request_id)
        if request is None and request_id.startswith("R-") and self.state.review == "waiting":
            raise Rejected(
                f"{request_id} is the plan review: approve it with approve_plan (version {self.state.plan_version}), or replan"
            )
        if request is None:
            pending = ", ".join(r.id for r in self._pending_requests) or "none"
            raise Rejected(f"no request {request_id!r}; pending requests: {pending}")
        if request.status != "pending":
            raise Rejected(f"{request.id} is already {request.status}")
        return request

    def _answered(self, request_id: str, now: datetime) -> tuple[HumanRequest, TaskState | None]:
        """Mark a request answered; return it and its task if that task still waits on it."""
        request = self.request(request_id)
        assert request is not None
        self._close_request(request, "answered", now)
        self.changed = True
        task = self.task_by_id(request.task_id)
        if task is None or task.waiting_on != request.id:
            return request, None
        self._set_waiting(task, None)
        return request, task

    def check_answer(self, req: AnswerRequest) -> None:
        request = self._require_pending(req.request_id)
        if request.hold:
            raise Rejected(
                f"{request.id} holds the run after {request.task_id} failed: retry_task, skip_task "
                f"or replan decide it, or end_run ends the run"
            )
        if request.kind == "approval":
            raise Rejected(
                f"{request.id} asks to approve a tool call; decide it with the approve_tool update "
                f"(request {request.id})"
            )
        if request.about == "budget":
            raise Rejected(
                f"{request.id} is about the budget: {request.text.split('; ', 1)[-1]}, or use "
                "the set_budget update"
            )
        if not req.text.strip():
            raise Rejected("the answer is empty")
        long = over(
            "answer",
            req.text,
            ANSWER_CHARS,
            "put long material in a file in the run's workspace and answer with its path",
        )
        if long:
            raise Rejected(long)

    def answer(self, req: AnswerRequest, now: datetime) -> InterventionResult:
        request, task = self._answered(req.request_id, now)
        request.answer = req.text
        if task is not None:
            if request.kind == "question":
                self.state.answers.setdefault(task.id, []).append(
                    Answer(request_id=request.id, question=request.text, answer=req.text)
                )
            else:  # escalation: the answer is guidance for the next attempt
                self._add_nudge(Nudge(task_id=task.id, message=req.text, at=now, source="person"))
                self.state.stall_levels.pop(task.id, None)
        return InterventionResult(
            message=f"{request.id} answered; {request.task_id} will continue",
            plan_version=self.state.plan_version,
        )

    def check_approve_tool(self, req: ApproveToolRequest) -> None:
        request = self._require_pending(req.request_id)
        if request.kind != "approval":
            raise Rejected(f"{request.id} is a {request.kind}, not a tool approval; use answer")

    def approve_tool(self, req: ApproveToolRequest, now: datetime) -> InterventionResult:
        request, task = self._answered(req.request_id, now)
        request.decision = req.decision
        request.answer = req.message
        self.state.audit.append(
            AuditEntry(
                at=now,
                task_id=request.task_id,
                tool=request.tool or "",
                arguments=request.text,
                effect="deny" if req.decision == "deny" else "allow",
                reason=f"{req.decision} by a person" + (f": {req.message}" if req.message else ""),
                by="person",
                request_id=request.id,
            )
        )
        if req.decision == "allow_run" and request.tool:
            kept = {a.rule for a in self.state.approved_rules}
            for rule in run_rules_for(request.tool, request.arguments or {}):
                if rule not in kept:
                    kept.add(rule)
                    self.state.approved_rules.append(ApprovedRule(rule=rule, request_id=request.id))
        if task is not None:
            self.state.approvals.setdefault(task.id, []).append(
                ToolApproval(
                    request_id=request.id,
                    tool=request.tool or "",
                    arguments=request.arguments or {},
                    decision=req.decision,
                    message=req.message,
                )
            )
        if req.decision != "deny":
            then = f"{request.task_id} runs again and makes the call"
        elif task is not None and tool_name(self.agents[task.agent_id].config) is not None:
            # a direct tool agent has only this one call: refused, it has nothing left to do
            then = f"{request.task_id} fails: its one tool call was denied (retry or skip it)"
        else:
            then = f"{request.task_id} runs again and is told the call was denied"
        return InterventionResult(
            message=f"{request.id}: {req.decision}; {then}",
            plan_version=self.state.plan_version,
        )

    # -- interventions: the run ------------------------------------------------------------------

    def check_end(self, req: EndRunRequest) -> None:
        self._require_open()
        if self.active:
            running = ", ".join(self.tasks[a].id for a in list(self.active)[:10])
            raise Rejected(
                f"agents are still running ({running}); wait for them, or cancel the run instead"
            )
        if self.replanning:
            raise Rejected("a replan is in progress; end the run once it is done")

    def end(self, req: EndRunRequest, now: datetime) -> InterventionResult:
        """A person closes the run: nothing more runs, no request waits; it ends with the
        status its tasks have (failed when any failed)."""
        why = "the run was ended by a person" + (f": {req.reason}" if req.reason else "")
        self.close_requests(why, now)
        self.note_history(why, now)
        self.ended = why
        self.ended_by_person = True
        self.changed = True
        return InterventionResult(
            message=f"{why}; it finishes now", plan_version=self.state.plan_version
        )

    # -- interventions: roles --------------------------------------------------------------------

    def check_define_role(self, req: DefineRoleRequest) -> None:
        self._require_open()
        problems = role_problems(req)
        problems += [
            p
            for what, text in (
                ("description", req.description),
                ("system prompt", req.system_prompt),
            )
            if (p := over(f"role's {what}", text, ROLE_TEXT_CHARS, "shorten it"))
        ]
        if problems:
            raise Rejected("; ".join(problems))
        try:
            RoleCapabilityModel(**req.model_dump(by_alias=False))
        except ValueError as e:  # pydantic's ValidationError: say it here, not in the handler
            raise Rejected(f"role {req.name}: {' '.join(str(e).split())[:300]}") from None
        busy = [
            t.id for t in self.state.tasks if t.assigned_agent == req.name and t.stored in RUNNING
        ]
        if busy:
            raise Rejected(
                f"role {req.name} is in use by running {', '.join(busy)}; wait for them to finish, or cancel them first"
            )

    def define_role(self, req: DefineRoleRequest) -> InterventionResult:
        role = RoleCapabilityModel(**req.model_dump(by_alias=False))
        existed = role.name in self.roles()
        self.state.defined_roles[role.name] = role
        self.changed = True
        verb = "redefined" if existed else "defined"
        return InterventionResult(
            message=f"role {role.name} {verb}; agents named {role.name} use it from their next dispatch"
        )

    # -- signals ---------------------------------------------------------------------------------

    def pause(self, req: PauseRequest) -> list[Command]:
        self.state.paused = True
        self.state.pause_reason = req.reason
        self.changed = True
        return self.stop_everything(StopReason.PAUSE) if req.cancel_running else []

    def resume(self) -> None:
        self.state.paused = False
        self.state.pause_reason = None
        self.changed = True

    def nudge(self, req: NudgeRequest, now: datetime) -> bool:
        task = self.task_by_id(req.task_id)
        if task is None or not req.message.strip():
            return False
        self._add_nudge(Nudge(task_id=task.id, message=req.message, at=now, source="person"))
        self.changed = True
        return True
