"""The task board: a task per agent of the plan, and the ready set kept beside it.

Per-event cost does not grow with the plan: the ready set is a heap of plan positions, each
task counts its unfinished dependencies, and status counters are kept as states change. Every
change of a task's stored status goes through :meth:`TaskBoard.set_stored`, which keeps them.
Whole-board work (derived ``blocked`` statuses, the board's rows) happens only in queries and
when the board is published (xsky/leader/views.py).

The attempts in flight (``active``) and why a running one is being stopped (``intents``) are
the board's too: an agent is ready only when no earlier attempt of it is still winding down.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from datetime import datetime

from xsky.leader.commands import (
    MAX_RETRY_NOTES,
    SATISFIED,
    Command,
    Rejected,
    StopAgent,
    StopReason,
)
from xsky.leader.limits import ERROR_CHARS, NOTE_CHARS, cut
from xsky.leader.stall import NOT_RUNNING
from xsky.leader.state import BoardState
from xsky.leader.tasks import StoredStatus, TaskState, derive_statuses
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentOutcome, ProgressReport

# What a task's row says while the leader's coordinator judges its attempt (by point): gone
# once the task ends (xsky/leader/coordinator/judgment.py sets it).
JUDGING = {
    "result": "the leader checks the result against its task",
    "question": "the leader looks at the question",
    "approval": "the leader looks at the tool request",
    "": "the leader judges",
}


class TaskBoard:
    """The tasks of the plan in force, their indexes, and the attempts in flight."""

    def __init__(self, state: BoardState, plan: Workflow) -> None:
        self.state = state
        # the workflow's patch question (xsky/leader/growth.py Patched), asked where it matters
        self.patched: Callable[[str], bool] = lambda patch_id: True
        # agent id → the dispatch whose attempt has not ended yet
        self.active: dict[str, int] = {}
        # agent id → why its running attempt is being stopped
        self.intents: dict[str, StopReason] = {}
        self.index(plan)

    # -- indexes ---------------------------------------------------------------------------------

    def index(self, plan: Workflow) -> None:
        """Rebuild every index from the tasks and ``plan`` (at start, and after a plan changes).

        This runs in a continued execution's first workflow task, and again in every retry of
        that task: for a 30,000-agent run, a pass over 30,000 tasks. A model's field costs
        ~0.5 µs to read (pydantic's class), so each field is read once per task and agent,
        and each dependency is one lookup in a set. The ready test is :meth:`is_ready`,
        written out. The indexes and the heap's pushes are the same as :meth:`consider` per
        agent gives (tests/unit/test_leader_board.py checks this)."""
        tasks: dict[str, TaskState] = {}
        stored_of: dict[str, StoredStatus] = {}
        counts: dict[str, int] = {}  # tasks by stored status
        for t in self.state.tasks:
            agent_id, stored = t.agent_id, t.stored
            tasks[agent_id] = t
            stored_of[agent_id] = stored
            counts[stored] = counts.get(stored, 0) + 1
        self.tasks = tasks
        self.counts = counts
        agents = plan.agents
        ids = [a.id for a in agents]
        self.agents: dict[str, WorkflowAgent] = dict(zip(ids, agents, strict=True))
        self._order = {agent_id: i for i, agent_id in enumerate(ids)}
        dependents: dict[str, list[str]] = {agent_id: [] for agent_id in ids}
        self._dependents = dependents
        # the tasks a dependent waits for (only ever asked whether it holds one: no order)
        unfinished = {a for a, stored in stored_of.items() if stored not in SATISFIED}
        missing_by: dict[str, int] = {}
        for agent_id, a in zip(ids, agents, strict=True):
            missing = 0
            for d in a.depends:
                if d in dependents:
                    dependents[d].append(agent_id)
                if d in unfinished:
                    missing += 1
            missing_by[agent_id] = missing
        self._missing = missing_by
        self._heap: list[tuple[int, str]] = []
        active = self.active
        for agent_id in ids:  # (after every count: an id the plan held twice counts as its last)
            if stored_of.get(agent_id) == "pending" and not missing_by[agent_id]:
                task = tasks[agent_id]
                if task.waiting_on is None and not task.held and agent_id not in active:
                    heapq.heappush(self._heap, (self._order[agent_id], agent_id))

    def consider(self, agent_id: str) -> None:
        """Push ``agent_id`` on the ready heap if it may be ready (checked again when popped)."""
        if self.is_ready(agent_id):
            heapq.heappush(self._heap, (self._order[agent_id], agent_id))

    def is_ready(self, agent_id: str) -> bool:
        task = self.tasks.get(agent_id)
        return (
            task is not None
            and agent_id not in self.active  # an earlier attempt is still winding down
            and task.stored == "pending"
            and task.waiting_on is None
            and not task.held  # paused by a person, alone (pause_task)
            and self._missing.get(agent_id, 0) == 0
        )

    def ready_ids(self) -> list[str]:
        """Ready tasks in plan order (the heap's valid entries; stale ones are dropped)."""
        valid = sorted({(o, a) for o, a in self._heap if self.is_ready(a)})
        self._heap = list(valid)
        heapq.heapify(self._heap)
        return [a for _, a in valid]

    def any_ready(self) -> bool:
        while self._heap and not self.is_ready(self._heap[0][1]):
            heapq.heappop(self._heap)
        return bool(self._heap)

    def first_ready(self) -> TaskState | None:
        return self.tasks[self._heap[0][1]] if self.any_ready() else None

    def pop_ready(self) -> tuple[int, str]:
        return heapq.heappop(self._heap)

    def push_back(self, entry: tuple[int, str]) -> None:
        heapq.heappush(self._heap, entry)

    def missing(self, agent_id: str) -> int:
        """Dependencies of ``agent_id`` not yet completed or skipped."""
        return self._missing.get(agent_id, 0)

    # -- lookups ---------------------------------------------------------------------------------

    def task_by_id(self, task_id: str) -> TaskState | None:
        """A task by ``T-3`` or ``3``."""
        agent_id = task_id[2:] if task_id.startswith("T-") else task_id
        return self.tasks.get(agent_id)

    def require(self, task_id: str, plan_version: int) -> TaskState:
        task = self.task_by_id(task_id)
        if task is None:
            known = ", ".join(t.id for t in self.state.tasks[:20])
            raise Rejected(f"no task {task_id!r} in plan v{plan_version}; tasks: {known}")
        return task

    def status(self, task: TaskState) -> str:
        return derive_statuses({t.id: t for t in self.state.tasks})[task.id][0]

    def row(self, agent_id: str) -> TaskState | None:
        """The board's row of an agent, or of one a replan removed (spend is spend)."""
        task = self.tasks.get(agent_id)
        if task is None:
            task = next((t for t in reversed(self.state.removed) if t.agent_id == agent_id), None)
        return task

    def current(self, agent_id: str, dispatch: int, task: TaskState) -> bool:
        """Is this the task's latest dispatch, and the task still on the board?"""
        return dispatch == task.attempt and self.tasks.get(agent_id) is task

    # -- a task's course -------------------------------------------------------------------------

    def set_stored(self, task: TaskState, status: StoredStatus) -> None:
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
                    self.consider(child)
        if status == "pending":
            self.consider(task.agent_id)

    def set_waiting(self, task: TaskState, request_id: str | None) -> None:
        was, task.waiting_on = task.waiting_on, request_id
        if request_id is None:
            # The note said what it waited for ("waiting for Q-1: Which region…"): answered,
            # it stayed on the board (and in the live page's next event) until a new report.
            if (
                was is not None
                and (task.last_progress or "").startswith(f"waiting for {was}:")
                and self.patched("answered-wait-note-cleared")
            ):
                task.last_progress = None
            self.consider(task.agent_id)

    def start(self, task: TaskState, now: datetime) -> int:
        """A dispatch of ``task``: its number."""
        self.set_stored(task, "dispatched")
        task.attempt += 1
        task.dispatched_at = now
        task.started_at = task.ended_at = task.last_progress_at = None
        task.error = None
        task.tries += 1
        task.activity_attempt = 1
        self.active[task.agent_id] = task.attempt
        return task.attempt

    def ended(self, agent_id: str, dispatch: int) -> None:
        """The attempt's activity is over, whatever its end: its slot is free."""
        if self.active.get(agent_id) == dispatch:
            del self.active[agent_id]
            self.consider(agent_id)

    @staticmethod
    def observe_attempt(task: TaskState, attempt: int, previous: str | None = None) -> None:
        """Temporal retried the dispatch: count the tries, and say why when it is known."""
        if attempt <= task.activity_attempt:
            return
        task.tries += attempt - task.activity_attempt
        task.retries.append(f"attempt {attempt} after " + (previous or "a failed or lost attempt"))
        del task.retries[:-MAX_RETRY_NOTES]
        task.activity_attempt = attempt

    def attempt_ended_with(self, task: TaskState, outcome: AgentOutcome) -> None:
        """What an attempt's outcome says of the task's course: tries, tokens, its real start,
        the host it ran on."""
        self.observe_attempt(task, outcome.attempt)
        # An outcome's tokens are its conversation's running total (a resumed agent's include
        # its earlier dispatches'): added, a task that asked a question counted them twice.
        # What the budget settled counts every conversation once (xsky/leader/budget.py).
        spent = task.spend.usage.tokens if task.spend is not None else 0
        task.tokens = max(task.tokens, outcome.tokens, spent)
        task.iterations = max(task.iterations, outcome.iterations)
        if outcome.started_at is not None:
            # the attempt that ended: time queued after a lost worker is not work
            task.started_at = outcome.started_at
        task.host = outcome.host or task.host

    def progressed(self, task: TaskState, report: ProgressReport, now: datetime) -> None:
        """A running attempt's report: its tries, its real start and host, in progress now,
        its note (with progress), its iterations and tokens."""
        self.observe_attempt(
            task,
            report.activity_attempt,
            cut(report.previous, NOTE_CHARS) if report.previous else None,
        )
        if report.started_at is not None and report.activity_attempt >= task.activity_attempt:
            # this attempt's real start, not when the signal came
            task.started_at = report.started_at
            task.host = report.host or task.host
        if task.stored == "dispatched":
            self.set_stored(task, "in_progress")
            task.started_at = task.started_at or now
        if (task.last_progress or "").startswith(NOT_RUNNING) and self.patched(
            "stall-waits-for-worker"
        ):  # a worker has it now (the note is the ladder's, not an agent's own words: review19)
            task.last_progress = None
        if report.progress:
            task.last_progress_at = now
            if report.message:
                task.last_progress = task.agent_note = cut(report.message, NOTE_CHARS)
        task.iterations = max(task.iterations, report.iteration)
        task.tokens = max(task.tokens, report.tokens)

    def finish(
        self, task: TaskState, status: StoredStatus, now: datetime, *, error: str | None = None
    ) -> None:
        self.set_stored(task, status)
        task.error = cut(error, ERROR_CHARS) if error else error
        task.ended_at = now
        if task.last_progress and (
            task.last_progress.startswith("waiting for ") or task.last_progress in JUDGING.values()
        ):
            task.last_progress = None  # it waits for nothing now, nor for the leader's judgment
        if task.started_at is None:
            task.started_at = task.dispatched_at

    def back_to_pending(self, task: TaskState) -> None:
        """The task runs again when its turn comes (from its checkpoint)."""
        self.set_stored(task, "pending")
        task.started_at = None

    def stop(self, agent_id: str, intent: StopReason) -> list[Command]:
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
        return [c for agent_id in list(self.active) for c in self.stop(agent_id, intent)]

    def replace(self, tasks: list[TaskState], removed: list[TaskState], plan: Workflow) -> None:
        """A new plan's board (its tasks in its order), the removed kept without results."""
        self.state.removed += [t.model_copy(update={"result": None}) for t in removed]
        self.state.tasks = tasks
        self.index(plan)
