"""LeaderWorkflow: the XSky executor and LingXiao's leader as one durable Temporal workflow.

A DAG scheduler, not a level-by-level tree walk: an agent is dispatched the moment its own
dependencies have completed, in plan order, at most ``max_parallel`` at a time. Each agent
runs as the ``run_agent`` activity on its kind's task queue. A failed agent does not stop
independent ones; its dependents show as blocked and the run ends ``failed``.

Deterministic by construction: only ``workflow.now()`` for time, plan order (a list) for
every iteration, and all I/O in activities.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, TimeoutError

with workflow.unsafe.imports_passed_through():
    from xsky.agent_config import activity_settings
    from xsky.artifacts import marker
    from xsky.board import TaskState, TaskView, board_markdown, derive_statuses, subject_of, task_id_for
    from xsky.models import Workflow, WorkflowAgent
    from xsky.runs import AgentInput, AgentOutcome, AgentReport, ProgressReport, RunInput, RunResult
    from xsky.variables import RenderError, render, render_config
    from xsky.xml import workflow_to_xml

# Agent kinds with their own task queue; every other name (llm and roles) goes to "llm".
QUEUE_KINDS = ("browser", "file", "shell")
# The run's result carries inline results up to this many bytes in all; beyond it, refs only.
INLINE_RESULT_BUDGET = 512 * 1024
SATISFIED = ("completed", "skipped")


class _Results(Mapping[str, str]):
    """Completed agents' results for rendering: inline text, or a marker for stored ones."""

    def __init__(self, tasks: Mapping[str, TaskState]):
        self._tasks = tasks

    def __getitem__(self, agent_id: str) -> str:
        task = self._tasks[agent_id]
        if task.stored not in SATISFIED:
            raise KeyError(agent_id)
        if task.result is not None:
            return task.result
        if task.result_ref is not None:
            return marker(task.result_ref)
        return ""

    def __contains__(self, agent_id: object) -> bool:
        return isinstance(agent_id, str) and agent_id in self._tasks and self._tasks[agent_id].stored in SATISFIED

    def __iter__(self) -> Iterator[str]:
        return (k for k, t in self._tasks.items() if t.stored in SATISFIED)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def describe_failure(err: ActivityError) -> str:
    """One readable line for an activity that failed after its retries."""
    cause = err.cause
    if isinstance(cause, ApplicationError):
        message = cause.message
    elif isinstance(cause, TimeoutError):
        kind = cause.type.name.lower().replace("_", "-") if cause.type else "activity"
        message = f"{kind} timeout"
        if cause.type is not None and cause.type.name == "HEARTBEAT":
            message += " (the worker stopped answering: crashed, killed or stuck)"
    elif isinstance(cause, CancelledError):
        message = "cancelled"
    else:
        message = str(cause or err)
    state = err.retry_state.name if err.retry_state is not None else ""
    if state == "MAXIMUM_ATTEMPTS_REACHED":
        message += " — retries exhausted"
    elif state == "NON_RETRYABLE_FAILURE":
        message += " — not retried (retrying would not help)"
    return message


