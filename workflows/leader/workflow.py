"""LeaderWorkflow: the Temporal shell around :class:`xsky.leader.core.LeaderCore`.

The core decides — which agents start, what a finished attempt means, what every
intervention does; this shell turns Temporal events into core calls and the core's
commands into activities, cancellations, timers, update answers and the Web UI's board.

Scheduling is a DAG, not level by level: an agent is dispatched the moment its own
dependencies have completed, in plan order, at most ``max_parallel`` at a time, each as the
``run_agent`` activity (on the leader's queue when its worker serves every kind, else on the
kind's queue). Updates have validators (a rejected request
changes nothing); people's requests are workflow state, never a blocked activity; one
durable timer serves the stall ladder and request deadlines; long runs continue as new.
Deterministic: ``workflow.now()`` for time, lists for every iteration, I/O in activities.
"""

# Annotations stay objects here (no `from __future__ import annotations`): every run imports
# this module into its own sandbox, and the SDK reads the type hints of each handler as the
# class is made; hints written as strings were compiled and evaluated again each time.

import asyncio
from collections.abc import Callable

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from workflows.failures import describe_failure
from workflows.leader import io as leader_io
from workflows.leader import people as leader_people
from workflows.leader.attempts import Attempts
from workflows.leader.hosts import Hosts
from workflows.leader.io import save_blob
from workflows.leader.judgment import check_goal, judge_stall
from workflows.leader.metrics import LeaderMetrics
from workflows.leader.queries import LeaderQueries
from workflows.leader.signals import LeaderSignals
from workflows.patches import patched

with workflow.unsafe.imports_passed_through():
    from xsky.artifacts import PART_CHARS, STORED_PART_CHARS
    from xsky.errors import PlanError
    from xsky.gcpause import gc_paused
    from xsky.leader.core import (
        CallPlanner,
        Command,
        Consult,
        LeaderCore,
        Rejected,
        StartAgent,
        StopAgent,
        StopReason,
    )
    from xsky.leader.state import (
        AnswerRequest,
        ApprovePlanRequest,
        ApproveToolRequest,
        DefineRoleRequest,
        EndRunRequest,
        InterventionResult,
        PersonRequest,
        ReplanRequest,
        ResetTaskRequest,
        RetryTaskRequest,
        SetBudgetRequest,
        SkipTaskRequest,
        TaskRequest,
        TaskTimeoutRequest,
    )
    from xsky.plan.planning import problems_text
    from xsky.runs import RunInput, RunResult
    from xsky.security.shell_parse import load_parser


def _reject(message: str) -> None:
    """Refuse an update in its validator: nothing is written, the caller gets ``message``
    (type Rejected: it reaches people without a stack trace, client/connect.py)."""
    raise ApplicationError(message, type="Rejected", non_retryable=True)


