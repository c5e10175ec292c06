"""LeaderCore: the leader's decisions as a pure, deterministic state machine — a router over
components that each own their part of the run's state.

The components (each in its module, each with its own state and tests): the task board and its
ready set (:mod:`~xsky.leader.board`), the plan book (:mod:`~xsky.leader.plans`), the cast of
roles (:mod:`~xsky.leader.cast`), the request book (:mod:`~xsky.leader.requests`), the briefs
each dispatch is given (:mod:`~xsky.leader.briefs`), the budget (:mod:`~xsky.leader.budget`),
the stall ladder (:mod:`~xsky.leader.ladder`), the permission log (:mod:`~xsky.leader.audit`),
the coordinator (:mod:`xsky.leader.coordinator`: judgment, results, requests, oversight, its
views), an attempt's input (:mod:`~xsky.leader.attempt_input`), the plan's own growth — loops'
items, watches' polls and firings (:mod:`~xsky.leader.growth`) — and the read-only views
(:mod:`~xsky.leader.views`).

The router takes ``now`` and events (an attempt ended, an update, a signal, time passing) and
returns commands (:class:`StartAgent`, :class:`StopAgent`, :class:`CallPlanner`,
:class:`Consult`); each event is one method here, which calls the components in the order
written in it. ``workflows/leader/workflow.py`` turns Temporal events into these calls and the
commands into activities and cancellations, so all of this is tested without a server
(tests/unit/test_leader_core.py drives it through generated event sequences).

Validators (``check_*``) raise :class:`Rejected` and change nothing; handlers assume the check
passed. ``changed`` tells the shell's main loop that something moved: set by the events that
move something, never by the passes the loop makes every time (dispatch, tick) unless they did.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime

from xsky.leader.attempt_input import AttemptInputs
from xsky.leader.audit import AuditLog
from xsky.leader.beginning import carry, first_state, next_input
from xsky.leader.board import TaskBoard
from xsky.leader.briefs import Briefs
from xsky.leader.budget import Budget
from xsky.leader.cast import Cast
from xsky.leader.checks import Checks
from xsky.leader.commands import (
    AUDIT_KEEP,
    INLINE_AGENTS,
    INLINE_RESULT_BUDGET,
    LOCAL_SECONDS,
    MAX_RETRY_NOTES,
    PLAN_PAGE,
    PLANNER_RESULT_CHARS,
    RUNNING,
    SATISFIED,
    AttemptFailure,
    CallPlanner,
    Command,
    Consult,
    Flight,
    Rejected,
    StartAgent,
    StopAgent,
    StopReason,
)
from xsky.leader.coordinator.judgment import Judgment
from xsky.leader.coordinator.oversight import Oversight
from xsky.leader.coordinator.requests import RequestJudge
from xsky.leader.coordinator.results import ResultCheck
from xsky.leader.coordinator.review import consultation
from xsky.leader.coordinator.views import CoordinatorViews
from xsky.leader.flow import Flow
from xsky.leader.growth import Growth, Patched
from xsky.leader.ladder import StallLadder
from xsky.leader.ledger import ConsultInput, ConsultOutcome, Point
from xsky.leader.limits import QUESTION_CHARS, cut
from xsky.leader.people import People
from xsky.leader.plans import PlanBook
from xsky.leader.replan import merge_plan, new_task
from xsky.leader.requests import RequestBook
from xsky.leader.state import HumanRequest
from xsky.leader.tasks import TaskState
from xsky.leader.views import Views
from xsky.plan import loops
from xsky.plan.budget import BudgetShare, Usage, with_plan
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentOutcome, PendingAttempt, ProgressReport, RunInput


class LeaderCore:
    """One run's leader: its components, and the order in which each event reaches them."""

    def __init__(self, inp: RunInput, run_id: str, now: datetime, patched: Patched = None) -> None:
        self.input = inp
        self.options = inp.options
        self.run_id = run_id
        self.flow = Flow(planning=inp.state is None and inp.workflow is None)
        first = (
            (inp.state.plan.plan if inp.state is not None else None)
            or inp.workflow
            or Workflow(
                name=" ".join((inp.task_prompt or "").split())[:80],
                task_id=inp.task_id or run_id,
                task_prompt=inp.task_prompt,
            )
        )
        self.variables = {**first.variables, **inp.variables}
        self.state = inp.state or first_state(inp, first, run_id, now, patched)
        s = self.state
        self.plans = PlanBook(s.plan, self.options)
        self.cast = Cast(s.plan, inp)
        self.board = TaskBoard(s.board, self.plans.plan)
        self.requests = RequestBook(s.requests, self.options)
        self.briefs = Briefs(s.briefs)
        self.audit = AuditLog(s.audit)
        self.budget = Budget(s.budget, s.run, self.board, self.requests, self.options, run_id)
        self.ladder = StallLadder(
            s.ladder,
            self.board,
            self.requests,
            self.briefs,
            self.options,
            self._replan,
            skip=lambda a: a in self.board.intents or a in self.oversight.stall_consults,
            can_replan=lambda: self.plans.state.auto_replans < self.options.max_auto_replans,
        )
        self.judgment = Judgment(
            s.ledger, self.board, self.plans, self.requests, self.budget, self.options, run_id
        )
        self.results = ResultCheck(self.judgment, self.board, self.briefs)
        self.asks = RequestJudge(
            self.judgment, self.board, self.requests, self.briefs, self.audit, inp.permissions
        )
        self.oversight = Oversight(
            self.judgment,
            self.board,
            self.requests,
            self.briefs,
            self.ladder,
            self._replan,
            lambda: self.flow.ended is not None,
        )
        self.inputs = AttemptInputs(
            inp, run_id, self.board, self.plans, self.cast, self.briefs, self.budget, self.variables
        )
        self.growth = Growth(
            run_id, self.flow, self.board, self.plans, self.inputs, lambda: self.variables
        )
        self.checks = Checks(
            self.flow,
            self.board,
            self.plans,
            self.cast,
            self.requests,
            self.briefs,
            self.budget,
            self.asks,
            self.variables,
        )
        self.people = People(
            self.flow,
            s.run,
            self.board,
            self.plans,
            self.cast,
            self.requests,
            self.briefs,
            self.budget,
            self.ladder,
            self.audit,
            self.asks,
            self.oversight,
            self.checks,
        )
        self.views = Views(
            s,
            inp,
            run_id,
            self.flow,
            self.board,
            self.plans,
            self.requests,
            self.budget,
            self.audit,
            self.judgment,
            CoordinatorViews(self.judgment, self.board),
        )
        if inp.state is None and inp.resume is not None:
            carry(self.board, self.plans, inp.resume)
        self._patched(patched)  # (an update may replan before configure: its plan asks too)

    def _patched(self, patched: Patched) -> None:  # for components that ask where it matters
        if patched is not None:
            self.growth.patched = self.inputs.patched = self.people.patched = patched
            self.board.patched = self.requests.patched = patched

    # -- what the shell sets and reads -------------------------------------------------------------

    def configure(
        self,
        *,
        coordinating: bool,
        delegated: list[str] | None = None,
        denied: list[str] | None = None,
        worker_model: str | None = None,
        leader_budget: bool = False,
        delegation_programs: bool = True,
        growth_folded: bool = False,
        patched: Patched = None,  # for a patch asked only where it matters
    ) -> None:
        """What the run's worker and its patches say (the shell, once per execution)."""
        self.growth.fold = growth_folded
        self._patched(patched)
        self.judgment.delegated, self.judgment.denied = list(delegated or []), list(denied or [])
        self.judgment.on, self.judgment.worker_model = coordinating, worker_model
        self.judgment.programs = delegation_programs
        self.budget.leader_budget = leader_budget

    @property
    def changed(self) -> bool:
        """Something changed since the shell last looked (take_changed forgets it)."""
        return self.flow.changed

    @property
    def needs_plan(self) -> bool:
        return self.flow.planning

    @property
    def replanning(self) -> bool:
        return self.flow.replanning

    @property
    def ended(self) -> str | None:
        return self.flow.ended

    @property
    def tasks(self) -> dict[str, TaskState]:
        return self.board.tasks

    @property
    def agents(self) -> dict[str, WorkflowAgent]:
        return self.board.agents

    @property
    def active(self) -> dict[str, int]:
        return self.board.active

    @property
    def stall_consults(self) -> dict[str, tuple[int, str, str]]:
        return self.oversight.stall_consults

    @property
    def workspace_queue(self) -> str | None:
        return self.state.run.workspace_queue

    @property
    def lost_queue(self) -> str | None:
        return self.state.run.lost_queue

    def host_claimed(self, queue: str) -> None:
        """The run's workspace lives on the host of ``queue`` (workers that share no disk)."""
        self.state.run.workspace_queue, self.state.run.lost_queue = queue, None
        self.flow.changed = True

    def host_lost(self, queue: str) -> None:
        """The workspace's host is gone: the next workspace agent claims another."""
        self.state.run.workspace_queue, self.state.run.lost_queue = None, queue
        self.flow.changed = True

    def executions(self) -> int:
        """How many times the run continued as new (the state's count)."""
        return self.state.run.continued

    def next_execution(self) -> None:
        """The state is written for the next execution: it carries that one's number."""
        self.state.run.continued += 1

    def stays_here(self) -> None:
        """The state could not be handed on: this execution goes on, its number unchanged."""
        self.state.run.continued -= 1

    def keep_no_budget(self) -> None:
        """A history from before budgets existed had none, and keeps none (patch budgets)."""
        self.budget.state.limits = None

    def take_changed(self) -> bool:
        """Whether anything changed since the last call (and forget it)."""
        changed, self.flow.changed = self.flow.changed, False
        return changed

    def take_outbox(self) -> list[Command]:
        """Commands decided since the last call outside a call that returns them."""
        commands, self.flow.outbox = self.flow.outbox, []
        return commands

    def take_log(self) -> list[str]:
        """The lines to log since the last call (stall-ladder steps, budget escalations)."""
        lines, self.flow.log = self.flow.log, []
        return lines

    def take_settled(self) -> Usage:
        """The usage settled since the last call (and forget it)."""
        settled, self.budget.settled = self.budget.settled, Usage()
        return settled

    # -- the plan ----------------------------------------------------------------------------------

    def planner_started(self) -> None:
        """The planner is at work (a plan from the prompt, or a person's replan)."""
        self.flow.replanning = True

    def planner_finished(self) -> None:
        """The planner's work ended, whatever its outcome: look again."""
        self.flow.replanning = False
        self.flow.changed = True

    def first_plan_finished(self) -> None:
        """The planning of a prompt-only run ended (the main loop has not started yet)."""
        self.flow.replanning = False

    def set_first_plan(self, wf: Workflow, provider: str, now: datetime) -> None:
        """Plan v1 of a run started from a sentence."""
        wf, durable = loops.lower(wf, self.growth.patched)
        self.plans.first(wf, provider, now)
        for line in durable:
            self.plans.note(line, now)
        self.variables = {**wf.variables, **self.input.variables}
        self.board.state.tasks = [new_task(a, self.run_id, self.variables) for a in wf.agents]
        self.inputs.variables = self.checks.variables = self.variables
        self.budget.state.limits = with_plan(self.budget.state.limits, wf.budget)
        self.board.index(wf)
        self.flow.planning = False

    def _replan(self, reason: str, force: bool) -> list[Command]:
        return self.auto_replan(reason, force)

    def auto_replan(self, reason: str, force: bool = False) -> list[Command]:
        """Replan automatically (failures, stalls, a goal not met) while the run's replans last."""
        if self.flow.replanning or not self.plans.may_replan(force):
            return []
        self.flow.replanning = True
        return [CallPlanner(reason)]

    def apply_plan(
        self, wf: Workflow, reason: str, now: datetime, keep_cancelled: bool = True
    ) -> tuple[str, list[Command]]:
        """Make ``wf`` the plan: (what changed, as a person is told it; the attempts to stop).
        ``keep_cancelled``
        False: runs recorded before the patch cancelled-stays-cancelled, whose replans put
        every cancelled task back to pending."""
        self.oversight.withdraw_goal_requests("withdrawn: the plan changed", now)
        wf, durable = loops.lower(wf, self.growth.patched)
        reason = "; ".join([reason, *durable])
        change = merge_plan(
            self.plans.plan, self.board.tasks, wf, self.run_id, keep_cancelled, self.variables
        )
        if wf.budget != self.plans.plan.budget:  # a plan's new budget narrows the run's
            self.budget.state.limits = with_plan(self.budget.state.limits, wf.budget)
        commands: list[Command] = []
        for agent_id in change.stop:
            commands += self.board.stop(
                agent_id, StopReason.CHANGED if agent_id in change.restarted else StopReason.REMOVED
            )
        for request_id in change.withdrawn_requests:
            self.requests.withdraw(request_id, "withdrawn: the plan changed", now)
        for agent_id in change.reset:
            self.requests.withdraw_holds(self.board.tasks[agent_id], "replanned", now)
        self.plans.adopt(wf, f"{reason} — {change.summary()}", now)
        for task in [*change.removed, *change.tasks]:  # a replan starts every ladder over
            self.ladder.forget(task.id)
        self.board.replace(change.tasks, change.removed, wf)
        self.flow.changed = True
        return change.reply(), commands

    def run_cancelled(self, now: datetime) -> None:
        """The run was cancelled (Temporal's cancel): what had not ended is cancelled with it,
        so its board says so and no duration goes on growing."""
        for task in self.board.state.tasks:
            if not task.terminal:
                self.board.set_waiting(task, None)
                self.board.finish(task, "cancelled", now, error="the run was cancelled")
        self.flow.changed = True

    def review_timed_out(self, now: datetime) -> bool:
        """Nobody reviewed the plan in time: approve or end the run. True if it goes on."""
        if self.plans.review_timed_out(now):
            return True
        self.flow.ended = (
            f"cancelled: nobody approved the plan within {self.options.review_timeout:g}s"
        )
        for task in self.board.state.tasks:
            if not task.terminal:
                self.requests.withdraw(task.waiting_on, f"withdrawn: {task.id} cancelled", now)
                self.board.set_waiting(task, None)
                self.board.finish(task, "cancelled", now, error="the plan was never approved")
        self.flow.changed = True
        return False

    # -- the run's course --------------------------------------------------------------------------

    def finished(self) -> bool:
        """Nothing runs and nothing can start: every task is terminal, blocked, or paused."""
        if self.flow.ended:
            return not self.board.active and not self.flow.replanning
        if self.board.active or self.flow.replanning:
            return False
        if self.requests.pending:
            return False  # a person still has to answer
        if any(t.held and not t.terminal for t in self.board.state.tasks):
            return False  # an agent a person paused waits for resume_task (or the run's end)
        return not self.board.any_ready()  # ready work while paused waits for resume

    def begin_drain(self) -> None:
        """Continue-as-new is due: start nothing new until the run is handed on."""
        self.flow.draining = True

    def drain_failed(self) -> None:
        """The run could not be handed on: go on here, and dispatch again."""
        self.flow.draining = False
        self.flow.changed = True

    def begin_close(self) -> None:
        """Every task is done: the run is about to return (interventions are refused)."""
        self.flow.closing = True

    def dispatch(self, now: datetime, past_wait: Callable[[], bool] | None = None) -> list[Command]:
        """Start ready agents, in plan order, while there is room (and the budget admits them);
        ``past_wait()`` (a patch, asked when it matters): past a task the budget makes wait,
        those spending none of it (direct tools) start."""
        flow = self.flow
        if (
            self.state.run.paused
            or flow.replanning
            or flow.draining
            or flow.ended
            or self.plans.reviewing
        ):
            return []
        room = self.options.max_parallel - len(self.board.active)
        starts: list[Command] = []
        held: list[tuple[int, str]] = []  # new tasks past the run's agent count
        waiting: list[tuple[int, str]] = []  # tasks the run's budget has no room for yet
        blocked = False
        while room > 0 and self.board.any_ready():
            entry = self.board.pop_ready()
            task = self.board.tasks[entry[1]]
            if self.growth.instead_of_start(task, now):  # a forEach or a watch grows the plan
                continue
            if waiting and self.budget.model(task.agent_id):
                waiting.append(entry)  # a model agent waits as the one before it does
                continue
            verdict, said = self.budget.admit(task, now, bool(waiting))
            if said is not None:  # an escalation about the budget is new, or says new figures
                self.flow.changed = True
                if said:
                    self.flow.log.append(said)
            if verdict.kind == "wait":  # the run's budget has no room for it
                blocked = blocked or verdict.hard
                if past_wait is not None and self.board.any_ready() and past_wait():
                    waiting.append(entry)  # the next may spend nothing of it
                    continue
                self.board.push_back(entry)
                break
            if verdict.kind != "start":  # held back, or waiting on its own E-n
                held += [entry] if verdict.kind == "hold" else []
                blocked = blocked or verdict.kind == "hold"
                continue
            dispatch = self.board.start(task, now)
            if self.budget.limits is not None:
                self.budget.reserve(task, verdict.share, now)
            starts.append(StartAgent(task.agent_id, dispatch))
            room -= 1
        for entry in held + waiting:
            self.board.push_back(entry)
        self.budget.budget_settled(blocked, bool(starts), now)
        return starts

    def poll_ended(self, agent_id: str, now: datetime) -> None:
        """A task completed or was skipped: a watch's poll grows its watch."""
        self.growth.poll_ended(agent_id, now)

    # -- an attempt's end --------------------------------------------------------------------------

    def cannot_start(self, agent_id: str, why: str, now: datetime) -> None:
        """The attempt's input could not be made (a reference that cannot be rendered)."""
        self.budget.flight_unused(agent_id)
        self.board.finish(self.board.tasks[agent_id], "failed", now, error=f"cannot start: {why}")
        self.flow.changed = True

    def attempt_failed(
        self,
        agent_id: str,
        task: TaskState,
        dispatch: int,
        failure: AttemptFailure | None,
        now: datetime,
    ) -> list[Command]:
        """The attempt raised (``failure``) or was cancelled (``None``): settle what it spent;
        unless it was stopped on purpose, the task fails — and is replanned automatically, or
        held for a person, when the run says so."""
        if self.budget.settle_usage(agent_id, failure.usage if failure else None, dispatch):
            self.flow.changed = True
        intent = self.board.intents.pop(agent_id, None)
        if not self.board.current(agent_id, dispatch, task):
            return []  # an earlier dispatch, or a task a replan removed
        if failure is not None:
            self.audit.decisions(task, failure.decisions)
            self.board.observe_attempt(task, failure.attempt)
        if intent is not None:
            self._after_stop(task, intent, now)
            return []
        if failure is None:
            return []
        self.board.finish(task, "failed", now, error=failure.message)
        self.flow.changed = True
        replan: list[Command] = []
        # Workers kept dying (replanning the agent would not help), or the failure would
        # repeat — a replan would most likely run the same step again (a deploy, a
        # migration): the person decides (retry, skip, replan), nothing repeats on its own.
        if not failure.lost and (not failure.deterministic or self.options.replan_deterministic):
            replan = self.auto_replan(f"{task.id} failed: {task.error}")
        if not replan and self.options.hold_on_failure > 0:
            self.requests.hold(task, now)
        return replan

    def attempt_succeeded(
        self,
        agent_id: str,
        task: TaskState,
        dispatch: int,
        outcome: AgentOutcome,
        now: datetime,
        judged: ConsultOutcome | None = None,
    ) -> None:
        """The attempt returned ``outcome``; ``judged``: what the coordinator said of it, None
        when it was not asked. In order: the budget settles what it spent; a late completion
        is dropped; the permission log takes its decisions; then the result is judged and
        taken, the budget stop set aside, or the request raised (and judged)."""
        if self.budget.settle_usage(agent_id, outcome.usage, dispatch):  # spend is spend
            self.flow.changed = True
        intent = self.board.intents.pop(agent_id, None)
        if not self.board.current(agent_id, dispatch, task):
            return  # a late completion of an earlier dispatch: dropped
        self.audit.decisions(task, outcome.decisions)
        if intent is not None and intent not in (StopReason.PAUSE, StopReason.RESTART):
            # It finished just as it was stopped: the decision already made stands (and a
            # result of a definition the plan has since changed is not kept).
            self._after_stop(task, intent, now)
            return
        self.board.attempt_ended_with(task, outcome)
        self.flow.changed = True
        if outcome.kind == "completed":
            if not self.results.take(task, outcome, now, judged):
                self._complete(task, outcome, now)
                self.poll_ended(agent_id, now)
            return
        if outcome.kind == "budget":
            self.budget.budget_stopped(task, outcome)
            return
        request = self._raise(task, outcome, now)
        self.asks.requested(task, request, now, judged)

    def _complete(self, task: TaskState, outcome: AgentOutcome, now: datetime) -> None:
        task.provider = outcome.provider
        task.result = outcome.result
        task.result_ref = outcome.result_ref
        task.artifacts = outcome.artifacts
        self.board.finish(task, "completed", now)

    def _raise(self, task: TaskState, outcome: AgentOutcome, now: datetime) -> HumanRequest:
        """The attempt asks a person: a question, or the approval of a tool call."""
        req = outcome.request
        assert req is not None, "a question or approval outcome carries its request"
        if outcome.kind == "question":
            question = cut(req.question or "(no question text)", QUESTION_CHARS)
            request = self.requests.new("question", task, question, now)
            if req.choices:  # a call in doubt: its call, for the delegated rules and the board
                request.choices, request.tool, request.arguments = (
                    req.choices,
                    req.tool,
                    req.arguments,
                )
        else:
            args = ", ".join(f"{k}={v!r}" for k, v in (req.arguments or {}).items())
            request = self.requests.new("approval", task, f"{req.tool}({args[:300]})", now)
            request.tool, request.arguments, request.rule = req.tool, req.arguments, req.rule
            request.hard = req.hard
        self.board.set_stored(task, "pending")
        self.board.set_waiting(task, request.id)
        task.last_progress = f"waiting for {request.id}: {request.text[:100]}"
        return request

    def _after_stop(self, task: TaskState, intent: StopReason, now: datetime) -> None:
        """A running attempt we stopped on purpose has ended; put the task where it belongs."""
        if intent in (StopReason.PAUSE, StopReason.RESTART, StopReason.CHANGED):
            self.board.back_to_pending(task)  # runs again (from its checkpoint) in its turn
        elif intent == StopReason.RUN_CANCEL:
            self.board.finish(task, "cancelled", now, error="the run was cancelled")
            self.flow.changed = True
        # "cancel", "skip" and "abandon" set the task's state when they were decided;
        # "removed": the task left the board.

    def attempt_ended(self, agent_id: str, dispatch: int) -> None:
        """The attempt's activity is over, whatever its end: its hold on the budget goes and
        its slot is free."""
        self.budget.flight_ended(agent_id, dispatch)
        self.board.ended(agent_id, dispatch)
        self.flow.changed = True

    def report_progress(self, report: ProgressReport, now: datetime) -> None:
        """An attempt says it is alive and moving: the budget settles what it reported; the
        board takes its start and note; progress starts the stall ladder over."""
        agent_id = report.task_id.removeprefix("T-")
        if self.budget.settle_usage(
            agent_id, report.usage, report.dispatch if report.final else None
        ):
            self.flow.changed = True
        task = self.board.task_by_id(report.task_id)
        if task is None or report.dispatch != task.attempt or task.stored not in RUNNING:
            return  # a report from an earlier dispatch, or about a finished task
        self.board.progressed(task, report, now)
        if report.progress:
            self.ladder.progressed(task.id)
        self.flow.changed = True

    # -- time passing --------------------------------------------------------------------------------

    def tick(self, now: datetime, checked: Collection[str] | None = None) -> list[Command]:
        """Time passed: a review past its deadline is decided, requests past theirs expire,
        the stall ladder climbs (``checked``: only for the tasks whose attempt the server
        was asked about, see :meth:`stalls_due`)."""
        review_due = self.plans.review_due()
        if review_due is not None and now >= review_due:
            # An automatic replan's review (a first plan's is timed by the shell's review gate).
            stops = (
                []
                if self.options.review_timeout_action == "approve"
                else self.board.stop_everything(StopReason.RUN_CANCEL)
            )
            self.review_timed_out(now)
            self.flow.changed = True
            return stops
        for request in self.requests.due(now):
            self.flow.changed = True
            if request.about == "budget":
                ended = self.budget.expired(request, now)
                if ended is not None:  # (what did not run is not run: Budget.expired)
                    self.flow.ended, self.flow.ended_failed = ended, True
                continue
            task = self.board.task_by_id(request.task_id)
            if task is not None and task.waiting_on == request.id:
                self.board.set_waiting(task, None)
                self.board.finish(
                    task,
                    "failed",
                    now,
                    error=f"no answer to {request.id} within {self.options.request_timeout:g}s",
                )
        return self._stalls(now, checked)

    def stalls_due(self, now: datetime) -> list[str]:
        """The running tasks (ids) whose next rung is due: the workflow asks the server whether
        their attempts run (:meth:`attempts_seen`) before the ladder climbs."""
        return [task.id for task, _, _ in self.ladder.due(now)]

    def attempts_seen(
        self, task_ids: Collection[str], pending: list[PendingAttempt], now: datetime
    ) -> None:
        """The server's word on the attempts of ``task_ids`` (their rungs due)."""
        for task_id, note in self.ladder.attempts_seen(task_ids, pending, now):
            if note is not None:
                self.flow.log.append(f"stall ladder: {task_id} not climbed, {note}")
            self.flow.changed = True

    def _stalls(self, now: datetime, checked: Collection[str] | None = None) -> list[Command]:
        """Each running task whose next rung is due: the coordinator looks for the root cause,
        or the ladder climbs."""
        commands: list[Command] = []
        for task, action, message in self.ladder.due(now, checked):
            self.flow.log.append(self.ladder.logged(task, action, message, now))
            self.flow.changed = True
            judging = self.oversight.judge_stall(task, action, message, now)
            if judging is not None:  # the coordinator finds the root cause instead
                commands += judging
                continue
            commands += self.ladder.climb(task, action, message, now)
        return commands

    def next_deadline(self, now: datetime) -> datetime | None:
        """The earliest moment time alone would change something: a request's deadline, the
        review's, a stall ladder's next rung."""
        due = self.requests.deadlines()
        if self.plans.reviewing and self.plans.state.review_deadline is not None:
            due.append(self.plans.state.review_deadline)
        due += self.ladder.deadlines(now, self.oversight.stall_consults)
        return min(due) if due else None

    # -- the coordinator ---------------------------------------------------------------------------

    def review_of(
        self, agent_id: str, dispatch: int, outcome: AgentOutcome, now: datetime | None = None
    ) -> ConsultInput | None:
        """What to ask the coordinator before this attempt's outcome is taken (None: nothing,
        or the run's budget has no room for the question: its hold is taken here).

        A model agent's completed answer (not one a mechanical rule already refuses), a
        question, a tool request."""
        asked = consultation(
            self.judgment,
            self.asks,
            self.board.intents,
            self.board.tasks.get(agent_id),
            dispatch,
            outcome,
        )
        if asked is None or now is None:
            return asked
        self.board.tasks[agent_id].check = None
        held = self.judgment.hold(asked, now)
        if held is None:
            self.flow.changed = True
        return held

    def judging(self, agent_id: str, point: Point, now: datetime) -> None:
        """The coordinator is being asked about this attempt's outcome (its clock restarts)."""
        if self.judgment.judging(agent_id, point, now):
            self.flow.changed = True

    def stall_judged(
        self, agent_id: str, judged: ConsultOutcome | None, now: datetime
    ) -> list[Command]:
        """The coordinator's view of a stall (None: it could not be asked)."""
        self.flow.changed = True
        return self.oversight.stall_judged(agent_id, judged, now)

    def goal_review(self, now: datetime) -> ConsultInput | None:
        """When every task is done: what to ask the coordinator about the goal (None: nothing)."""
        return self.oversight.goal_review(now)

    def goal_judged(
        self, version: int, judged: ConsultOutcome | None, now: datetime
    ) -> list[Command]:
        """The coordinator's verdict on the goal of plan ``version``."""
        asked = self.requests.state.seq
        commands = self.oversight.goal_judged(version, judged, now)
        if self.requests.state.seq != asked:  # an escalation about the goal waits for a person
            self.flow.changed = True
        return commands

    # -- the budget ------------------------------------------------------------------------------------

    def settle(self, source: str, usage: Usage) -> None:
        """Usage not tied to a task's dispatch (the planner's): counted under its source."""
        if self.budget.settle(source, usage):
            self.flow.changed = True

    @property
    def flights(self) -> dict[str, Flight]:
        return self.budget.flights

    @property
    def leader_holds(self) -> dict[str, BudgetShare]:
        return self.budget.leader_holds

    # -- an attempt's input ----------------------------------------------------------------------------

    # -- people: lookups ----------------------------------------------------------------------------

    def pending_requests(self, with_review: bool = False) -> list[HumanRequest]:
        """Requests waiting for a person; ``with_review``: the plan review as one of them."""
        show = with_review and not self.flow.planning
        return self.requests.listed(self.plans.state if show else None)

    def nudges_for(self, task_id: str) -> list[str]:
        task = self.board.task_by_id(task_id)
        return self.briefs.nudges_for(task.id) if task is not None else []

    # -- what people see (read only: xsky/leader/views.py) --------------------------------------------------

    def continue_input(self) -> RunInput:
        """The next run's input: the same run, carrying the whole state."""
        self.state.run.continued += 1
        return next_input(self.input, self.plans.plan, self.options, self.state)


__all__ = [
    "AUDIT_KEEP",
    "INLINE_AGENTS",
    "INLINE_RESULT_BUDGET",
    "LOCAL_SECONDS",
    "MAX_RETRY_NOTES",
    "PLANNER_RESULT_CHARS",
    "PLAN_PAGE",
    "RUNNING",
    "SATISFIED",
    "AttemptFailure",
    "CallPlanner",
    "Command",
    "Consult",
    "LeaderCore",
    "Rejected",
    "StartAgent",
    "StopAgent",
    "StopReason",
]
