"""LeaderWorkflow: the Temporal shell around :class:`xsky.leader_core.LeaderCore`.

The core decides — which agents start, what a finished attempt means, what every
intervention does; this shell turns Temporal events into core calls and the core's
commands into activities, cancellations, timers, update answers and the Web UI's board.

Scheduling is a DAG, not level by level: an agent is dispatched the moment its own
dependencies have completed, in plan order, at most ``max_parallel`` at a time, each as the
``run_agent`` activity on its kind's task queue. Updates have validators (a rejected request
changes nothing); people's requests are workflow state, never a blocked activity; one
durable timer serves the stall ladder and request deadlines; long runs continue as new.

Deterministic by construction: ``workflow.now()`` for time, lists for every iteration,
all I/O in activities.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError, TimeoutType

from workflows.failures import describe_failure

with workflow.unsafe.imports_passed_through():
    from xsky.artifacts import PART_CHARS, BlobPart, BlobPartRequest, BlobRef, blob_ref, split_text
    from xsky.board import board_markdown, subject_of
    from xsky.errors import PlanError
    from xsky.leader_core import AttemptFailure, CallPlanner, Command, LeaderCore, Rejected, StartAgent, StopAgent
    from xsky.leader_state import (
        AnswerRequest,
        ApprovePlanRequest,
        ApproveToolRequest,
        AuditEntry,
        BoardPage,
        DefineRoleRequest,
        HumanRequest,
        InterventionResult,
        LeaderState,
        NudgeRequest,
        PageRequest,
        PauseRequest,
        PlanVersion,
        ReplanRequest,
        ResumeRequest,
        RetryTaskRequest,
        SkipTaskRequest,
        TaskRequest,
    )
    from xsky.models import Workflow
    from xsky.planning import PlanRequest, PlanResult, problems_text
    from xsky.runs import AgentOutcome, DecisionRecord, ProgressReport, ResultsPage, RunInput, RunResult
    from xsky.variables import RenderError
    from xsky.xml import parse_workflow


# Blob parts in flight at once (each ≤ PART_CHARS): well under gRPC's 4 MB per workflow task.
BLOB_WAVE = 2
# The leader's own activities (blob parts), on its task queue.
BLOB_ACTIVITY: dict = {"start_to_close_timeout": timedelta(seconds=60), "retry_policy": RetryPolicy(maximum_attempts=5)}
# A board over INLINE_AGENTS tasks is published at most every this many seconds (workflow time).
PUBLISH_EVERY = 5.0


def _reject(message: str) -> None:
    """Refuse an update in its validator: nothing is written, the caller gets ``message``."""
    raise ValueError(message)




@workflow.defn(name="LeaderWorkflow")
class LeaderWorkflow:
    @workflow.init
    def __init__(self, inp: RunInput) -> None:
        self._input = inp
        # A run whose plan or state is in the artifact store gets its core once run() read it.
        self._loaded: LeaderCore | None = None
        if inp.state_ref is None and inp.plan_ref is None:
            self._loaded = LeaderCore(inp, workflow.info().workflow_id, workflow.now())
        self._early: list[Callable[[], None]] = []  # signals that came while the state was read
        self._attempts: dict[str, asyncio.Task[None]] = {}  # agent id → its running attempt
        self._timer: asyncio.Task[None] | None = None
        self._timer_at: datetime | None = None
        self._timer_fired = False
        self._published_at: datetime | None = None
        self._searchable: set[str] = set()  # xsky's search attributes the server has (none on old runs)

    @property
    def _core(self) -> LeaderCore:
        if self._loaded is None:
            raise ApplicationError("the run is reading its state from the artifact store (it continued as new or its plan "
                                   "is large); ask again in a moment", type="Loading")
        return self._loaded

    def _validated(self, check: Callable[[], None]) -> None:
        """Run a core check in a validator: its refusal becomes the update's rejection. While
        the state is being read there is nothing to check against: the handler checks later."""
        if self._loaded is None:
            return
        try:
            check()
        except Rejected as e:
            _reject(str(e))

    async def _ready(self, check: Callable[[], None]) -> LeaderCore:
        """Update handlers: an update that came while the state was being read waits for it
        (a person should not have to retry because the run happened to continue as new)."""
        if self._loaded is None:
            await workflow.wait_condition(lambda: self._loaded is not None)
            try:
                check()
            except Rejected as e:
                raise ApplicationError(str(e), type="Rejected", non_retryable=True) from None
        return self._core

    def _when_ready(self, signal: Callable[[], None]) -> None:
        if self._loaded is None:
            self._early.append(signal)
        else:
            signal()

    async def _load_state(self, inp: RunInput) -> None:
        run_id = workflow.info().workflow_id
        if inp.state_ref is not None:
            state = LeaderState.model_validate_json(await self._load(inp.state_ref))
            self._loaded = LeaderCore(inp.model_copy(update={"state": state, "state_ref": None}), run_id, workflow.now())
        else:
            assert inp.plan_ref is not None
            try:
                wf = parse_workflow(await self._load(inp.plan_ref))
            except PlanError as e:
                raise ApplicationError(f"the stored plan is not valid:\n{problems_text(e)}", type="PlanError", non_retryable=True) from None
            self._loaded = LeaderCore(inp.model_copy(update={"workflow": wf, "plan_ref": None}), run_id, workflow.now())
        for signal in self._early:
            signal()
        self._early.clear()

    # -- blobs: text larger than a payload, one part per activity ---------------------------------

    async def _save(self, name: str, text: str) -> BlobRef:
        ref = blob_ref(workflow.info().workflow_id, name, text)
        parts = split_text(text)
        # A few parts at a time: one workflow task must stay under gRPC's 4 MB.
        for at in range(0, len(parts), BLOB_WAVE):
            await asyncio.gather(*(workflow.execute_activity(
                "leader_put", BlobPart(ref=ref, index=i, text=parts[i]), **BLOB_ACTIVITY, summary=f"store {name} part {i + 1}/{ref.parts}")
                for i in range(at, min(at + BLOB_WAVE, len(parts)))))
        return ref

    async def _load(self, ref: BlobRef) -> str:
        parts: list[str] = []
        for at in range(0, ref.parts, BLOB_WAVE):
            parts += await asyncio.gather(*(workflow.execute_activity(
                "leader_get", BlobPartRequest(ref=ref, index=i), result_type=str, **BLOB_ACTIVITY,
                summary=f"read {ref.name} part {i + 1}/{ref.parts}") for i in range(at, min(at + BLOB_WAVE, ref.parts))))
        text = "".join(parts)
        if hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() != ref.sha256:
            raise ApplicationError(f"the stored {ref.name} does not match its digest; the artifact store was changed",
                                   type="ArtifactMissing", non_retryable=True)
        return text

    # -- the main loop ----------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: RunInput) -> RunResult:
        if self._loaded is None:
            await self._load_state(inp)
        core = self._core
        if workflow.patched("search-attributes"):
            try:
                self._searchable = set(await workflow.execute_activity(
                    "leader_search_attributes", result_type=list[str], start_to_close_timeout=timedelta(seconds=30),
                    retry_policy=RetryPolicy(maximum_attempts=2), summary="which search attributes the server has"))
            except ActivityError as e:  # an older worker, or no permission to ask: run without them
                workflow.logger.warning("search attributes off for this run: %s", describe_failure(e))
        if inp.permissions.mode == "bypass" and inp.state is None:
            workflow.logger.warning("run %s uses permission mode BYPASS: only deny rules are enforced", core.run_id)
        try:
            if core.needs_plan:
                await self._plan_from_prompt()
            if await self._review_gate():
                while True:
                    self._apply(core.dispatch(workflow.now()))
                    if core.finished():
                        core.closing = True
                        break
                    if workflow.info().is_continue_as_new_suggested():
                        core.draining = True
                        if not core.active and not core.replanning:
                            await self._continue_as_new()
                    self._arm_timer()
                    await workflow.wait_condition(lambda: core.changed or self._timer_fired)
                    core.changed = False
                    if self._timer_fired:
                        self._timer_fired = False
                        self._timer = self._timer_at = None
                    self._apply(core.tick(workflow.now()))
                    self._offload_history()
                    self._publish()
        except asyncio.CancelledError:
            self._apply(core.stop_everything("run-cancel"))
            pending = [t for t in self._attempts.values() if not t.done()]
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            self._publish(force=True)
            self._upsert(final="cancelled")
            raise
        await workflow.wait_condition(workflow.all_handlers_finished)
        self._publish(force=True)
        result = core.result(workflow.now())
        if core.large() and workflow.patched("results-by-reference"):
            result.results_ref = await self._save("results", core.reports_jsonl())
        self._upsert(final=result.status)
        if result.status != "completed" and workflow.patched("outcome-is-status"):
            # Temporal's status is the run's outcome (Web UI, `temporal workflow list`, its
            # filters); the RunResult travels in the failure, still readable (cli/outcome.py).
            kind = "RunCancelled" if result.status == "cancelled" else "RunFailed"
            raise ApplicationError(f"{result.status}: {result.summary}", result, type=kind, non_retryable=True)
        return result

    async def _continue_as_new(self) -> None:
        """Hand the run to a fresh history: the state by reference, so its size never matters."""
        core = self._core
        await workflow.wait_condition(workflow.all_handlers_finished)
        if not workflow.patched("state-by-reference"):
            workflow.continue_as_new(core.continue_input())
        snapshot = core.snapshot()  # results by reference; the plan once, inside the state
        if len(snapshot) <= core.options.inline_limit:
            state = LeaderState.model_validate_json(snapshot)
            workflow.continue_as_new(core.continue_input().model_copy(update={"workflow": None, "state": state}))
        ref = await self._save(f"state-{core.s.continued + 1}", snapshot)
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(core.continue_input().model_copy(update={"workflow": None, "state": None, "state_ref": ref}))

    def _apply(self, commands: list[Command]) -> None:
        """Carry out the core's commands, in the order it gave them."""
        for command in commands:
            if isinstance(command, StartAgent):
                self._attempts[command.agent_id] = asyncio.create_task(self._execute(command.agent_id, command.dispatch))
            elif isinstance(command, StopAgent):
                attempt = self._attempts.get(command.agent_id)
                if attempt is not None and not attempt.done():
                    attempt.cancel()
            elif isinstance(command, CallPlanner):
                asyncio.create_task(self._replan_in_background(command.reason))
        for line in self._core.log:
            workflow.logger.info(line)
        self._core.log.clear()

    async def _plan_from_prompt(self) -> None:
        """A run started from a sentence: the planner activity makes plan v1."""
        core = self._core
        core.replanning = True
        self._publish()
        try:
            result: PlanResult = await workflow.execute_activity(
                "plan_workflow",
                PlanRequest(
                    task_id=core.s.plan.task_id, task_prompt=self._input.task_prompt, agents=core.agent_infos(),
                    variables=sorted(core.variables), context_keys=sorted(self._input.context),
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
            core.replanning = False
        try:
            wf = core.checked(result.workflow)
        except PlanError as e:
            raise ApplicationError(f"the planner's plan cannot run:\n{problems_text(e)}", type="PlanError", non_retryable=True) from None
        core.set_first_plan(wf, result.provider, workflow.now())

    async def _review_gate(self) -> bool:
        """Wait for approve_plan when the run asked for review. False if the run ends here."""
        core = self._core
        if core.s.review != "waiting":
            return True
        self._publish()
        assert core.s.review_deadline is not None
        remaining = max(0.0, (core.s.review_deadline - workflow.now()).total_seconds())
        try:
            await workflow.wait_condition(lambda: core.s.review != "waiting", timeout=remaining, timeout_summary="plan review")
        except asyncio.TimeoutError:
            return core.review_timed_out(workflow.now())
        return True

    # -- one attempt ----------------------------------------------------------------------------

    async def _execute(self, agent_id: str, dispatch: int) -> None:
        core = self._core
        task = core.tasks[agent_id]
        try:
            try:
                # Data is never pasted into code: a shell command's values travel beside it
                # (the patch's name is older than this form).
                beside = core.templated_command(agent_id) and workflow.patched("shell-quoted-values")
                given = core.wants_context(agent_id) and workflow.patched("deps-as-context")
                rendered, markers = core.render(agent_id, beside, given)
                settings = core.settings_for(agent_id)
            except (RenderError, ValueError) as e:
                core.cannot_start(agent_id, str(e), workflow.now())
                return
            agent = core.agents[agent_id]
            try:
                outcome = await workflow.execute_activity(
                    "run_agent",
                    core.agent_input(agent_id, rendered, dispatch, settings.heartbeat, markers, workflow.info().first_execution_run_id,
                                     settings.retry.maximum_attempts),
                    result_type=AgentOutcome,
                    task_queue=f"{workflow.info().task_queue}-{core.queue_kind(agent_id)}",
                    start_to_close_timeout=timedelta(seconds=settings.start_to_close),
                    heartbeat_timeout=timedelta(seconds=settings.heartbeat),
                    retry_policy=RetryPolicy(
                        # errors spend maximumAttempts (the activity counts them); lost workers the rest
                        maximum_attempts=settings.retry.maximum_attempts + core.options.lost_worker_retries,
                        initial_interval=timedelta(seconds=settings.retry.initial_interval),
                        backoff_coefficient=settings.retry.backoff_coefficient,
                        maximum_interval=timedelta(seconds=settings.retry.maximum_interval),
                        non_retryable_error_types=["AgentConfigError", "ArtifactMissing"],
                    ),
                    cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                    activity_id=f"{task.id}-v{core.s.plan_version}-d{dispatch}",
                    summary=f"{task.id} · {agent.name} · {subject_of(agent.task, 70)}",
                )
            except (ActivityError, asyncio.CancelledError) as e:
                failure = _failure(e) if isinstance(e, ActivityError) else None
                self._apply(core.attempt_failed(agent_id, task, dispatch, failure, workflow.now()))
                return
            core.attempt_succeeded(agent_id, task, dispatch, outcome, workflow.now())
        finally:
            if core.active.get(agent_id) == dispatch:
                del self._attempts[agent_id]
            core.attempt_ended(agent_id, dispatch)

    def _offload_history(self) -> None:
        """Plan versions too large for a payload go to the artifact store (queries and the
        continued state then carry their reference)."""
        for index, version in enumerate(self._core.s.plan_history):
            if len(version.xml) > PART_CHARS and version.xml_ref is None and workflow.patched("history-by-reference"):
                version.xml_ref = blob_ref(workflow.info().workflow_id, f"plan-v{version.version}-{index}", version.xml)
                asyncio.create_task(self._store_version(version, version.xml))

    async def _store_version(self, version: PlanVersion, xml: str) -> None:
        await self._save(version.xml_ref.name, xml)  # type: ignore[union-attr]
        version.xml = ""

    # -- the one timer --------------------------------------------------------------------------

    def _arm_timer(self) -> None:
        """One durable timer for the earliest deadline; re-armed only when it must be earlier."""
        at = self._core.next_deadline(workflow.now())
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

    # -- replanning -----------------------------------------------------------------------------

    async def _replan_in_background(self, reason: str) -> None:
        core = self._core
        try:
            wf = await self._call_planner(None, reason)
            risky = core.privileged_changes(wf)
            _, stops = core.apply_plan(wf, core.auto_replan_label(reason), workflow.now())
            self._apply(stops)
            if risky and workflow.patched("replan-privileged-review"):
                core.require_review(risky, workflow.now())
        except (ActivityError, PlanError, ValueError) as e:
            workflow.logger.warning("automatic replan failed: %s", e)
            core.note_history(f"automatic replan failed ({reason}): {e}", workflow.now())
        finally:
            core.replanning = False
            core.changed = True

    async def _call_planner(self, modification: str | None, reason: str) -> Workflow:
        core = self._core
        result: PlanResult = await workflow.execute_activity(
            "plan_workflow",
            PlanRequest(
                task_id=core.s.plan.task_id,
                current_xml=core.planner_xml(),
                modification=modification,
                reason=reason,
                agents=core.agent_infos(),
                variables=sorted(core.variables),
                context_keys=sorted(self._input.context),
            ),
            result_type=PlanResult,
            task_queue=f"{workflow.info().task_queue}-llm",
            start_to_close_timeout=timedelta(minutes=10),
            heartbeat_timeout=timedelta(minutes=2),
            retry_policy=RetryPolicy(maximum_attempts=3, non_retryable_error_types=["PlanError"]),
            summary=f"planner · replan v{core.s.plan_version + 1}: {reason[:80]}",
        )
        # Check again here: the plan must fit this run (its variables, its agents).
        return core.checked(result.workflow)

    # -- updates ------------------------------------------------------------------------------

    @workflow.update(description="Change the plan: {prompt} for the planner, or {xml} replacing it. Completed agents keep their results.")
    async def replan(self, req: ReplanRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.check_replan(req))
        if core.replanning:  # two replans accepted in one activation: the second one fails
            raise ApplicationError("a replan is already in progress; wait for it to finish", type="Busy")
        core.replanning = True
        try:
            if req.xml is not None and req.xml.strip():
                wf = core.checked(parse_workflow(req.xml))
                reason = "replaced by a person"
            else:
                try:
                    wf = await self._call_planner(req.prompt, f"a person asked: {req.prompt}")
                except ActivityError as e:
                    raise ApplicationError(f"the planner could not replan: {describe_failure(e)}", type="PlanError") from None
                except PlanError as e:
                    raise ApplicationError(f"the planner's plan does not fit this run:\n{problems_text(e)}", type="PlanError") from None
                reason = f"a person asked: {req.prompt}"
            summary, stops = core.apply_plan(wf, reason, workflow.now())
            self._apply(stops)
        finally:
            core.replanning = False
            core.changed = True
        return core.replan_result(summary)

    @replan.validator
    def _validate_replan(self, req: ReplanRequest) -> None:
        self._validated(lambda: self._core.check_replan(req))

    @workflow.update(description="Approve the plan under review ({version}: the version you reviewed) so agents start.")
    async def approve_plan(self, req: ApprovePlanRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.check_approve_plan(req))
        return core.approve_plan(req, workflow.now())

    @approve_plan.validator
    def _validate_approve_plan(self, req: ApprovePlanRequest) -> None:
        self._validated(lambda: self._core.check_approve_plan(req))

    @workflow.update(description="Run a failed, cancelled or escalated task again, optionally with new {task} text.")
    async def retry_task(self, req: RetryTaskRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.check_retry(req))
        return core.retry(req, workflow.now())

    @retry_task.validator
    def _validate_retry(self, req: RetryTaskRequest) -> None:
        self._validated(lambda: self._core.check_retry(req))

    @workflow.update(description="Mark a task done without running it; {result} is what its dependents get.")
    async def skip_task(self, req: SkipTaskRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.check_skip(req))
        result, stops = core.skip(req, workflow.now())
        self._apply(stops)
        return result

    @skip_task.validator
    def _validate_skip(self, req: SkipTaskRequest) -> None:
        self._validated(lambda: self._core.check_skip(req))

    @workflow.update(description="Cancel one task (stopping it if it runs); its dependents stay blocked.")
    async def cancel_task(self, req: TaskRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.check_cancel(req))
        result, stops = core.cancel(req, workflow.now())
        self._apply(stops)
        return result

    @cancel_task.validator
    def _validate_cancel(self, req: TaskRequest) -> None:
        self._validated(lambda: self._core.check_cancel(req))

    @workflow.update(description="Answer a pending question ({requestId} Q-n) or escalation (E-n) with {text}.")
    async def answer(self, req: AnswerRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.check_answer(req))
        return core.answer(req, workflow.now())

    @answer.validator
    def _validate_answer(self, req: AnswerRequest) -> None:
        self._validated(lambda: self._core.check_answer(req))

    @workflow.update(description="Decide a tool approval ({requestId} A-n): allow_once, allow_run (this run) or deny.")
    async def approve_tool(self, req: ApproveToolRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.check_approve_tool(req))
        return core.approve_tool(req, workflow.now())

    @approve_tool.validator
    def _validate_approve_tool(self, req: ApproveToolRequest) -> None:
        self._validated(lambda: self._core.check_approve_tool(req))

    @workflow.update(description="Define (or redefine) a role for this run: name, description, systemPrompt, allowedTools, …")
    async def define_role(self, req: DefineRoleRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.check_define_role(req))
        return core.define_role(req)

    @define_role.validator
    def _validate_define_role(self, req: DefineRoleRequest) -> None:
        self._validated(lambda: self._core.check_define_role(req))

    # -- signals ------------------------------------------------------------------------------

    @workflow.signal(description="Stop dispatching new agents; {cancelRunning}: also stop running ones (they resume later).")
    def pause(self, req: PauseRequest) -> None:
        self._when_ready(lambda: self._apply(self._core.pause(req)))

    @workflow.signal(description="Dispatch again after a pause.")
    def resume(self, req: ResumeRequest) -> None:
        self._when_ready(lambda: self._core.resume())

    @workflow.signal(description="A message for one agent ({taskId}, {message}), delivered at its next step.")
    def nudge(self, req: NudgeRequest) -> None:
        def deliver() -> None:
            if not self._core.nudge(req, workflow.now()):
                workflow.logger.warning("nudge ignored: no task %s or an empty message", req.task_id)
        self._when_ready(deliver)

    @workflow.signal(description="Sent by running agents: alive and moving (message, iteration, tokens).")
    def report_progress(self, report: ProgressReport) -> None:
        self._when_ready(lambda: self._core.report_progress(report, workflow.now()))

    # -- queries ------------------------------------------------------------------------------

    @workflow.query(description="A page of the task board ({offset}, {limit} ≤ 2000, {status}): status, attempts, timings, "
                    "result or error, and the counts of the whole board.")
    def task_board(self, req: PageRequest | None = None) -> BoardPage:
        return self._core.board(workflow.now(), req)

    @workflow.query(description="The current plan as workflow XML, with statuses and results ({offset}, {limit}: agents per page).")
    def plan(self, req: PageRequest | None = None) -> str:
        return self._core.plan_page(req)

    @workflow.query(description="Plan versions ({offset}, {limit}): XML (or a reference for large ones) and why it changed.")
    def plan_history(self, req: PageRequest | None = None) -> list[PlanVersion]:
        return self._core.history_page(req)

    @workflow.query(description="A page of results ({offset}, {limit}, {status}): status, inline text or artifact reference, error.")
    def results(self, req: PageRequest | None = None) -> ResultsPage:
        return self._core.results_page(req)

    @workflow.query(description="Questions, tool approvals, escalations and the plan review (R-v) waiting for a person.")
    def pending_requests(self) -> list[HumanRequest]:
        return self._core.pending_requests(with_review=True)

    @workflow.query(description="Every permission decision so far: tool, call, allow/ask/deny, the rule or role that decided, who.")
    def permission_log(self) -> list[AuditEntry]:
        return list(self._core.s.audit)

    @workflow.query(description="Nudges for one task ({taskId}), oldest first: running agents read these.")
    def nudges(self, req: TaskRequest) -> list[str]:
        return self._core.nudges_for(req.task_id)

    # -- what people see ------------------------------------------------------------------------

    def _upsert(self, final: str | None = None) -> None:
        """Search attributes that changed (each upsert is a history event: changes only)."""
        values = self._core.search_values()
        if final is not None:
            values["XskyStatus"] = final
        current = workflow.info().typed_search_attributes
        updates = []
        for name, value in values.items():
            if name not in self._searchable:
                continue
            key = SearchAttributeKey.for_int(name) if isinstance(value, int) else SearchAttributeKey.for_keyword(name)
            if current.get(key) != value:  # type: ignore[call-overload]
                updates.append(key.value_set(value))  # type: ignore[arg-type]
        if updates:
            workflow.upsert_search_attributes(updates)

    def _publish(self, force: bool = False) -> None:
        """The board in the Web UI's details: a large board at most every few seconds."""
        core, now = self._core, workflow.now()
        if (not force and core.large() and self._published_at is not None
                and (now - self._published_at).total_seconds() < PUBLISH_EVERY):
            return
        self._published_at = now
        self._upsert()
        title = f"{core.s.plan.name or core.run_id} · plan v{core.s.plan_version}"
        workflow.set_current_details(board_markdown(title, core.s.tasks, now, "\n\n".join(core.notices())))


def _failure(err: ActivityError) -> AttemptFailure:
    """An attempt's failure for the core: its message, the permission decisions made before
    it and its attempt number (both travel in the details), and whether its worker was lost."""
    cause = err.cause
    details = [d for d in cause.details if isinstance(d, dict)] if isinstance(cause, ApplicationError) else []
    decisions = [DecisionRecord.model_validate(r) for d in details if "permissionDecisions" in d for r in d["permissionDecisions"]]
    attempt = max([d["attempt"] for d in details if isinstance(d.get("attempt"), int)], default=0)
    lost = isinstance(cause, TimeoutError) and cause.type == TimeoutType.HEARTBEAT
    return AttemptFailure(describe_failure(err), decisions, attempt, lost)