@workflow.defn(name="LeaderWorkflow")
class LeaderWorkflow:
    @workflow.init
    def __init__(self, inp: RunInput) -> None:
        self._input = inp
        self._plan: Workflow = inp.workflow
        self._plan_version = 1
        self._variables = {**inp.workflow.variables, **inp.variables}
        self._run_id = workflow.info().workflow_id
        self._tasks: dict[str, TaskState] = {}  # by agent id, in plan order
        for agent in self._plan.agents:
            self._tasks[agent.id] = self._new_task(agent)
        self._running: dict[str, asyncio.Task[None]] = {}
        self._changed = False
        self._started_at = workflow.now()

    def _new_task(self, agent: WorkflowAgent) -> TaskState:
        return TaskState(
            id=task_id_for(agent.id),
            agent_id=agent.id,
            session_id=self._run_id,
            subject=subject_of(agent.task),
            description=agent.task,
            assigned_agent=agent.name,
            blocked_by=[task_id_for(d) for d in agent.depends],
        )

    # -- the scheduler ---------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: RunInput) -> RunResult:
        self._publish()
        while True:
            self._dispatch_ready()
            if not self._running:
                break  # nothing runs and nothing can start: every task is terminal or blocked
            await workflow.wait_condition(lambda: self._changed)
            self._changed = False
            self._publish()
        await workflow.wait_condition(workflow.all_handlers_finished)
        self._publish()
        return self._result()

    def _dispatch_ready(self) -> None:
        limit = self._input.options.max_parallel
        for agent in self._plan.agents:
            if len(self._running) >= limit:
                return
            task = self._tasks[agent.id]
            if task.stored != "pending" or task.waiting_on is not None:
                continue
            if all(self._tasks[d].stored in SATISFIED for d in agent.depends):
                self._start(agent, task)

    def _start(self, agent: WorkflowAgent, task: TaskState) -> None:
        task.stored = "dispatched"
        task.attempt += 1
        task.dispatched_at = workflow.now()
        task.started_at = task.ended_at = None
        task.error = None
        self._running[agent.id] = asyncio.create_task(self._execute(agent, task.attempt))

    async def _execute(self, agent: WorkflowAgent, dispatch: int) -> None:
        task = self._tasks[agent.id]
        try:
            try:
                rendered = self._render(agent)
                settings = activity_settings(agent.config, self._input.options)
            except (RenderError, ValueError) as e:
                self._finish(task, "failed", error=f"cannot start: {e}")
                return
            kind = agent.name if agent.name in QUEUE_KINDS else "llm"
            try:
                outcome = await workflow.execute_activity(
                    "run_agent",
                    AgentInput(
                        run_id=self._run_id,
                        task_id=task.id,
                        agent=rendered,
                        plan_version=self._plan_version,
                        dispatch=dispatch,
                        workspace=self._input.options.workspace,
                        artifact_threshold=self._input.options.artifact_threshold,
                        heartbeat_interval=max(0.2, min(10.0, settings.heartbeat / 3)),
                    ),
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
                    activity_id=f"{task.id}-v{self._plan_version}-d{dispatch}",
                    summary=f"{task.id} · {agent.name} · {subject_of(agent.task, 70)}",
                )
            except ActivityError as e:
                if dispatch == task.attempt:
                    self._finish(task, "failed", error=describe_failure(e))
                return
            if dispatch != task.attempt:
                return  # a late completion of an earlier dispatch: dropped
            task.result = outcome.result
            task.result_ref = outcome.result_ref
            task.artifacts = outcome.artifacts
            task.tokens += outcome.tokens
            task.iterations = max(task.iterations, outcome.iterations)
            if outcome.started_at is not None and task.started_at is None:
                task.started_at = outcome.started_at
            self._finish(task, "completed")
        finally:
            if self._running.get(agent.id) is asyncio.current_task():
                del self._running[agent.id]
            self._changed = True

    def _finish(self, task: TaskState, status: str, *, error: str | None = None) -> None:
        task.stored = status  # type: ignore[assignment]
        task.error = error
        task.ended_at = workflow.now()
        if task.started_at is None:
            task.started_at = task.dispatched_at

    def _render(self, agent: WorkflowAgent) -> WorkflowAgent:
        results = _Results(self._tasks)
        ctx = self._input.context
        return agent.model_copy(
            update={
                "task": render(agent.task, results, self._variables, ctx),
                "input": render(agent.input, results, self._variables, ctx) if agent.input else agent.input,
                "config": render_config(agent.config, results, self._variables, ctx) if agent.config else agent.config,
            }
        )

    # -- what people see -------------------------------------------------------------------

    def _publish(self) -> None:
        title = f"{self._plan.name or self._run_id} · plan v{self._plan_version}"
        workflow.set_current_details(board_markdown(title, list(self._tasks.values()), workflow.now()))

    def _views(self) -> list[TaskView]:
        derived = derive_statuses({t.id: t for t in self._tasks.values()})
        now = workflow.now()
        return [TaskView.of(t, *derived[t.id], now) for t in self._tasks.values()]

    @workflow.query(description="Every task of the run: status, attempts, timings, result or error.")
    def task_board(self) -> list[TaskView]:
        return self._views()

    @workflow.query(description="The current plan as workflow XML, with statuses and results.")
    def plan(self) -> str:
        status_map = {"completed": "done", "skipped": "done", "failed": "error", "cancelled": "error",
                      "dispatched": "running", "in_progress": "running"}
        agents = []
        for agent in self._plan.agents:
            task = self._tasks[agent.id]
            result = task.result if task.result is not None else (task.result_ref.preview if task.result_ref else None)
            agents.append(agent.model_copy(update={"status": status_map.get(task.stored, "init"), "result": result}))
        return workflow_to_xml(self._plan.model_copy(update={"agents": agents}))

    @workflow.signal(description="Sent by running agents: alive and moving (progress message, iteration, tokens).")
    def report_progress(self, report: ProgressReport) -> None:
        task = next((t for t in self._tasks.values() if t.id == report.task_id), None)
        if task is None or report.dispatch != task.attempt or task.stored not in ("dispatched", "in_progress"):
            return  # a report from an earlier dispatch, or about a finished task
        now = workflow.now()
        if task.stored == "dispatched":
            task.stored = "in_progress"
            task.started_at = task.started_at or now
        task.last_progress_at = now
        task.last_progress = report.message or task.last_progress
        task.activity_attempt = report.activity_attempt
        task.iterations = max(task.iterations, report.iteration)
        self._changed = True

    def _result(self) -> RunResult:
        derived = derive_statuses({t.id: t for t in self._tasks.values()})
        reports = []
        budget = INLINE_RESULT_BUDGET
        for task in self._tasks.values():
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
        counts: dict[str, list[str]] = {}
        for r in reports:
            counts.setdefault(r.status, []).append(r.task_id)
        done = len(counts.get("completed", [])) + len(counts.get("skipped", []))
        status = "completed" if done == len(reports) else "failed"
        parts = [f"{done} of {len(reports)} agents completed"]
        for name in ("failed", "blocked", "cancelled"):
            if counts.get(name):
                parts.append(f"{len(counts[name])} {name} ({', '.join(counts[name][:8])})")
        return RunResult(
            workflow_id=self._run_id,
            name=self._plan.name,
            status=status,
            summary="; ".join(parts),
            agents=reports,
            plan_version=self._plan_version,
            started_at=self._started_at,
            ended_at=workflow.now(),
        )

