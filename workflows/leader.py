"""LeaderWorkflow: the XSky executor and LingXiao's leader as one durable Temporal workflow.

Scheduling — a DAG scheduler, not a level-by-level tree walk: an agent is dispatched the
moment its own dependencies have completed, in plan order, at most ``max_parallel`` at a
time, each as the ``run_agent`` activity on its kind's task queue. A failed agent does not
stop independent ones; its dependents show as blocked.

Supervision — updates with validators (a rejected request changes nothing): replan,
approve_plan, retry_task, skip_task, cancel_task, answer, approve_tool. Signals: pause,
resume, nudge, report_progress. Queries: task_board, plan, plan_history, results,
pending_requests, nudges. Human requests are workflow state, never a blocked activity.
A stall ladder (nudge → restart → replan → escalate) runs on progress reports against
one durable timer. Long runs continue as new, carrying the whole state.

Deterministic by construction: ``workflow.now()`` for time, lists (plan order) for every
iteration, all I/O in activities.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from workflows.failures import describe_failure

with workflow.unsafe.imports_passed_through():
    from xsky import dag
    from xsky.agent_config import activity_settings, stall_windows, tool_name
    from xsky.artifacts import marker
    from xsky.board import TaskState, TaskView, board_markdown, derive_status, derive_statuses, subject_of
    from xsky.errors import PlanError, Problem, WorkflowValidationError
    from xsky.kinds import AgentInfo
    from xsky.leader_state import (
        Answer,
        AnswerRequest,
        ApprovePlanRequest,
        ApproveToolRequest,
        AuditEntry,
        DefineRoleRequest,
        HumanRequest,
        InterventionResult,
        LeaderState,
        Nudge,
        NudgeRequest,
        PauseRequest,
        PlanVersion,
        ReplanRequest,
        ResumeRequest,
        RetryTaskRequest,
        SkipTaskRequest,
        TaskRequest,
        ToolApproval,
    )
    from xsky.models import RoleCapabilityModel, Workflow, WorkflowAgent
    from xsky.planning import PlanRequest, PlanResult, problems_text
    from xsky.permissions import run_rules_for
    from xsky.replan import merge_plan, new_task
    from xsky.roles import BUILTIN_ROLES, effective_roles, plan_role_problems, role_problems
    from xsky.tool_registry import EXEC_OR_NETWORK_TOOLS
    from xsky.runs import AgentInput, AgentOutcome, AgentReport, DecisionRecord, ProgressReport, RunInput, RunResult
    from xsky.stall import ESCALATED, seconds_to_next_step, stall_message, stall_step
    from xsky.variables import RenderError, render, render_command, render_config
    from xsky.xml import parse_workflow, workflow_to_xml

# Agent kinds with their own task queue; every other name (llm and roles) goes to "llm".
QUEUE_KINDS = ("browser", "file", "shell")
# The run's result carries inline results up to this many bytes in all; beyond it, refs only.
INLINE_RESULT_BUDGET = 512 * 1024
# Results shown to the planner are cut to this many characters each.
PLANNER_RESULT_CHARS = 2000
SATISFIED = ("completed", "skipped")
# The permission audit log keeps this many entries (older ones are counted, not kept).
AUDIT_KEEP = 1000
# Why a running attempt is being stopped, weakest first; a stronger reason wins.
INTENT_RANK = {"pause": 0, "restart": 1, "changed": 2, "abandon": 3, "removed": 4, "skip": 5, "cancel": 6, "run-cancel": 7}
RUNNING = ("dispatched", "in_progress")


class _Results(Mapping[str, str]):
    """Completed agents' results for rendering: inline text, or a marker for stored ones."""

    def __init__(self, tasks: Mapping[str, TaskState]):
        self._tasks = tasks
        self.issued: list[str] = []  # artifact URIs handed out as markers (the activity expands only these)

    def __getitem__(self, agent_id: str) -> str:
        task = self._tasks[agent_id]
        if task.stored not in SATISFIED:
            raise KeyError(agent_id)
        if task.result is not None:
            return task.result
        if task.result_ref is not None:
            self.issued.append(task.result_ref.uri)
            return marker(task.result_ref)
        return ""

    def __contains__(self, agent_id: object) -> bool:
        return isinstance(agent_id, str) and agent_id in self._tasks and self._tasks[agent_id].stored in SATISFIED

    def __iter__(self) -> Iterator[str]:
        return (k for k, t in self._tasks.items() if t.stored in SATISFIED)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _reject(message: str) -> None:
    """Refuse an update in its validator: nothing is written, the caller gets ``message``."""
    raise ValueError(message)