@workflow.defn(name="LeaderWorkflow")
class LeaderWorkflow(LeaderQueries, LeaderSignals):
    @workflow.init
    def __init__(self, inp: RunInput) -> None:
        # The shell checker's parser (bashlex), which the leader uses to judge commands
        # against delegated rules: the worker loads it as it starts, but a replayer (or any
        # process that did not) would import it here inside the sandbox, where the import
        # fails — and the leader would judge the same command otherwise. Loaded as the host's.
        with workflow.unsafe.imports_passed_through():
            load_parser()
        # A state travels only by continue-as-new. One in the input of a run started afresh was
        # written by whoever started it (the stock CLI can send any input): its approvals,
        # reviews and "allow for this run" rules would pass for people's. Refused in run().
        self._forged = (
            inp.state is not None or inp.state_ref is not None
        ) and workflow.info().continued_run_id is None
        if self._forged:
            inp = inp.model_copy(update={"state": None, "state_ref": None})
        self._input = inp
        # A run whose plan or state is in the artifact store gets its core once run() read it.
        self._loaded: LeaderCore | None = None
        if inp.state_ref is None and inp.plan_ref is None:
            with gc_paused():  # a large plan's tasks: no collection while they are built
                self._loaded = LeaderCore(inp, workflow.info().workflow_id, workflow.now(), patched)
        self._early: list[Callable[[], None]] = []  # signals that came while the state was read
        self._timer = leader_io.DeadlineTimer()
        self._agents_here = False  # agents run on the leader's queue (its worker serves every kind)
        self._task_queue: str | None = None  # the execution's task queue (see _queue)
        self._payloads_by_reference = False  # its worker stores large payloads (LeaderSetup)
        self._read_size = 0  # bytes of history once a stored state was read
        self._metrics = LeaderMetrics()
        self._board = leader_io.Board(self._metrics)
        self._attempts = Attempts(
            self._metrics, self._queue, self._apply, lambda: self._agents_here
        )

    @property
    def _core(self) -> LeaderCore:
        if self._loaded is None:
            raise ApplicationError(
                "the run is reading its state from the artifact store (it continued as new or its plan "
                "is large); ask again in a moment",
                type="Loading",
            )
        return self._loaded

    def _validated(self, check: Callable[[], None], req: PersonRequest | None = None) -> None:
        """Run a core check in a validator: its refusal becomes the update's rejection. While
        the state is being read there is nothing to check against: the handler checks later.
        A request naming a field its model does not have (``req``) is refused first: decoding
        drops such a field, and the request would be taken with that field's default.
        Validators run for new updates only, never on replay: no patch is needed."""
        problem = req.unknown_problem() if req is not None else None
        if problem is not None:
            _reject(problem)
        if self._loaded is None:
            return
        try:
            check()
        except Rejected as e:
            said = str(e)
        else:
            return
        _reject(said)  # outside the except: not chained to the Rejected, which said it already

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

    def _past_budget_wait(self) -> bool:
        """patched("budget-wait-passes-free-tasks"), asked when the run's budget makes a task
        wait with more ready behind it (xsky/leader/core.py dispatch)."""
        return patched("budget-wait-passes-free-tasks")

    def _queue(self, kind: str) -> str:
        """Where an agent (or the planner) runs: the leader's own queue when its worker serves
        every kind — the server then hands the activity back with the workflow task (eager) —
        else the kind's queue, served by specialised workers."""
        if self._task_queue is None:  # (the execution's: read once, not at every attempt)
            self._task_queue = workflow.info().task_queue
        queue = self._task_queue
        return queue if self._agents_here else f"{queue}-{kind}"

    # -- the main loop ----------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: RunInput) -> RunResult:
        if self._forged:
            raise ApplicationError(
                "this run was started with a `state` in its input; a run's state is carried only by "
                "continue-as-new (start a run with a plan or a prompt)",
                type="StateRefused",
                non_retryable=True,
            )
        if self._loaded is None:
            self._loaded = await leader_io.load_core(inp)
            self._read_size = workflow.info().get_current_history_size()
            for signal in self._early:  # signals that came while the state was read, in order
                signal()
            self._early.clear()
        core = self._core
        if (given := await leader_io.setup()) is not None:
            self._board.searchable, self._agents_here = (
                set(given.search_attributes),
                given.agents_here,
            )
            self._payloads_by_reference = given.payloads_by_reference
        if given is not None and given.workspace_hosts and patched("workspace-hosts"):
            self._attempts.hosts = Hosts()  # no shared disk: the workspace on one host at a time
        leader_budget = patched("leader-budget-holds")
        programs = patched("delegation-program-forms")
        coordinating = patched("leader-coordinator")
        told = given if coordinating else None  # what the worker delegates, for the coordinator
        core.configure(
            coordinating=coordinating,
            delegated=list(told.delegate) if told is not None else [],
            denied=list(told.deny) if told is not None else [],
            worker_model=told.model if told is not None else None,
            leader_budget=leader_budget,
            delegation_programs=programs,
            growth_folded=patched("plan-growth-folded"),
            patched=patched,
        )
        if inp.permissions.mode == "bypass" and inp.state is None:
            workflow.logger.warning(
                "run %s uses permission mode BYPASS: only deny rules are enforced", core.run_id
            )
        try:
            if core.needs_plan:
                core.planner_started()
                self._board.publish(core)
                await leader_io.plan_from_prompt(core, self._queue("llm"))
            leader_people.budget_gate(core)
            if await leader_people.review_gate(core, self._board):
                while True:
                    self._apply(core.dispatch(workflow.now(), self._past_budget_wait))
                    if core.finished():
                        if await check_goal(core, self._board, self._queue("llm"), self._apply):
                            continue  # judged: a replan, a question to a person, or the end
                        core.begin_close()
                        break
                    if leader_io.time_to_continue() and leader_io.grown_since(self._read_size):
                        core.begin_drain()
                        if not core.active and not core.replanning and not core.stall_consults:
                            if (
                                why := await leader_io.continue_as_new(
                                    core, self._payloads_by_reference
                                )
                            ) is not None:
                                # Not handed on: go on here, and try again once the history
                                # has doubled.
                                workflow.logger.error("run %s goes on: %s", core.run_id, why)
                                core.drain_failed()
                                self._read_size = max(
                                    workflow.info().get_current_history_size(),
                                    leader_io.SMALL_HISTORY,
                                )
                    self._timer.arm(core.next_deadline(workflow.now()))
                    # Nothing is decided while a local activity is in flight (see settle_local).
                    await workflow.wait_condition(
                        lambda: (
                            self._attempts.locals_settled()
                            and (
                                core.changed or self._timer.fired or self._attempts.local_results()
                            )
                        )
                    )
                    self._attempts.settle_local()
                    core.take_changed()
                    self._timer.clear()
                    # a task whose rung is due but whose attempt waits for a worker: no rung
                    checked = await leader_io.attempts_checked(core)
                    self._apply(core.tick(workflow.now(), checked))
                    self._metrics.spent(core.take_settled())
                    leader_io.offload_history(core)
                    self._board.publish(core)
        except asyncio.CancelledError:
            self._apply(core.board.stop_everything(StopReason.RUN_CANCEL))
            pending = self._attempts.unfinished()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            leader_people.close_requests(core, "the run was cancelled")
            core.run_cancelled(workflow.now())
            self._board.publish(core, force=True)
            self._board.upsert(core, final="cancelled")
            raise
        await workflow.wait_condition(workflow.all_handlers_finished)
        self._metrics.spent(core.take_settled())
        leader_people.close_requests(core, core.ended or "the run ended")
        self._board.publish(core, force=True)
        # (the reports made once for the result and the stored results; the board once, told
        # apart from the board before v0.11.11 without making that one: the same commands as
        # when each was made twice, in a fraction of the time — a 30,000-agent run's last
        # tasks took 9–12 s under load, against the server's 10 s)
        result, reports = core.views.ending(workflow.now())
        if reports is not None:  # (a large run)
            # Parts over External Storage's threshold leave claims in the history, not text.
            part = (
                STORED_PART_CHARS
                if self._payloads_by_reference and patched("final-blobs-by-reference")
                else PART_CHARS
            )
            result.results_ref = await save_blob("results", reports, part)
            del reports  # (30,000 reports: not kept while the board is made)
            if patched("final-board"):
                board, differs = core.views.final_board(workflow.now())
                # (since v0.11.11 items' lines are read with their items, and an ended run is
                # not said paused: asked only where that changed the board, whose length
                # decides how many parts are stored)
                if differs and not patched("final-board-as-shown"):
                    board = core.views.whole_board(workflow.now(), as_shown=False)
                result.board_ref = await save_blob("board", board, part)
        self._board.upsert(core, final=result.status)
        if result.status != "completed":
            # Temporal's status is the run's outcome (Web UI, `temporal workflow list`, its
            # filters); the RunResult travels in the failure, still readable (client/outcome.py).
            kind = "RunCancelled" if result.status == "cancelled" else "RunFailed"
            raise ApplicationError(
                f"{result.status}: {result.summary}", result, type=kind, non_retryable=True
            )
        return result

    def _apply(self, commands: list[Command]) -> None:
        """Carry out the core's commands, in the order it gave them."""
        for command in commands:
            if isinstance(command, StartAgent):
                self._attempts.start(self._core, command.agent_id, command.dispatch)
            elif isinstance(command, StopAgent):
                self._attempts.stop(command.agent_id)
            elif isinstance(command, CallPlanner):
                asyncio.create_task(self._replan_in_background(command.reason, command.label))
            elif isinstance(command, Consult):
                asyncio.create_task(
                    judge_stall(self._core, command, self._queue("llm"), self._apply)
                )
        outbox = self._core.take_outbox()
        if outbox:
            self._apply(outbox)
        lines = self._core.take_log()
        for line in lines:
            workflow.logger.info(line)
        self._metrics.stall_steps(lines)

    # -- replanning -----------------------------------------------------------------------------

    async def _replan_in_background(self, reason: str, label: str | None = None) -> None:
        core = self._core
        try:
            wf = await leader_io.replan_with_planner(core, None, reason, self._queue("llm"))
            if core.ended:
                return  # the run ended while the planner worked (its review timed out)
            risky = core.cast.privileged_changes(
                wf, core.board.agents, patched("mcp-tools-privileged")
            )
            _, stops = core.apply_plan(
                wf,
                f"{label}: {reason}" if label else core.plans.auto_label(reason),
                workflow.now(),
                leader_people.keep_cancelled(core),
            )
            leader_people.budget_gate(core)  # (the new plan may bring a budget)
            self._apply(stops)
            if risky:
                core.plans.require_review(risky, workflow.now(), patched("replan-review-deadline"))
        except (ActivityError, PlanError, ValueError) as e:
            workflow.logger.warning("automatic replan failed: %s", e)
            core.plans.note(f"automatic replan failed ({reason}): {e}", workflow.now())
        finally:
            core.planner_finished()

    # -- updates ------------------------------------------------------------------------------

    @workflow.update(
        description="Change the plan: {prompt} for the planner, or {xml} replacing it. Completed agents keep their results."
    )
    async def replan(self, req: ReplanRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.checks.replan(req))
        if core.replanning:  # two replans accepted in one activation: the second one fails
            raise ApplicationError(
                "a replan is already in progress; wait for it to finish", type="Busy"
            )
        core.planner_started()
        try:
            read: list[str] = []
            if req.xml is not None and req.xml.strip():
                try:
                    parsed = leader_io.read_plan_xml(req.xml)
                    wf = core.checks.plan(parsed.workflow)
                except (
                    PlanError
                ) as e:  # an update's failure, not a workflow task that fails for ever
                    raise ApplicationError(
                        f"the plan's XML cannot be used:\n{problems_text(e)}", type="PlanError"
                    ) from None
                # What reading it said (an Eko plan's parts left out, its repairs): in the reply,
                # where a person who sent it with the stock `temporal` CLI sees it too.
                read = [p.format("<plan>") for p in parsed.repairs]
                reason = "replaced by a person"
            else:
                try:
                    wf = await leader_io.replan_with_planner(
                        core, req.prompt, f"a person asked: {req.prompt}", self._queue("llm")
                    )
                except ActivityError as e:
                    raise ApplicationError(
                        f"the planner could not replan: {describe_failure(e)}", type="PlanError"
                    ) from None
                except PlanError as e:
                    raise ApplicationError(
                        f"the planner's plan does not fit this run:\n{problems_text(e)}",
                        type="PlanError",
                    ) from None
                except leader_io.PlannerNoRoom as e:
                    raise ApplicationError(str(e), type="BudgetSpent") from None
                reason = f"a person asked: {req.prompt}"
            summary, stops = core.apply_plan(
                wf, reason, workflow.now(), leader_people.keep_cancelled(core)
            )
            leader_people.budget_gate(core)  # (the new plan may bring a budget)
            self._apply(stops)
        finally:
            core.planner_finished()
        return core.people.replan_result(summary, read)

    @replan.validator
    def _validate_replan(self, req: ReplanRequest) -> None:
        self._validated(lambda: self._core.checks.replan(req), req)

    @workflow.update(
        description="Approve the plan under review ({version}: the version you reviewed) so agents start."
    )
    async def approve_plan(self, req: ApprovePlanRequest) -> InterventionResult:
        return (await self._ready(lambda: self._core.checks.approve_plan(req))).people.approve_plan(
            req, workflow.now()
        )

    @approve_plan.validator
    def _validate_approve_plan(self, req: ApprovePlanRequest) -> None:
        self._validated(lambda: self._core.checks.approve_plan(req), req)

    @workflow.update(
        description="Run a failed, cancelled or escalated task again, optionally with new {task} text."
    )
    async def retry_task(self, req: RetryTaskRequest) -> InterventionResult:
        return (await self._ready(lambda: self._core.checks.retry(req))).people.retry(
            req, workflow.now()
        )

    @retry_task.validator
    def _validate_retry(self, req: RetryTaskRequest) -> None:
        self._validated(lambda: self._core.checks.retry(req), req)

    @workflow.update(
        description="Mark a task done without running it; {result} is what its dependents get."
    )
    async def skip_task(self, req: SkipTaskRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.checks.skip(req))
        result, stops = core.people.skip(req, workflow.now())
        self._apply(stops)
        # A watch's poll skipped with what happened: the watch fires (a person's or a system's event).
        core.poll_ended(core.checks.task(req.task_id).agent_id, workflow.now())
        return result

    @skip_task.validator
    def _validate_skip(self, req: SkipTaskRequest) -> None:
        self._validated(lambda: self._core.checks.skip(req), req)

    @workflow.update(
        description="Pause one agent ({taskId}): not started again until resume_task; a running "
        "attempt is stopped and goes on from its checkpoint when resumed."
    )
    async def pause_task(self, req: TaskRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.checks.pause_task(req))
        result, stops = core.people.pause_task(req)
        self._apply(stops)
        return result

    @pause_task.validator
    def _validate_pause_task(self, req: TaskRequest) -> None:
        self._validated(lambda: self._core.checks.pause_task(req), req)

    @workflow.update(description="Resume one agent paused with pause_task ({taskId}).")
    async def resume_task(self, req: TaskRequest) -> InterventionResult:
        return (await self._ready(lambda: self._core.checks.resume_task(req))).people.resume_task(
            req
        )

    @resume_task.validator
    def _validate_resume_task(self, req: TaskRequest) -> None:
        self._validated(lambda: self._core.checks.resume_task(req), req)

    @workflow.update(
        description="Start one agent's attempt again ({taskId}): from its checkpoint, or from "
        "scratch with {fresh}: true."
    )
    async def reset_task(self, req: ResetTaskRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.checks.reset_task(req))
        result, stops = core.people.reset_task(req)
        self._apply(stops)
        return result

    @reset_task.validator
    def _validate_reset_task(self, req: ResetTaskRequest) -> None:
        self._validated(lambda: self._core.checks.reset_task(req), req)

    @workflow.update(description="Seconds one agent's next attempt may take ({taskId}, {seconds}).")
    async def set_task_timeout(self, req: TaskTimeoutRequest) -> InterventionResult:
        return (await self._ready(lambda: self._core.checks.task_timeout(req))).people.task_timeout(
            req
        )

    @set_task_timeout.validator
    def _validate_task_timeout(self, req: TaskTimeoutRequest) -> None:
        self._validated(lambda: self._core.checks.task_timeout(req), req)

    @workflow.update(
        description="Cancel one task (stopping it if it runs); its dependents stay blocked."
    )
    async def cancel_task(self, req: TaskRequest) -> InterventionResult:
        result, stops = (await self._ready(lambda: self._core.checks.cancel(req))).people.cancel(
            req, workflow.now()
        )
        self._apply(stops)
        return result

    @cancel_task.validator
    def _validate_cancel(self, req: TaskRequest) -> None:
        self._validated(lambda: self._core.checks.cancel(req), req)

    @workflow.update(
        description="Answer a pending question ({requestId} Q-n) or escalation (E-n) with {text}."
    )
    async def answer(self, req: AnswerRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.checks.answer(req, workflow.now()))
        return core.people.answer(req, workflow.now())

    @answer.validator
    def _validate_answer(self, req: AnswerRequest) -> None:
        self._validated(lambda: self._core.checks.answer(req, workflow.now()), req)

    @workflow.update(
        description="Decide a tool approval ({requestId} A-n): allow_once, allow_run (this run) or deny."
    )
    async def approve_tool(self, req: ApproveToolRequest) -> InterventionResult:
        return (await self._ready(lambda: self._core.checks.approve_tool(req))).people.approve_tool(
            req, workflow.now()
        )

    @approve_tool.validator
    def _validate_approve_tool(self, req: ApproveToolRequest) -> None:
        self._validated(lambda: self._core.checks.approve_tool(req), req)

    @workflow.update(
        description="Define (or redefine) a role for this run: name, description, systemPrompt, allowedTools, …"
    )
    async def define_role(self, req: DefineRoleRequest) -> InterventionResult:
        return (await self._ready(lambda: self._core.checks.define_role(req))).people.define_role(
            req
        )

    @define_role.validator
    def _validate_define_role(self, req: DefineRoleRequest) -> None:
        self._validated(lambda: self._core.checks.define_role(req), req)

    @workflow.update(
        description="End a run held open (failed tasks waiting for a decision, or paused): pending "
        "requests are withdrawn; it ends failed if a task failed. {reason} is optional."
    )
    async def end_run(self, req: EndRunRequest) -> InterventionResult:
        return (await self._ready(lambda: self._core.checks.end(req))).people.end(
            req, workflow.now()
        )

    @end_run.validator
    def _validate_end_run(self, req: EndRunRequest) -> None:
        self._validated(lambda: self._core.checks.end(req), req)

    @workflow.update(
        description="Raise or lower the budget: {tokens}, {usd}, {minutes}, {agents} of the run, or "
        "with {taskId} one task's cap; {reserve}: tokens held for an agent without a cap."
    )
    async def set_budget(self, req: SetBudgetRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.checks.set_budget(req))
        patched("budgets")  # the run has a budget from here (the handler is newer than the patch)
        return core.people.set_budget(req, workflow.now())

    @set_budget.validator
    def _validate_set_budget(self, req: SetBudgetRequest) -> None:
        self._validated(lambda: self._core.checks.set_budget(req), req)

    # -- signals: workflows/leader/signals.py (pause, resume, nudge, report_progress, and twins)
    # -- queries: workflows/leader/queries.py
