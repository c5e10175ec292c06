"""The core's state and the indexes kept beside it: the ready heap, each task's count of
unfinished dependencies, its dependents, and counts of tasks by status — so that per-event
cost does not grow with the plan."""

from __future__ import annotations

import heapq
from datetime import datetime, timedelta

from xsky.leader.commands import SATISFIED, Command, Flight, StopReason
from xsky.leader.replan import new_task
from xsky.leader.state import (
    LeaderState,
    PlanVersion,
)
from xsky.leader.tasks import StoredStatus, TaskState
from xsky.plan import dag
from xsky.plan.budget import BudgetShare, Usage, with_plan
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.plan.xml import workflow_to_xml
from xsky.runs import (
    ResumeFrom,
    RunInput,
)


class CoreBase:
    """One run's durable :class:`LeaderState` and the indexes kept beside it."""

    def __init__(self, inp: RunInput, run_id: str, now: datetime) -> None:
        self.input = inp
        self.options = inp.options
        self.run_id = run_id
        # A prompt-only run starts with an empty plan; the shell asks the planner for one.
        self.needs_plan = inp.state is None and inp.workflow is None
        first = (
            (inp.state.plan if inp.state is not None else None)
            or inp.workflow
            or Workflow(
                name=" ".join((inp.task_prompt or "").split())[:80],
                task_id=inp.task_id or run_id,
                task_prompt=inp.task_prompt,
            )
        )
        self.variables = {**first.variables, **inp.variables}
        if inp.state is not None:
            self.state = inp.state
        else:
            self.state = LeaderState(
                plan=first,
                plan_history=[]
                if self.needs_plan
                else [
                    PlanVersion(
                        version=1, xml=workflow_to_xml(first), reason="initial plan", at=now
                    )
                ],
                tasks=[new_task(a, run_id) for a in first.agents],
                started_at=now,
                review="waiting" if inp.options.review else "none",
                review_deadline=now + timedelta(seconds=inp.options.review_timeout)
                if inp.options.review
                else None,
                budget=with_plan(inp.options.budget, first.budget),
            )
            if inp.resume is not None:
                self._carry(inp.resume)
        # agent id → the dispatch whose attempt has not ended yet
        self.active: dict[str, int] = {}
        # agent id → why its running attempt is being stopped
        self.intents: dict[str, StopReason] = {}
        # The flags below are the core's own: the shell reads them and moves them only through
        # the events after __init__ (planner_started, begin_close, take_changed, …).
        self.replanning = False
        # continue-as-new is due: start nothing new
        self.draining = False
        # set when the run ends early (review timed out)
        self.ended: str | None = None
        # the run is about to return
        self.closing = False
        # ended by end_run: its status is its tasks' (failed when any failed), not "cancelled"
        self.ended_by_person = False
        # ended because nobody raised a spent budget: failed, whatever its tasks' states
        self.ended_failed = False
        # something changed since the shell last looked (it wakes the main loop)
        self.changed = False
        # what the shell should log (stall-ladder steps), taken by take_log
        self.log: list[str] = []
        # agent id → (dispatch, ladder step, its message) of a stall the coordinator judges;
        # workflow-local: a run drains them before it continues as new
        self.stall_consults: dict[str, tuple[int, str, str]] = {}
        # Set by the shell (patch leader-coordinator): the coordinator is consulted and the
        # mechanical rules apply. The rules the person delegated to the leader, and the deny
        # rules it never overrides (the worker's and the run's settings).
        self.coordinating = False
        self.delegated: list[str] = []
        self.denied: list[str] = []
        self.worker_model: str | None = None  # the leader worker's coordinator model, if any
        # commands decided where no commands are returned (a person's answer asking for a
        # replan): the shell takes them with take_outbox
        self.outbox: list[Command] = []
        # agent id → its dispatch's hold on the budget (a run with a budget: xsky/leader/budget.py)
        self.flights: dict[str, Flight] = {}
        # Set by the shell (patch leader-budget-holds): the leader's own model calls (coordinator,
        # planner) hold a share of the budget while they run, as agents do; their holds by key
        # (workflow-local: a run drains its consultations and replans before it continues as new).
        self.leader_budget = False
        # Set by the shell (patch delegation-program-forms): a delegated rule approves no call
        # that runs a program or takes an option the checker does not know (xsky/security/
        # delegation.py); before, the rule's words alone decided.
        self.delegation_programs = True
        self.leader_holds: dict[str, BudgetShare] = {}
        # what they hold, kept during one dispatch pass (None between passes)
        self.holding: tuple[int, float] | None = None
        # usage settled since the shell last took it (for its metrics)
        self.settled = Usage()
        self._index()

    def _carry(self, resume: ResumeFrom) -> None:
        """A follow-up run: what completed in the run it resumes stays completed, with its
        result; the agents to run again, and every agent that depends on them, start afresh."""
        plan = self.state.plan
        again = set(resume.rerun)
        for agent_id in resume.rerun:
            again.update(dag.descendants(plan, agent_id))
        reports = {r.id: r for r in resume.carried if r.status in SATISFIED}
        carried = []
        for task in self.state.tasks:
            report = reports.get(task.agent_id)
            if report is None or task.agent_id in again:
                continue
            task.stored = "skipped" if report.status == "skipped" else "completed"
            task.result, task.result_ref = report.result, report.result_ref
            task.artifacts = list(report.artifacts)
            task.started_at, task.ended_at = report.started_at, report.ended_at
            task.last_progress = f"carried from {resume.run_id}"
            carried.append(task.id)
        order = {a.id: i for i, a in enumerate(plan.agents)}
        if self.state.plan_history:
            first = self.state.plan_history[0]
            first.reason = (
                f"resumes {resume.run_id}: {len(carried)} results carried over; "
                f"{', '.join('T-' + a for a in sorted(again, key=lambda a: order.get(a, len(order)))) or 'nothing'} "
                "run again"
            )
        self.state.resumes = resume.run_id

    def note_history(self, note: str, now: datetime) -> None:
        """A note about the current version (no XML copy: the version's own entry holds it)."""
        version = (
            self.state.plan_history[-1].version
            if self.state.plan_history
            else self.state.plan_version
        )
        self.state.plan_history.append(PlanVersion(version=version, xml="", reason=note, at=now))

    # -- events from the shell -------------------------------------------------------------------

    def planner_started(self) -> None:
        """The planner is at work (a plan from the prompt, or a person's replan)."""
        self.replanning = True

    def planner_finished(self) -> None:
        """The planner's work ended, whatever its outcome: look again."""
        self.replanning = False
        self.changed = True

    def first_plan_finished(self) -> None:
        """The planning of a prompt-only run ended (the main loop has not started yet)."""
        self.replanning = False

    def begin_drain(self) -> None:
        """Continue-as-new is due: start nothing new until the run is handed on."""
        self.draining = True

    def drain_failed(self) -> None:
        """The run could not be handed on: go on here, and dispatch again."""
        self.draining = False
        self.changed = True

    def begin_close(self) -> None:
        """Every task is done: the run is about to return (interventions are refused)."""
        self.closing = True

    def take_changed(self) -> bool:
        """Whether anything changed since the last call (and forget it)."""
        changed, self.changed = self.changed, False
        return changed

    def take_outbox(self) -> list[Command]:
        """Commands decided since the last call outside a call that returns them."""
        commands, self.outbox = self.outbox, []
        return commands

    def take_log(self) -> list[str]:
        """The lines to log since the last call (stall-ladder steps)."""
        lines, self.log = self.log, []
        return lines

    def take_settled(self) -> Usage:
        """The usage settled since the last call (and forget it)."""
        settled, self.settled = self.settled, Usage()
        return settled

    # -- indexes ---------------------------------------------------------------------------------

    def _index(self) -> None:
        """Rebuild every index from the state (at start, and after a plan changes)."""
        self.tasks: dict[str, TaskState] = {t.agent_id: t for t in self.state.tasks}
        self.agents: dict[str, WorkflowAgent] = {a.id: a for a in self.state.plan.agents}
        self._order = {a.id: i for i, a in enumerate(self.state.plan.agents)}
        self._dependents: dict[str, list[str]] = {a.id: [] for a in self.state.plan.agents}
        for a in self.state.plan.agents:
            for d in a.depends:
                if d in self._dependents:
                    self._dependents[d].append(a.id)
        self._missing = {
            a.id: sum(
                1 for d in a.depends if d in self.tasks and self.tasks[d].stored not in SATISFIED
            )
            for a in self.state.plan.agents
        }
        self._heap: list[tuple[int, str]] = []
        for a in self.state.plan.agents:
            self._consider(a.id)
        self._pending_requests = [r for r in self.state.requests if r.status == "pending"]
        self.counts: dict[str, int] = {}  # tasks by stored status
        for t in self.state.tasks:
            self.counts[t.stored] = self.counts.get(t.stored, 0) + 1
        self._nudges: dict[str, list[str]] = {}
        for n in self.state.nudges:
            self._nudges.setdefault(n.task_id, []).append(n.message)

    def _consider(self, agent_id: str) -> None:
        """Push ``agent_id`` on the ready heap if it may be ready (checked again when popped)."""
        if self._is_ready(agent_id):
            heapq.heappush(self._heap, (self._order[agent_id], agent_id))

    def _is_ready(self, agent_id: str) -> bool:
        task = self.tasks.get(agent_id)
        return (
            task is not None
            and agent_id not in self.active  # an earlier attempt is still winding down
            and task.stored == "pending"
            and task.waiting_on is None
            and self._missing.get(agent_id, 0) == 0
        )

    def _set_stored(self, task: TaskState, status: StoredStatus) -> None:
        """Every change of a task's stored status goes through here (dependents' counts)."""
        was = task.stored in SATISFIED
        self.counts[task.stored] -= 1
        self.counts[status] = self.counts.get(status, 0) + 1
        task.stored = status
        now_ok = status in SATISFIED
        if was != now_ok:
            for child in self._dependents.get(task.agent_id, []):
                self._missing[child] += -1 if now_ok else 1
                if now_ok:
                    self._consider(child)
        if status == "pending":
            self._consider(task.agent_id)

    def _set_waiting(self, task: TaskState, request_id: str | None) -> None:
        task.waiting_on = request_id
        if request_id is None:
            self._consider(task.agent_id)

    def ready_ids(self) -> list[str]:
        """Ready tasks in plan order (the heap's valid entries; stale ones are dropped)."""
        valid = sorted({(o, a) for o, a in self._heap if self._is_ready(a)})
        self._heap = list(valid)
        heapq.heapify(self._heap)
        return [a for _, a in valid]

    def _any_ready(self) -> bool:
        while self._heap and not self._is_ready(self._heap[0][1]):
            heapq.heappop(self._heap)
        return bool(self._heap)