@workflow.defn(name="LeaderWorkflow")
class LeaderWorkflow:
    @workflow.init
    def __init__(self, inp: RunInput) -> None:
        self._input = inp
        self._options = inp.options
        self._run_id = workflow.info().workflow_id
        now = workflow.now()
        # A prompt-only run starts with an empty plan; run() asks the planner for one.
        self._needs_plan = inp.state is None and inp.workflow is None
        first = inp.workflow or Workflow(
            name=" ".join((inp.task_prompt or "").split())[:80], task_id=inp.task_id or self._run_id, task_prompt=inp.task_prompt
        )
        self._variables = {**first.variables, **inp.variables}
        if inp.state is not None:
            self._s = inp.state
        else:
            self._s = LeaderState(
                plan=first,
                plan_history=[] if self._needs_plan else [PlanVersion(version=1, xml=workflow_to_xml(first), reason="initial plan", at=now)],
                tasks=[new_task(a, self._run_id) for a in first.agents],
                started_at=now,
                review="waiting" if inp.options.review else "none",
                review_deadline=now + timedelta(seconds=inp.options.review_timeout) if inp.options.review else None,
            )
        self._index()
        self._running: dict[str, asyncio.Task[None]] = {}
        self._running_dispatch: dict[str, int] = {}  # which dispatch each running task is
        self._intents: dict[str, str] = {}  # agent id → why its running attempt is being stopped
        self._changed = False
        self._replanning = False
        self._draining = False  # continue-as-new is due: start nothing new
        self._ended: str | None = None  # set when the run ends early (review timed out)
        self._closing = False  # the main loop is done; the run is about to return
        self._timer: asyncio.Task[None] | None = None
        self._timer_at: datetime | None = None
        self._timer_fired = False

    def _index(self) -> None:
        self._tasks: dict[str, TaskState] = {t.agent_id: t for t in self._s.tasks}
        self._agents: dict[str, WorkflowAgent] = {a.id: a for a in self._s.plan.agents}

    def _base_roles(self) -> dict[str, RoleCapabilityModel]:
        """The roles people gave: the run's (or built-ins) and define_role's."""
        return {**(self._input.roles or BUILTIN_ROLES), **self._s.defined_roles}

    def _roles(self) -> dict[str, RoleCapabilityModel]:
        """Roles agents may take: the people's, and the plan's <role>s as far as a plan may go
        (narrowing known roles; new roles' privileged tools asked for until the plan is approved)."""
        base = self._base_roles()
        return {**base, **effective_roles(self._s.plan.roles, base, self._s.review == "approved")}

    @property
    def _known(self) -> list[str]:
        return list(self._roles())

    def _agent_infos(self) -> list[AgentInfo]:
        return [AgentInfo(name=r.name, description=r.description) for r in self._roles().values()]

    # -- the main loop ----------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: RunInput) -> RunResult:
        if inp.permissions.mode == "bypass" and inp.state is None:
            workflow.logger.warning("run %s uses permission mode BYPASS: only deny rules are enforced", self._run_id)
        try:
            if self._needs_plan:
                await self._plan_from_prompt()
            if await self._review_gate():
                while True:
                    self._dispatch_ready()
                    if self._finished():
                        self._closing = True
                        break
                    if workflow.info().is_continue_as_new_suggested():
                        self._draining = True
                        if not self._running and not self._replanning:
                            await self._continue_as_new()
                    self._arm_timer()
                    await workflow.wait_condition(lambda: self._changed or self._timer_fired)
                    self._changed = False
                    if self._timer_fired:
                        self._timer_fired = False
                        self._timer = self._timer_at = None
                    self._check_deadlines()
                    self._publish()
        except asyncio.CancelledError:
            await self._stop_everything("run-cancel")
            self._publish()
            raise
        await workflow.wait_condition(workflow.all_handlers_finished)
        self._publish()
        return self._result()

    def _finished(self) -> bool:
        """Nothing runs and nothing can start: every task is terminal, blocked, or paused."""
        if self._ended:
            return not self._running
        if self._running or self._replanning:
            return False
        if any(r.status == "pending" for r in self._s.requests):
            return False  # a person still has to answer
        return not self._ready_ids()  # ready work while paused waits for resume

    def _ready_ids(self) -> list[str]:
        return [
            a.id
            for a in self._s.plan.agents
            if a.id not in self._running  # an earlier attempt is still winding down
            and self._tasks[a.id].stored == "pending"
            and self._tasks[a.id].waiting_on is None
            and all(self._tasks[d].stored in SATISFIED for d in a.depends if d in self._tasks)
        ]

    def _dispatch_ready(self) -> None:
        if self._s.paused or self._replanning or self._draining or self._ended or self._s.review == "waiting":
            return
        room = self._options.max_parallel - len(self._running)
        for agent_id in self._ready_ids():
            if room <= 0:
                return
            self._start(self._agents[agent_id], self._tasks[agent_id])
            room -= 1

    async def _plan_from_prompt(self) -> None:
        """A run started from a sentence: the planner activity makes plan v1."""
        self._replanning = True
        self._publish()
        try:
            result: PlanResult = await workflow.execute_activity(
                "plan_workflow",
                PlanRequest(
                    task_id=self._s.plan.task_id, task_prompt=self._input.task_prompt, agents=self._agent_infos(),
                    variables=sorted(self._variables), context_keys=sorted(self._input.context),
                ),
                result_type=PlanResult,
                task_queue=f"{workflow.info().task_queue}-llm",
                start_to_close_timeout=timedelta(minutes=10),
                heartbeat_timeout=timedelta(minutes=2),
                retry_policy=RetryPolicy(maximum_attempts=3, non_retryable_error_types=["PlanError", "LLMRequestError", "LLMConfigError"]),
                summary=f"planner · plan: {(self._input.task_prompt or '')[:80]}",
            )
        except ActivityError as e:
            raise ApplicationError(f"planning failed: {describe_failure(e)}", type="PlanError", non_retryable=True) from None
        finally:
            self._replanning = False
        try:
            wf = self._checked(result.workflow)
        except PlanError as e:
            raise ApplicationError(f"the planner's plan cannot run:\n{problems_text(e)}", type="PlanError", non_retryable=True) from None
        self._s.plan = wf
        self._s.tasks = [new_task(a, self._run_id) for a in wf.agents]
        self._s.plan_history = [PlanVersion(version=1, xml=workflow_to_xml(wf), reason=f"planned by {result.provider} from the request", at=workflow.now())]
        self._variables = {**wf.variables, **self._input.variables}
        self._index()
        self._needs_plan = False

    async def _review_gate(self) -> bool:
        """Wait for approve_plan when the run asked for review. False if the run ends here."""
        if self._s.review != "waiting":
            return True
        self._publish()
        assert self._s.review_deadline is not None
        remaining = max(0.0, (self._s.review_deadline - workflow.now()).total_seconds())
        try:
            await workflow.wait_condition(lambda: self._s.review != "waiting", timeout=remaining, timeout_summary="plan review")
        except asyncio.TimeoutError:
            if self._options.review_timeout_action == "approve":
                self._s.review = "approved"
                self._note_history(f"approved automatically: nobody reviewed the plan within {self._options.review_timeout:g}s")
                return True
            self._ended = f"cancelled: nobody approved the plan within {self._options.review_timeout:g}s"
            self._s.review = "none"
            for task in self._s.tasks:
                if not task.terminal:
                    self._finish(task, "cancelled", error="the plan was never approved")
            return False
        return True

    # -- dispatching and outcomes --------------------------------------------------------------

    def _start(self, agent: WorkflowAgent, task: TaskState) -> None:
        task.stored = "dispatched"
        task.attempt += 1
        task.dispatched_at = workflow.now()
        task.started_at = task.ended_at = task.last_progress_at = None
        task.error = None
        self._running_dispatch[agent.id] = task.attempt
        self._running[agent.id] = asyncio.create_task(self._execute(agent, task.attempt))

    def _agent_input(self, agent: WorkflowAgent, task: TaskState, rendered: WorkflowAgent, dispatch: int, heartbeat: float,
                     markers: list[str]) -> AgentInput:
        windows = stall_windows(agent.config, self._options.stall)
        return AgentInput(
            run_id=self._run_id,
            execution_id=workflow.info().first_execution_run_id,
            task_id=task.id,
            agent=rendered,
            plan_version=self._s.plan_version,
            dispatch=dispatch,
            workspace=self._options.workspace,
            artifact_threshold=self._options.artifact_threshold,
            heartbeat_interval=max(0.2, min(10.0, heartbeat / 3)),
            progress_interval=max(0.2, min(5.0, windows.nudge_after / 3)),
            answers=list(self._s.answers.get(task.id, [])),
            approvals=self._take_approvals(task),
            nudges=[n.message for n in self._s.nudges if n.task_id == task.id],
            role=self._roles().get(agent.name),
            permissions=self._input.permissions.model_copy(
                update={"run_rules": list(dict.fromkeys(self._input.permissions.run_rules + self._s.run_rules))}),
            goal=self._s.plan.task_prompt or self._s.plan.name or None,
            markers=markers,
        )

    def _take_approvals(self, task: TaskState) -> list[ToolApproval]:
        """A person's tool decisions go to the next dispatch only: "allow once" means once."""
        return self._s.approvals.pop(task.id, [])

    async def _execute(self, agent: WorkflowAgent, dispatch: int) -> None:
        task = self._tasks[agent.id]
        try:
            try:
                rendered, markers = self._render(agent)
                settings = activity_settings(agent.config, self._options)
            except (RenderError, ValueError) as e:
                self._finish(task, "failed", error=f"cannot start: {e}")
                return
            kind = agent.name if agent.name in QUEUE_KINDS else "llm"
            try:
                outcome = await workflow.execute_activity(
                    "run_agent",
                    self._agent_input(agent, task, rendered, dispatch, settings.heartbeat, markers),
                    result_type=AgentOutcome,
                    task_queue=f"{workflow.info().task_queue}-{kind}",
                    start_to_close_timeout=timedelta(seconds=settings.start_to_close),
                    heartbeat_timeout=timedelta(seconds=settings.heartbeat),
                    retry_policy=RetryPolicy(
                        maximum_attempts=settings.retry.maximum_attempts,
                        initial_interval=timedelta(seconds=settings.retry.initial_interval),
                        backoff_coefficient=settings.retry.backoff_coefficient,
                        maximum_interval=timedelta(seconds=settings.retry.maximum_interval),
                        non_retryable_error_types=["AgentConfigError", "ArtifactMissing"],
                    ),
                    cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                    activity_id=f"{task.id}-v{self._s.plan_version}-d{dispatch}",
                    summary=f"{task.id} · {agent.name} · {subject_of(agent.task, 70)}",
                )
            except (ActivityError, asyncio.CancelledError) as e:
                intent = self._intents.pop(agent.id, None)
                if dispatch != task.attempt or self._tasks.get(agent.id) is not task:
                    return  # an earlier dispatch, or a task a replan removed
                if isinstance(e, ActivityError):
                    self._audit_failure(task, e)
                if intent is not None:
                    self._after_stop(task, intent)
                elif isinstance(e, ActivityError):
                    self._finish(task, "failed", error=describe_failure(e))
                    self._auto_replan(f"{task.id} failed: {task.error}")
                return
            intent = self._intents.pop(agent.id, None)
            if dispatch != task.attempt or self._tasks.get(agent.id) is not task:
                return  # a late completion of an earlier dispatch: dropped
            if intent is not None and intent not in ("pause", "restart"):
                # It finished just as it was stopped: the decision already made stands (and
                # a result of a definition the plan has since changed is not kept).
                self._audit(task, outcome.decisions)
                self._after_stop(task, intent)
                return
            self._on_outcome(task, outcome)
        finally:
            if self._running_dispatch.get(agent.id) == dispatch:
                del self._running[agent.id], self._running_dispatch[agent.id]
            self._changed = True

    def _audit(self, task: TaskState, records: list[DecisionRecord]) -> None:
        for r in records:
            self._s.audit.append(AuditEntry(at=r.at, task_id=task.id, tool=r.tool, arguments=r.arguments, effect=r.effect, reason=r.reason))
        if len(self._s.audit) > AUDIT_KEEP:
            self._s.audit_dropped += len(self._s.audit) - AUDIT_KEEP
            del self._s.audit[: len(self._s.audit) - AUDIT_KEEP]

    def _audit_failure(self, task: TaskState, err: ActivityError) -> None:
        """Decisions made before an attempt failed travel in the failure's details."""
        cause = err.cause
        if not isinstance(cause, ApplicationError):
            return
        for detail in cause.details:
            if isinstance(detail, dict) and "permissionDecisions" in detail:
                self._audit(task, [DecisionRecord.model_validate(d) for d in detail["permissionDecisions"]])

    def _on_outcome(self, task: TaskState, outcome: AgentOutcome) -> None:
        self._audit(task, outcome.decisions)
        task.tokens += outcome.tokens
        task.iterations = max(task.iterations, outcome.iterations)
        if outcome.started_at is not None and task.started_at is None:
            task.started_at = outcome.started_at
        if outcome.kind == "completed":
            task.result = outcome.result
            task.result_ref = outcome.result_ref
            task.artifacts = outcome.artifacts
            self._finish(task, "completed")
            return
        req = outcome.request
        assert req is not None, "a question or approval outcome carries its request"
        if outcome.kind == "question":
            request = self._new_request("question", task, req.question or "(no question text)")
        else:
            args = ", ".join(f"{k}={v!r}" for k, v in (req.arguments or {}).items())
            request = self._new_request("approval", task, f"{req.tool}({args[:300]})")
            request.tool, request.arguments, request.rule = req.tool, req.arguments, req.rule
        task.stored = "pending"
        task.waiting_on = request.id
        task.last_progress = f"waiting for {request.id}: {request.text[:100]}"

    def _after_stop(self, task: TaskState, intent: str) -> None:
        """A running attempt we stopped on purpose has ended; put the task where it belongs."""
        if intent in ("pause", "restart", "changed"):
            task.stored = "pending"  # runs again (from its checkpoint) when its turn comes
            task.started_at = None
        elif intent == "run-cancel":
            self._finish(task, "cancelled", error="the run was cancelled")
        # "cancel", "skip" and "abandon" set the task's state when they were decided;
        # "removed": the task left the board.

    def _finish(self, task: TaskState, status: str, *, error: str | None = None) -> None:
        task.stored = status  # type: ignore[assignment]
        task.error = error
        task.ended_at = workflow.now()
        if task.started_at is None:
            task.started_at = task.dispatched_at
        self._changed = True

    def _stop(self, agent_id: str, intent: str) -> None:
        """Ask a running attempt to stop (it ends after the activity acknowledges).

        A stronger reason is never replaced by a weaker one: a task cancelled by a person
        and then caught by a pause must stay cancelled.
        """
        running = self._running.get(agent_id)
        if running is None or running.done():
            return
        current = self._intents.get(agent_id)
        if current is None or INTENT_RANK[intent] > INTENT_RANK[current]:
            self._intents[agent_id] = intent
        running.cancel()

    async def _stop_everything(self, intent: str) -> None:
        for agent_id in list(self._running):
            self._stop(agent_id, intent)
        pending = [t for t in self._running.values() if not t.done()]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    def _render(self, agent: WorkflowAgent) -> tuple[WorkflowAgent, list[str]]:
        """The agent with its references rendered, and the artifact markers it was given."""
        results = _Results(self._tasks)
        ctx = self._input.context
        config = render_config(agent.config, results, self._variables, ctx) if agent.config else agent.config
        if (agent.config and tool_name(agent.config) == "shell" and isinstance(agent.config.get("command"), str)
                and workflow.patched("shell-quoted-values")):
            # Data is never pasted into code: values travel beside the command as shell variables
            # set before it runs (the patch's name is older than this form).
            command, values = render_command(agent.config["command"], results, self._variables, ctx)
            config = {**config, "command": command, **({"values": values} if values else {})}  # type: ignore[dict-item]
        rendered = agent.model_copy(
            update={
                "task": render(agent.task, results, self._variables, ctx),
                "input": render(agent.input, results, self._variables, ctx) if agent.input else agent.input,
                "config": config,
            }
        )
        return rendered, list(dict.fromkeys(results.issued))

    # -- people: requests -------------------------------------------------------------------

    def _new_request(self, kind: str, task: TaskState, text: str) -> HumanRequest:
        self._s.request_seq += 1
        prefix = {"question": "Q", "approval": "A", "escalation": "E"}[kind]
        now = workflow.now()
        request = HumanRequest(
            id=f"{prefix}-{self._s.request_seq}",
            kind=kind,  # type: ignore[arg-type]
            task_id=task.id,
            dispatch=task.attempt,
            text=text,
            created_at=now,
            deadline=now + timedelta(seconds=self._options.request_timeout),
        )
        self._s.requests.append(request)
        self._changed = True
        return request

    def _request(self, request_id: str) -> HumanRequest | None:
        return next((r for r in self._s.requests if r.id == request_id), None)

    def _withdraw(self, request_id: str | None, why: str) -> None:
        request = self._request(request_id) if request_id else None
        if request is not None and request.status == "pending":
            request.status = "withdrawn"
            request.answer = why
            request.answered_at = workflow.now()

    def _check_deadlines(self) -> None:
        now = workflow.now()
        for request in self._s.requests:
            if request.status == "pending" and request.deadline is not None and now >= request.deadline:
                request.status = "expired"
                task = self._task_by_id(request.task_id)
                if task is not None and task.waiting_on == request.id:
                    task.waiting_on = None
                    self._finish(task, "failed", error=f"no answer to {request.id} within {self._options.request_timeout:g}s")
        self._check_stalls(now)

    # -- the stall ladder ---------------------------------------------------------------------

    def _idle(self, task: TaskState, now: datetime) -> float:
        since = task.last_progress_at or task.started_at or task.dispatched_at or now
        return (now - since).total_seconds()

    def _check_stalls(self, now: datetime) -> None:
        for agent_id in list(self._running):
            task = self._tasks.get(agent_id)
            if task is None or task.stored not in RUNNING or agent_id in self._intents:
                continue
            windows = stall_windows(self._agents[agent_id].config, self._options.stall)
            level = self._s.stall_levels.get(task.id, 0)
            idle = self._idle(task, now)
            action = stall_step(level, idle, windows, self._s.auto_replans < self._options.max_auto_replans)
            if action is None:
                continue
            message = stall_message(action, idle)
            workflow.logger.info("stall ladder: %s %s (%s)", task.id, action, message)
            if action == "nudge":
                self._s.nudges.append(Nudge(task_id=task.id, message=message, at=now, source="stall"))
                self._s.stall_levels[task.id] = 1
                task.last_progress = f"nudged: {message[:80]}"
            elif action == "restart":
                self._s.stall_levels[task.id] = 2
                task.last_progress = message
                self._stop(agent_id, "restart")
            elif action == "replan":
                # Failed now, so the replan resets it; the stuck attempt is abandoned.
                self._stop(agent_id, "abandon")
                self._finish(task, "failed", error=f"stalled: {message}")
                self._auto_replan(f"{task.id} stalled ({message})", force=True)
            else:
                self._s.stall_levels[task.id] = ESCALATED
                request = self._new_request("escalation", task, f"{task.id} is stuck — {message}. Answer with guidance to "
                                            "run it again with it, or use retry_task, skip_task or cancel_task.")
                task.waiting_on = request.id
                task.last_progress = f"escalated as {request.id}"
                task.stored = "pending"  # blocked on the request from now; the stuck attempt is abandoned
                self._stop(agent_id, "abandon")
            self._changed = True

    def _next_deadline(self, now: datetime) -> datetime | None:
        due: list[datetime] = [r.deadline for r in self._s.requests if r.status == "pending" and r.deadline is not None]
        for agent_id in self._running:
            task = self._tasks.get(agent_id)
            if task is None or task.stored not in RUNNING:
                continue
            windows = stall_windows(self._agents[agent_id].config, self._options.stall)
            wait = seconds_to_next_step(self._s.stall_levels.get(task.id, 0), self._idle(task, now), windows)
            if wait is not None:
                due.append(now + timedelta(seconds=wait))
        return min(due) if due else None

    def _arm_timer(self) -> None:
        """One durable timer for the earliest deadline; re-armed only when it must be earlier."""
        now = workflow.now()
        at = self._next_deadline(now)
        if at is None or (self._timer_at is not None and self._timer_at <= at):
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = at
        self._timer = asyncio.create_task(self._sleep_until(at))

    async def _sleep_until(self, at: datetime) -> None:
        try:
            await workflow.sleep(max(0.001, (at - workflow.now()).total_seconds()), summary="stall / request deadline")
        except asyncio.CancelledError:
            return
        if self._timer_at == at:
            self._timer_fired = True

    # -- replanning -------------------------------------------------------------------------

    def _auto_replan(self, reason: str, force: bool = False) -> None:
        """Replan automatically (failures, stalls) while the run's budget lasts."""
        if self._replanning or self._s.auto_replans >= self._options.max_auto_replans:
            return
        if not force and self._options.max_auto_replans == 0:
            return
        self._s.auto_replans += 1
        self._replanning = True
        asyncio.create_task(self._replan_in_background(reason))

    async def _replan_in_background(self, reason: str) -> None:
        try:
            wf = await self._call_planner(None, reason)
            risky = self._privileged_changes(wf)
            self._apply_plan(wf, f"automatic replan {self._s.auto_replans}/{self._options.max_auto_replans}: {reason}")
            if risky and workflow.patched("replan-privileged-review"):
                # Nobody asked for these: a model did. Shell, Python or network in new hands waits for a person.
                self._s.review = "waiting"
                self._note_history(f"the automatic replan gives agents {', '.join(risky)} shell, Python or network tools: "
                                   f"waiting for approve_plan (version {self._s.plan_version})")
        except (ActivityError, PlanError, ValueError) as e:
            workflow.logger.warning("automatic replan failed: %s", e)
            self._note_history(f"automatic replan failed ({reason}): {e}")
        finally:
            self._replanning = False
            self._changed = True

    def _planner_xml(self) -> str:
        """The current plan with statuses and (cut) results, as the planner should see it."""
        status_map = {"completed": "done", "skipped": "done", "failed": "error", "cancelled": "error",
                      "dispatched": "running", "in_progress": "running"}
        agents = []
        for agent in self._s.plan.agents:
            task = self._tasks[agent.id]
            result = task.result if task.result is not None else (task.result_ref.preview if task.result_ref else None)
            if task.error:
                result = f"ERROR: {task.error}"
            if result is not None and len(result) > PLANNER_RESULT_CHARS:
                result = result[:PLANNER_RESULT_CHARS] + " …[cut]"
            agents.append(agent.model_copy(update={"status": status_map.get(task.stored, "init"), "result": result}))
        return workflow_to_xml(self._s.plan.model_copy(update={"agents": agents}))

    async def _call_planner(self, modification: str | None, reason: str) -> Workflow:
        result: PlanResult = await workflow.execute_activity(
            "plan_workflow",
            PlanRequest(
                task_id=self._s.plan.task_id,
                current_xml=self._planner_xml(),
                modification=modification,
                reason=reason,
                agents=self._agent_infos(),
                variables=sorted(self._variables),
                context_keys=sorted(self._input.context),
            ),
            result_type=PlanResult,
            task_queue=f"{workflow.info().task_queue}-llm",
            start_to_close_timeout=timedelta(minutes=10),
            heartbeat_timeout=timedelta(minutes=2),
            retry_policy=RetryPolicy(maximum_attempts=3, non_retryable_error_types=["PlanError"]),
            summary=f"planner · replan v{self._s.plan_version + 1}: {reason[:80]}",
        )
        # Check again here: the plan must fit this run (its variables, its agents).
        return self._checked(result.workflow)

    def _apply_plan(self, wf: Workflow, reason: str) -> str:
        change = merge_plan(self._s.plan, self._tasks, wf, self._run_id)
        for agent_id in change.stop:
            self._stop(agent_id, "changed" if agent_id in change.restarted else "removed")
        for request_id in change.withdrawn_requests:
            self._withdraw(request_id, "withdrawn: the plan changed")
        for task in change.removed:
            self._s.stall_levels.pop(task.id, None)
        # Removed tasks are kept for the record, without results (continue-as-new carries them).
        self._s.removed_tasks += [t.model_copy(update={"result": None}) for t in change.removed]
        self._s.plan = wf
        self._s.tasks = change.tasks
        self._s.plan_version += 1
        for task in change.tasks:  # a replan starts every ladder over
            self._s.stall_levels.pop(task.id, None)
        summary = change.summary()
        self._s.plan_history.append(
            PlanVersion(version=self._s.plan_version, xml=workflow_to_xml(wf), reason=f"{reason} — {summary}", at=workflow.now())
        )
        self._index()
        self._changed = True
        return summary

    def _privileged_changes(self, wf: Workflow) -> list[str]:
        """Agents of ``wf`` that are new or changed and can run commands or reach the network."""
        base = self._base_roles()
        roles = {**base, **effective_roles(wf.roles, base, approved=False)}
        risky = []
        for agent in wf.agents:
            old = self._agents.get(agent.id)
            if old is not None and old.name == agent.name and old.config == agent.config:
                continue
            role = roles.get(agent.name)
            tools = set(role.allowed_tools + role.requested_tools) if role else set()
            if tools & EXEC_OR_NETWORK_TOOLS or (agent.config and tool_name(agent.config) in EXEC_OR_NETWORK_TOOLS):
                risky.append(agent.id)
        return risky

    def _checked(self, wf: Workflow) -> Workflow:
        """A new plan, if it fits this run (its agents, variables, context) and widens no role."""
        dag.ensure_valid(wf, self._known, variables=self._variables, context_keys=list(self._input.context))
        widening = plan_role_problems(wf.roles, self._base_roles())
        if widening:
            raise WorkflowValidationError([Problem(p) for p in widening])
        return wf

    def _note_history(self, note: str) -> None:
        """A note about the current version (no XML copy: the version's own entry holds it)."""
        version = self._s.plan_history[-1].version if self._s.plan_history else self._s.plan_version
        self._s.plan_history.append(PlanVersion(version=version, xml="", reason=note, at=workflow.now()))

    # -- continue-as-new --------------------------------------------------------------------

    async def _continue_as_new(self) -> None:
        await workflow.wait_condition(workflow.all_handlers_finished)
        self._s.continued += 1
        workflow.continue_as_new(
            RunInput(
                workflow=self._s.plan,
                variables=self._input.variables,
                context=self._input.context,
                options=self._options,
                roles=self._input.roles,
                permissions=self._input.permissions,
                task_prompt=self._input.task_prompt,
                state=self._s,
            )
        )

    # -- lookups for handlers ------------------------------------------------------------------

    def _task_by_id(self, task_id: str) -> TaskState | None:
        """A task by ``T-3`` or ``3``."""
        agent_id = task_id[2:] if task_id.startswith("T-") else task_id
        return self._tasks.get(agent_id)

    def _require_task(self, task_id: str) -> TaskState:
        task = self._task_by_id(task_id)
        if task is None:
            known = ", ".join(t.id for t in self._s.tasks[:20])
            _reject(f"no task {task_id!r} in plan v{self._s.plan_version}; tasks: {known}")
        assert task is not None
        return task

    def _status(self, task: TaskState) -> str:
        return derive_status(task, {t.id: t for t in self._s.tasks})

    def _require_open(self) -> None:
        if self._ended or self._closing:
            _reject("the run has finished; start a new run instead")

    # -- updates ------------------------------------------------------------------------------

    @workflow.update(description="Change the plan: {prompt} for the planner, or {xml} replacing it. Completed agents keep their results.")
    async def replan(self, req: ReplanRequest) -> InterventionResult:
        if self._replanning:  # two replans accepted in one activation: the second one fails
            raise ApplicationError("a replan is already in progress; wait for it to finish", type="Busy")
        self._replanning = True
        try:
            if req.xml is not None and req.xml.strip():
                wf = self._checked(parse_workflow(req.xml))
                reason = "replaced by a person"
            else:
                try:
                    wf = await self._call_planner(req.prompt, f"a person asked: {req.prompt}")
                except ActivityError as e:
                    raise ApplicationError(f"the planner could not replan: {describe_failure(e)}", type="PlanError") from None
                except PlanError as e:
                    raise ApplicationError(f"the planner's plan does not fit this run:\n{problems_text(e)}", type="PlanError") from None
                reason = f"a person asked: {req.prompt}"
            summary = self._apply_plan(wf, reason)
        finally:
            self._replanning = False
            self._changed = True
        review = " — review it and approve_plan" if self._s.review == "waiting" else ""
        return InterventionResult(message=f"plan v{self._s.plan_version}: {summary}{review}", plan_version=self._s.plan_version)

    @replan.validator
    def _validate_replan(self, req: ReplanRequest) -> None:
        self._require_open()
        if self._replanning:
            _reject("a replan is already in progress; wait for it to finish")
        if (problem := req.problem()) is not None:
            _reject(problem)
        if req.xml is not None:
            try:
                self._checked(parse_workflow(req.xml))
            except PlanError as e:
                _reject(f"the new plan is not valid:\n{problems_text(e)}")

    @workflow.update(description="Approve the plan under review ({version}: the version you reviewed) so agents start.")
    def approve_plan(self, req: ApprovePlanRequest) -> InterventionResult:
        self._s.review = "approved"
        note = f"plan v{self._s.plan_version} approved" + (f": {req.comment}" if req.comment else "")
        self._note_history(note)
        self._changed = True
        return InterventionResult(message=note, plan_version=self._s.plan_version)

    @approve_plan.validator
    def _validate_approve_plan(self, req: ApprovePlanRequest) -> None:
        self._require_open()
        if self._needs_plan or not self._s.plan_history:
            _reject("the plan is still being made; look at it (query plan) once it is there, then approve it")
        if self._replanning:
            _reject("a replan is in progress; approve the plan it produces")
        if self._s.review != "waiting":
            _reject("no plan is waiting for review" + (" (it was already approved)" if self._s.review == "approved" else ""))
        if req.version is not None and req.version != self._s.plan_version:
            _reject(f"you reviewed v{req.version} but the plan is now v{self._s.plan_version}; look at it again (query plan) and approve that")

    @workflow.update(description="Run a failed, cancelled or escalated task again, optionally with new {task} text.")
    def retry_task(self, req: RetryTaskRequest) -> InterventionResult:
        task = self._require_task(req.task_id)
        if req.task:
            # Only this agent's text changes: a new plan version, nothing else reset.
            agent = self._agents[task.agent_id].model_copy(update={"task": req.task})
            self._s.plan = self._s.plan.model_copy(update={"agents": [agent if a.id == agent.id else a for a in self._s.plan.agents]})
            self._s.plan_version += 1
            self._s.plan_history.append(PlanVersion(version=self._s.plan_version, xml=workflow_to_xml(self._s.plan),
                                                    reason=f"{task.id} retried with new task text", at=workflow.now()))
            task.description, task.subject = req.task, subject_of(req.task)
            self._index()
        self._withdraw(task.waiting_on, f"withdrawn: {task.id} retried")
        task.waiting_on = None
        task.stored = "pending"
        task.error = None
        task.ended_at = None
        self._s.stall_levels.pop(task.id, None)
        self._changed = True
        return InterventionResult(message=f"{task.id} will run again", plan_version=self._s.plan_version)

    @retry_task.validator
    def _validate_retry(self, req: RetryTaskRequest) -> None:
        self._require_open()
        if self._replanning:
            _reject("a replan is in progress; retry once it is done")
        task = self._require_task(req.task_id)
        escalated = task.waiting_on is not None and (r := self._request(task.waiting_on)) is not None and r.kind == "escalation"
        if task.stored not in ("failed", "cancelled") and not escalated:
            _reject(f"{task.id} is {self._status(task)}; only failed, cancelled or escalated tasks can be retried")
        if req.task is not None and not req.task.strip():
            _reject("the new task text is empty")

    @workflow.update(description="Mark a task done without running it; {result} is what its dependents get.")
    def skip_task(self, req: SkipTaskRequest) -> InterventionResult:
        task = self._require_task(req.task_id)
        if task.stored in RUNNING:
            self._stop(task.agent_id, "skip")
        self._withdraw(task.waiting_on, f"withdrawn: {task.id} skipped")
        task.waiting_on = None
        task.result = req.result
        task.result_ref = None
        self._finish(task, "skipped")
        return InterventionResult(message=f"{task.id} skipped; its dependents get {len(req.result)} characters", plan_version=self._s.plan_version)

    @skip_task.validator
    def _validate_skip(self, req: SkipTaskRequest) -> None:
        self._require_open()
        task = self._require_task(req.task_id)
        if task.stored in SATISFIED:
            _reject(f"{task.id} is already {task.stored}")

    @workflow.update(description="Cancel one task (stopping it if it runs); its dependents stay blocked.")
    def cancel_task(self, req: TaskRequest) -> InterventionResult:
        task = self._require_task(req.task_id)
        if task.stored in RUNNING:
            self._stop(task.agent_id, "cancel")
        self._withdraw(task.waiting_on, f"withdrawn: {task.id} cancelled")
        task.waiting_on = None
        self._finish(task, "cancelled", error="cancelled by a person")
        blocked = dag.descendants(self._s.plan, task.agent_id)
        note = f"; blocked now: {', '.join('T-' + b for b in blocked[:10])}" if blocked else ""
        return InterventionResult(message=f"{task.id} cancelled{note}", plan_version=self._s.plan_version)

    @cancel_task.validator
    def _validate_cancel(self, req: TaskRequest) -> None:
        self._require_open()
        task = self._require_task(req.task_id)
        if task.terminal:
            _reject(f"{task.id} is already {task.stored}")

    @workflow.update(description="Answer a pending question ({requestId} Q-n) or escalation (E-n) with {text}.")
    def answer(self, req: AnswerRequest) -> InterventionResult:
        request, task = self._answered(req.request_id)
        request.answer = req.text
        if task is not None:
            if request.kind == "question":
                self._s.answers.setdefault(task.id, []).append(Answer(request_id=request.id, question=request.text, answer=req.text))
            else:  # escalation: the answer is guidance for the next attempt
                self._s.nudges.append(Nudge(task_id=task.id, message=req.text, at=workflow.now(), source="person"))
                self._s.stall_levels.pop(task.id, None)
        return InterventionResult(message=f"{request.id} answered; {request.task_id} will continue", plan_version=self._s.plan_version)

    def _require_pending(self, request_id: str) -> HumanRequest:
        self._require_open()
        request = self._request(request_id)
        if request is None:
            pending = ", ".join(r.id for r in self._s.requests if r.status == "pending") or "none"
            _reject(f"no request {request_id!r}; pending requests: {pending}")
        assert request is not None
        if request.status != "pending":
            _reject(f"{request.id} is already {request.status}")
        return request

    def _answered(self, request_id: str) -> tuple[HumanRequest, TaskState | None]:
        """Mark a request answered; return it and its task if that task still waits on it."""
        request = self._request(request_id)
        assert request is not None
        request.status = "answered"
        request.answered_at = workflow.now()
        self._changed = True
        task = self._task_by_id(request.task_id)
        if task is None or task.waiting_on != request.id:
            return request, None
        task.waiting_on = None
        return request, task

    @answer.validator
    def _validate_answer(self, req: AnswerRequest) -> None:
        request = self._require_pending(req.request_id)
        if request.kind == "approval":
            _reject(f"{request.id} asks to approve a tool call; answer it with approve_tool")
        if not req.text.strip():
            _reject("the answer is empty")

    @workflow.update(description="Decide a tool approval ({requestId} A-n): allow_once, allow_run (this run) or deny.")
    def approve_tool(self, req: ApproveToolRequest) -> InterventionResult:
        request, task = self._answered(req.request_id)
        request.decision = req.decision
        request.answer = req.message
        self._s.audit.append(AuditEntry(
            at=workflow.now(), task_id=request.task_id, tool=request.tool or "", arguments=request.text,
            effect="deny" if req.decision == "deny" else "allow",
            reason=f"{req.decision} by a person" + (f": {req.message}" if req.message else ""), by="person", request_id=request.id,
        ))
        if req.decision == "allow_run" and request.tool:
            for rule in run_rules_for(request.tool, request.arguments or {}):
                if rule not in self._s.run_rules:
                    self._s.run_rules.append(rule)
        if task is not None:
            self._s.approvals.setdefault(task.id, []).append(
                ToolApproval(request_id=request.id, tool=request.tool or "", arguments=request.arguments or {},
                             decision=req.decision, message=req.message)
            )
        return InterventionResult(message=f"{request.id}: {req.decision}; {request.task_id} will continue", plan_version=self._s.plan_version)

    @approve_tool.validator
    def _validate_approve_tool(self, req: ApproveToolRequest) -> None:
        request = self._require_pending(req.request_id)
        if request.kind != "approval":
            _reject(f"{request.id} is a {request.kind}, not a tool approval; use answer")

    @workflow.update(description="Define (or redefine) a role for this run: name, description, systemPrompt, allowedTools, …")
    def define_role(self, req: DefineRoleRequest) -> InterventionResult:
        role = RoleCapabilityModel(**req.model_dump(by_alias=False))
        existed = role.name in self._roles()
        self._s.defined_roles[role.name] = role
        self._changed = True
        verb = "redefined" if existed else "defined"
        return InterventionResult(message=f"role {role.name} {verb}; agents named {role.name} use it from their next dispatch")

    @define_role.validator
    def _validate_define_role(self, req: DefineRoleRequest) -> None:
        self._require_open()
        problems = role_problems(req)
        if problems:
            _reject("; ".join(problems))
        try:
            RoleCapabilityModel(**req.model_dump(by_alias=False))
        except ValueError as e:  # pydantic's ValidationError: say it here, not in the handler
            _reject(f"role {req.name}: {' '.join(str(e).split())[:300]}")
        busy = [t.id for t in self._s.tasks if t.assigned_agent == req.name and t.stored in RUNNING]
        if busy:
            _reject(f"role {req.name} is in use by running {', '.join(busy)}; wait for them to finish, or cancel them first")

    # -- signals ------------------------------------------------------------------------------

    @workflow.signal(description="Stop dispatching new agents; {cancelRunning}: also stop running ones (they resume later).")
    def pause(self, req: PauseRequest) -> None:
        self._s.paused = True
        self._s.pause_reason = req.reason
        if req.cancel_running:
            for agent_id in list(self._running):
                self._stop(agent_id, "pause")
        self._changed = True

    @workflow.signal(description="Dispatch again after a pause.")
    def resume(self, req: ResumeRequest) -> None:
        self._s.paused = False
        self._s.pause_reason = None
        self._changed = True

    @workflow.signal(description="A message for one agent ({taskId}, {message}), delivered at its next step.")
    def nudge(self, req: NudgeRequest) -> None:
        task = self._task_by_id(req.task_id)
        if task is None or not req.message.strip():
            workflow.logger.warning("nudge ignored: no task %s or an empty message", req.task_id)
            return
        self._s.nudges.append(Nudge(task_id=task.id, message=req.message, at=workflow.now(), source="person"))
        self._changed = True

    @workflow.signal(description="Sent by running agents: alive and moving (message, iteration, tokens).")
    def report_progress(self, report: ProgressReport) -> None:
        task = self._task_by_id(report.task_id)
        if task is None or report.dispatch != task.attempt or task.stored not in RUNNING:
            return  # a report from an earlier dispatch, or about a finished task
        now = workflow.now()
        if task.stored == "dispatched":
            task.stored = "in_progress"
            task.started_at = task.started_at or now
        if report.progress:
            task.last_progress_at = now
            task.last_progress = report.message or task.last_progress
            if self._s.stall_levels.get(task.id, 0) < ESCALATED:
                self._s.stall_levels.pop(task.id, None)  # progress starts the ladder over
        task.activity_attempt = report.activity_attempt
        task.iterations = max(task.iterations, report.iteration)
        task.tokens = max(task.tokens, report.tokens)
        self._changed = True

    # -- queries ------------------------------------------------------------------------------

    @workflow.query(description="Every task of the run: status, attempts, timings, result or error.")
    def task_board(self) -> list[TaskView]:
        derived = derive_statuses({t.id: t for t in self._s.tasks})
        now = workflow.now()
        return [TaskView.of(t, *derived[t.id], now) for t in self._s.tasks]

    @workflow.query(description="The current plan as workflow XML, with statuses and results.")
    def plan(self) -> str:
        return self._planner_xml()

    @workflow.query(description="Every plan version: its XML and why it changed.")
    def plan_history(self) -> list[PlanVersion]:
        return list(self._s.plan_history)

    @workflow.query(description="Results by agent id: status, inline text or artifact reference, error.")
    def results(self) -> dict[str, AgentReport]:
        return {r.id: r for r in self._reports(budget=INLINE_RESULT_BUDGET)}

    @workflow.query(description="Questions, tool approvals and escalations waiting for a person.")
    def pending_requests(self) -> list[HumanRequest]:
        return [r for r in self._s.requests if r.status == "pending"]

    @workflow.query(description="Every permission decision so far: tool, call, allow/ask/deny, the rule or role that decided, who.")
    def permission_log(self) -> list[AuditEntry]:
        return list(self._s.audit)

    @workflow.query(description="Nudges for one task ({taskId}), oldest first: running agents read these.")
    def nudges(self, req: TaskRequest) -> list[str]:
        task = self._task_by_id(req.task_id)
        return [n.message for n in self._s.nudges if task is not None and n.task_id == task.id]

    # -- what people see ------------------------------------------------------------------------

    def _publish(self) -> None:
        title = f"{self._s.plan.name or self._run_id} · plan v{self._s.plan_version}"
        notes = []
        if self._s.review == "waiting":
            notes.append(f"⏸ **waiting for plan review** — approve_plan (version {self._s.plan_version}) or replan")
        if self._s.paused:
            notes.append("⏸ **paused**" + (f": {self._s.pause_reason}" if self._s.pause_reason else "") + " — signal resume")
        for r in self._s.requests:
            if r.status == "pending":
                notes.append(f"❓ **{r.id}** ({r.kind}, {r.task_id}): {' '.join(r.text.split())[:160]}")
        if self._replanning:
            notes.append("✎ replanning…")
        if any(a.tool == "sandbox-off" for a in self._s.audit[-50:]):
            notes.append("⚠ **OS sandbox OFF** on a worker (security.sandbox: off): commands ran unconfined")
        if self._input.permissions.mode != "default":
            warn = " — only deny rules are enforced" if self._input.permissions.mode == "bypass" else ""
            notes.append(f"🔒 permission mode **{self._input.permissions.mode}**{warn}")
        workflow.set_current_details(board_markdown(title, self._s.tasks, workflow.now(), "\n\n".join(notes)))

    def _reports(self, budget: int) -> list[AgentReport]:
        derived = derive_statuses({t.id: t for t in self._s.tasks})
        reports = []
        for task in self._s.tasks:
            inline = task.result
            if inline is not None:
                size = len(inline.encode("utf-8"))
                if size > budget and task.result_ref is not None:
                    inline = None  # the run's result must stay well under the payload limit
                else:
                    budget -= size
            reports.append(
                AgentReport(
                    id=task.agent_id,
                    task_id=task.id,
                    name=task.assigned_agent,
                    status=derived[task.id][0],
                    result=inline,
                    result_ref=task.result_ref,
                    error=task.error or derived[task.id][1],
                    attempts=task.attempt,
                    started_at=task.started_at,
                    ended_at=task.ended_at,
                    artifacts=task.artifacts,
                )
            )
        return reports

    def _result(self) -> RunResult:
        reports = self._reports(INLINE_RESULT_BUDGET)
        counts: dict[str, list[str]] = {}
        for r in reports:
            counts.setdefault(r.status, []).append(r.task_id)
        done = len(counts.get("completed", [])) + len(counts.get("skipped", []))
        status = "completed" if done == len(reports) else ("cancelled" if self._ended else "failed")
        parts = [f"{done} of {len(reports)} agents completed"]
        for name in ("failed", "blocked", "cancelled"):
            if counts.get(name):
                parts.append(f"{len(counts[name])} {name} ({', '.join(counts[name][:8])})")
        if self._ended:
            parts.insert(0, self._ended)
        return RunResult(
            workflow_id=self._run_id,
            name=self._s.plan.name,
            status=status,
            summary="; ".join(parts),
            agents=reports,
            plan_version=self._s.plan_version,
            started_at=self._s.started_at,
            ended_at=workflow.now(),
            permission_log=self._s.audit[-200:],
        )
