"""The run's course: dispatching ready tasks, attempts' ends, progress reports, automatic
replanning and the merge of a new plan."""

from __future__ import annotations

import heapq
from datetime import datetime, timedelta

from xsky.leader.budget import Budgets
from xsky.leader.commands import (
    AUDIT_KEEP,
    MAX_RETRY_NOTES,
    PLANNER_RESULT_CHARS,
    RUNNING,
    AttemptFailure,
    CallPlanner,
    Command,
    StartAgent,
    StopAgent,
    StopReason,
)
from xsky.leader.ledger import ConsultOutcome
from xsky.leader.limits import ERROR_CHARS, NOTE_CHARS, QUESTION_CHARS, cut
from xsky.leader.replan import merge_plan, new_task
from xsky.leader.stall import ESCALATED
from xsky.leader.state import (
    AuditEntry,
    HumanRequest,
    Nudge,
    PlanVersion,
)
from xsky.leader.tasks import StoredStatus, TaskState
from xsky.plan.budget import BudgetShare, with_plan
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.plan.xml import workflow_to_xml
from xsky.runs import (
    AgentOutcome,
    DecisionRecord,
    ProgressReport,
)


class Course(Budgets):
    """The run's course: what starts, how attempts end, how the plan changes."""

    # -- the run's course ------------------------------------------------------------------------

    def set_first_plan(self, wf: Workflow, provider: str, now: datetime) -> None:
        """Plan v1 of a run started from a sentence."""
        self.state.plan = wf
        self.state.tasks = [new_task(a, self.run_id) for a in wf.agents]
        self.state.plan_history = [
            PlanVersion(
                version=1,
                xml=workflow_to_xml(wf),
                reason=f"planned by {provider} from the request",
                at=now,
            )
        ]
        self.variables = {**wf.variables, **self.input.variables}
        self.state.budget = with_plan(self.state.budget, wf.budget)
        self._index()
        self.needs_plan = False

    def review_timed_out(self, now: datetime) -> bool:
        """Nobody reviewed the plan in time: approve or end the run. True if it goes on."""
        if self.options.review_timeout_action == "approve":
            self.state.review = (
                "approved_by_timeout"  # the plan runs; nobody vouched for its new roles
            )
            self.note_history(
                f"approved automatically: nobody reviewed the plan within {self.options.review_timeout:g}s",
                now,
            )
            return True
        self.ended = f"cancelled: nobody approved the plan within {self.options.review_timeout:g}s"
        self.state.review = "none"
        for task in self.state.tasks:
            if not task.terminal:
                self._withdraw(task.waiting_on, f"withdrawn: {task.id} cancelled", now)
                self._set_waiting(task, None)
                self._finish(task, "cancelled", now, error="the plan was never approved")
        return False

    def finished(self) -> bool:
        """Nothing runs and nothing can start: every task is terminal, blocked, or paused."""
        if self.ended:
            return not self.active and not self.replanning
        if self.active or self.replanning:
            return False
        if self._pending_requests:
            return False  # a person still has to answer
        return not self._any_ready()  # ready work while paused waits for resume

    def dispatch(self, now: datetime) -> list[Command]:
        """Start ready agents, in plan order, while there is room."""
        if (
            self.state.paused
            or self.replanning
            or self.draining
            or self.ended
            or self.state.review == "waiting"
        ):
            return []
        room = self.options.max_parallel - len(self.active)
        starts: list[Command] = []
        held: list[tuple[int, str]] = []  # new tasks past the run's agent count
        blocked = False
        while room > 0 and self._any_ready():
            entry = heapq.heappop(self._heap)
            verdict = self.admit(self.tasks[entry[1]], now)
            if verdict.kind == "wait":  # the run's budget has no room: nothing more starts
                heapq.heappush(self._heap, entry)
                blocked = blocked or verdict.hard
                break
            if verdict.kind != "start":  # held back, or waiting on its own E-n
                held += [entry] if verdict.kind == "hold" else []
                blocked = blocked or verdict.kind == "hold"
                continue
            starts.append(self._start(self.tasks[entry[1]], now, verdict.share))
            room -= 1
        for entry in held:
            heapq.heappush(self._heap, entry)
        self.budget_settled(blocked, bool(starts), now)
        return starts

    def _start(
        self, task: TaskState, now: datetime, share: BudgetShare | None = None
    ) -> StartAgent:
        self._set_stored(task, "dispatched")
        task.attempt += 1
        task.dispatched_at = now
        task.started_at = task.ended_at = task.last_progress_at = None
        task.error = None
        task.tries += 1
        task.activity_attempt = 1
        self.active[task.agent_id] = task.attempt
        if self.state.budget is not None:
            self.reserve(task, share, now)
        return StartAgent(task.agent_id, task.attempt)

    @staticmethod
    def _observe_attempt(task: TaskState, attempt: int, previous: str | None = None) -> None:
        """Temporal retried the dispatch: count the tries, and say why when it is known."""
        if attempt <= task.activity_attempt:
            return
        task.tries += attempt - task.activity_attempt
        task.retries.append(f"attempt {attempt} after " + (previous or "a failed or lost attempt"))
        del task.retries[:-MAX_RETRY_NOTES]
        task.activity_attempt = attempt

    # -- an attempt's end ------------------------------------------------------------------------

    def cannot_start(self, agent_id: str, why: str, now: datetime) -> None:
        self.flight_unused(agent_id)
        self._finish(self.tasks[agent_id], "failed", now, error=f"cannot start: {why}")

    def _current(self, agent_id: str, dispatch: int, task: TaskState) -> bool:
        """Is this the task's latest dispatch, and the task still on the board?"""
        return dispatch == task.attempt and self.tasks.get(agent_id) is task

    def attempt_failed(
        self,
        agent_id: str,
        task: TaskState,
        dispatch: int,
        failure: AttemptFailure | None,
        now: datetime,
    ) -> list[Command]:
        """The attempt raised (``failure``) or was cancelled (``None``)."""
        self.settle_usage(agent_id, failure.usage if failure else None, dispatch)
        intent = self.intents.pop(agent_id, None)
        if not self._current(agent_id, dispatch, task):
            return []  # an earlier dispatch, or a task a replan removed
        if failure is not None:
            self._audit(task, failure.decisions)
            self._observe_attempt(task, failure.attempt)
        if intent is not None:
            self._after_stop(task, intent, now)
        elif failure is not None:
            self._finish(task, "failed", now, error=failure.message)
            replan: list[Command] = []
            # Workers kept dying (replanning the agent would not help), or the failure would
            # repeat — a replan would most likely run the same step again (a deploy, a
            # migration): the person decides (retry, skip, replan), nothing repeats on its own.
            if not failure.lost and (
                not failure.deterministic or self.options.replan_deterministic
            ):
                replan = self.auto_replan(f"{task.id} failed: {task.error}")
            if not replan and self.options.hold_on_failure > 0:
                self._hold(task, now)
            return replan
        return []

    def attempt_succeeded(
        self,
        agent_id: str,
        task: TaskState,
        dispatch: int,
        outcome: AgentOutcome,
        now: datetime,
        judged: ConsultOutcome | None = None,
    ) -> None:
        """The attempt returned ``outcome``; ``judged``: what the coordinator said of it
        (see :mod:`xsky.leader.coordination`), None when it was not asked."""
        self.settle_usage(agent_id, outcome.usage, dispatch)  # spend is spend, late or not
        intent = self.intents.pop(agent_id, None)
        if not self._current(agent_id, dispatch, task):
            return  # a late completion of an earlier dispatch: dropped
        if intent is not None and intent not in (StopReason.PAUSE, StopReason.RESTART):
            # It finished just as it was stopped: the decision already made stands (and a
            # result of a definition the plan has since changed is not kept).
            self._audit(task, outcome.decisions)
            self._after_stop(task, intent, now)
            return
        self._on_outcome(task, outcome, now, judged)

    def attempt_ended(self, agent_id: str, dispatch: int) -> None:
        """The attempt's activity is over, whatever its end; its slot is free."""
        self.flight_ended(agent_id, dispatch)
        if self.active.get(agent_id) == dispatch:
            del self.active[agent_id]
            self._consider(agent_id)
        self.changed = True

    def _on_outcome(
        self,
        task: TaskState,
        outcome: AgentOutcome,
        now: datetime,
        judged: ConsultOutcome | None = None,
    ) -> None:
        self._audit(task, outcome.decisions)
        self._observe_attempt(task, outcome.attempt)
        task.tokens += outcome.tokens
        task.iterations = max(task.iterations, outcome.iterations)
        if outcome.started_at is not None:
            # the attempt that ended: time queued after a lost worker is not work
            task.started_at = outcome.started_at
        task.host = outcome.host or task.host
        if outcome.kind == "completed":
            self._take_result(task, outcome, now, judged)
            return
        if outcome.kind == "budget":
            self.budget_stopped(task, outcome)
            return
        req = outcome.request
        assert req is not None, "a question or approval outcome carries its request"
        if outcome.kind == "question":
            question = cut(req.question or "(no question text)", QUESTION_CHARS)
            request = self._new_request("question", task, question, now)
        else:
            args = ", ".join(f"{k}={v!r}" for k, v in (req.arguments or {}).items())
            request = self._new_request("approval", task, f"{req.tool}({args[:300]})", now)
            request.tool, request.arguments, request.rule = req.tool, req.arguments, req.rule
            request.hard = req.hard
        self._set_stored(task, "pending")
        self._set_waiting(task, request.id)
        task.last_progress = f"waiting for {request.id}: {request.text[:100]}"
        self._requested(task, request, now, judged)

    def _take_result(
        self,
        task: TaskState,
        outcome: AgentOutcome,
        now: datetime,
        judged: ConsultOutcome | None,
    ) -> None:
        """A completed attempt's result: the task completes (the coordination layer may judge
        it first)."""
        task.provider = outcome.provider
        task.result = outcome.result
        task.result_ref = outcome.result_ref
        task.artifacts = outcome.artifacts
        self._finish(task, "completed", now)

    def _requested(
        self, task: TaskState, request: HumanRequest, now: datetime, judged: ConsultOutcome | None
    ) -> None:
        """A question or approval request was raised (the coordination layer may decide it)."""

    def _after_stop(self, task: TaskState, intent: StopReason, now: datetime) -> None:
        """A running attempt we stopped on purpose has ended; put the task where it belongs."""
        if intent in (StopReason.PAUSE, StopReason.RESTART, StopReason.CHANGED):
            # runs again (from its checkpoint) when its turn comes
            self._set_stored(task, "pending")
            task.started_at = None
        elif intent == StopReason.RUN_CANCEL:
            self._finish(task, "cancelled", now, error="the run was cancelled")
        # "cancel", "skip" and "abandon" set the task's state when they were decided;
        # "removed": the task left the board.

    def _finish(
        self, task: TaskState, status: StoredStatus, now: datetime, *, error: str | None = None
    ) -> None:
        self._set_stored(task, status)
        task.error = cut(error, ERROR_CHARS) if error else error
        task.ended_at = now
        if task.last_progress and task.last_progress.startswith("waiting for "):
            task.last_progress = None  # it waits for nothing now
        if task.started_at is None:
            task.started_at = task.dispatched_at
        self.changed = True

    def _stop(self, agent_id: str, intent: StopReason) -> list[Command]:
        """Ask a running attempt to stop (it ends after the activity acknowledges).

        A stronger reason is never replaced by a weaker one: a task cancelled by a person
        and then caught by a pause must stay cancelled.
        """
        if agent_id not in self.active:
            return []
        current = self.intents.get(agent_id)
        if current is None or intent > current:
            self.intents[agent_id] = intent
        return [StopAgent(agent_id)]

    def stop_everything(self, intent: StopReason) -> list[Command]:
        return [c for agent_id in list(self.active) for c in self._stop(agent_id, intent)]

    def _audit(self, task: TaskState, records: list[DecisionRecord]) -> None:
        for r in records:
            self.state.audit.append(
                AuditEntry(
                    at=r.at,
                    task_id=task.id,
                    tool=r.tool,
                    arguments=r.arguments,
                    effect=r.effect,
                    reason=r.reason,
                )
            )
        if len(self.state.audit) > AUDIT_KEEP:
            self.state.audit_dropped += len(self.state.audit) - AUDIT_KEEP
            del self.state.audit[: len(self.state.audit) - AUDIT_KEEP]

    # -- progress --------------------------------------------------------------------------------

    def report_progress(self, report: ProgressReport, now: datetime) -> None:
        agent_id = report.task_id.removeprefix("T-")
        self.settle_usage(agent_id, report.usage, report.dispatch if report.final else None)
        task = self.task_by_id(report.task_id)
        if task is None or report.dispatch != task.attempt or task.stored not in RUNNING:
            return  # a report from an earlier dispatch, or about a finished task
        self._observe_attempt(
            task,
            report.activity_attempt,
            cut(report.previous, NOTE_CHARS) if report.previous else None,
        )
        if report.started_at is not None and report.activity_attempt >= task.activity_attempt:
            # this attempt's real start, not when the signal came
            task.started_at = report.started_at
            task.host = report.host or task.host
        if task.stored == "dispatched":
            self._set_stored(task, "in_progress")
            task.started_at = task.started_at or now
        if report.progress:
            task.last_progress_at = now
            task.last_progress = (
                cut(report.message, NOTE_CHARS) if report.message else task.last_progress
            )
            if self.state.stall_levels.get(task.id, 0) < ESCALATED:
                self.state.stall_levels.pop(task.id, None)  # progress starts the ladder over
        task.iterations = max(task.iterations, report.iteration)
        task.tokens = max(task.tokens, report.tokens)
        self.changed = True

    # -- replanning ------------------------------------------------------------------------------

    def auto_replan(self, reason: str, force: bool = False) -> list[Command]:
        """Replan automatically (failures, stalls) while the run's budget lasts."""
        if self.replanning or self.state.auto_replans >= self.options.max_auto_replans:
            return []
        if not force and self.options.max_auto_replans == 0:
            return []
        self.state.auto_replans += 1
        self.replanning = True
        return [CallPlanner(reason)]

    def auto_replan_label(self, reason: str) -> str:
        return (
            f"automatic replan {self.state.auto_replans}/{self.options.max_auto_replans}: {reason}"
        )

    def require_review(self, risky: list[str], now: datetime, timed: bool = True) -> None:
        """Nobody asked for these: a model did. Shell, Python or network in new hands waits for a
        person — for ``review_timeout`` seconds, then ``review_timeout_action`` applies, as to a
        first plan's review (``timed`` False: runs recorded before the patch
        ``replan-review-deadline``, whose review waited for ever)."""
        self.state.review = "waiting"
        self.state.review_deadline = (
            now + timedelta(seconds=self.options.review_timeout) if timed else None
        )
        self.note_history(
            f"the automatic replan gives agents {', '.join(risky)} shell, Python or network tools: "
            f"waiting for approve_plan (version {self.state.plan_version})",
            now,
        )

    def planner_xml(self, window: list[WorkflowAgent] | None = None) -> str:
        """The current plan with statuses and (cut) results, as the planner should see it."""
        status_map = {
            "completed": "done",
            "skipped": "done",
            "failed": "error",
            "cancelled": "error",
            "dispatched": "running",
            "in_progress": "running",
        }
        agents = []
        for agent in self.state.plan.agents if window is None else window:
            task = self.tasks[agent.id]
            result = (
                task.result
                if task.result is not None
                else (task.result_ref.preview if task.result_ref else None)
            )
            if task.error:
                result = f"ERROR: {task.error}"
            if result is not None and len(result) > PLANNER_RESULT_CHARS:
                result = result[:PLANNER_RESULT_CHARS] + " …[cut]"
            agents.append(
                agent.model_copy(
                    update={"status": status_map.get(task.stored, "init"), "result": result}
                )
            )
        return workflow_to_xml(self.state.plan.model_copy(update={"agents": agents}))

    def apply_plan(
        self, wf: Workflow, reason: str, now: datetime, keep_cancelled: bool = True
    ) -> tuple[str, list[Command]]:
        """Make ``wf`` the plan: (what changed, the attempts to stop). ``keep_cancelled``
        False: runs recorded before the patch cancelled-stays-cancelled, whose replans put
        every cancelled task back to pending."""
        change = merge_plan(self.state.plan, self.tasks, wf, self.run_id, keep_cancelled)
        if wf.budget != self.state.plan.budget:  # a plan's new budget narrows the run's
            self.state.budget = with_plan(self.state.budget, wf.budget)
        commands: list[Command] = []
        for agent_id in change.stop:
            commands += self._stop(
                agent_id, StopReason.CHANGED if agent_id in change.restarted else StopReason.REMOVED
            )
        for request_id in change.withdrawn_requests:
            self._withdraw(request_id, "withdrawn: the plan changed", now)
        for agent_id in change.reset:
            self._withdraw_holds(self.tasks[agent_id], "replanned", now)
        for task in change.removed:
            self.state.stall_levels.pop(task.id, None)
        # Removed tasks are kept for the record, without results (continue-as-new carries them).
        self.state.removed_tasks += [t.model_copy(update={"result": None}) for t in change.removed]
        self.state.plan = wf
        self.state.tasks = change.tasks
        self.state.plan_version += 1
        for task in change.tasks:  # a replan starts every ladder over
            self.state.stall_levels.pop(task.id, None)
        summary = change.summary()
        self.state.plan_history.append(
            PlanVersion(
                version=self.state.plan_version,
                xml=workflow_to_xml(wf),
                reason=f"{reason} — {summary}",
                at=now,
            )
        )
        self._index()
        self.changed = True
        return summary, commands

    # -- nudges -----------------------------------------------------------------------------------

    def _add_nudge(self, nudge: Nudge) -> None:
        self.state.nudges.append(nudge)
        self._nudges.setdefault(nudge.task_id, []).append(nudge.message)

    def nudges_for(self, task_id: str) -> list[str]:
        task = self.task_by_id(task_id)
        return list(self._nudges.get(task.id, [])) if task is not None else []
