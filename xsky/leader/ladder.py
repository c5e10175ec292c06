"""The stall ladder, as the core climbs it: for a running task without progress, nudge →
restart from its checkpoint → replan (while the run's replans last) → escalate to a person;
any progress starts it over (xsky/leader/stall.py has the rungs' timing and words). Past the
nudge, the coordinator may look for the root cause first (the router asks it)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from datetime import datetime, timedelta

from xsky.leader.board import TaskBoard
from xsky.leader.briefs import Briefs
from xsky.leader.commands import RUNNING, Command, StopReason
from xsky.leader.requests import RequestBook
from xsky.leader.stall import (
    ESCALATED,
    StallAction,
    seconds_to_next_step,
    stall_message,
    stall_step,
)
from xsky.leader.state import LadderState, Nudge
from xsky.leader.tasks import TaskState
from xsky.plan.agent_config import StallWindows, stall_windows
from xsky.runs import RunOptions

# An automatic replan, as the router makes it: (reason, force) → its commands.
Replan = Callable[[str, bool], list[Command]]


class StallLadder:
    """Each running task's step on the ladder."""

    def __init__(
        self,
        state: LadderState,
        board: TaskBoard,
        requests: RequestBook,
        briefs: Briefs,
        options: RunOptions,
        replan: Replan,
    ) -> None:
        self.state = state
        self.board = board
        self.requests = requests
        self.briefs = briefs
        self.options = options
        self.replan = replan

    def level(self, task_id: str) -> int:
        return self.state.levels.get(task_id, 0)

    def forget(self, task_id: str) -> None:
        """The task starts the ladder over (it progressed, was retried, or the plan changed)."""
        self.state.levels.pop(task_id, None)

    def progressed(self, task_id: str) -> None:
        """Progress starts the ladder over — but not past an escalation a person must answer."""
        if self.level(task_id) < ESCALATED:
            self.forget(task_id)

    def restarted_by_leader(self, task_id: str) -> None:
        """The coordinator restarted the task with an instruction: the restart's rung."""
        self.state.levels[task_id] = 2

    @staticmethod
    def idle(task: TaskState, now: datetime) -> float:
        since = task.last_progress_at or task.started_at or task.dispatched_at or now
        return (now - since).total_seconds()

    def due(
        self, now: datetime, skip: Callable[[str], bool], can_replan: Callable[[], bool]
    ) -> Iterator[tuple[TaskState, StallAction, str]]:
        """The running tasks whose next rung is due (none of ``skip``: being stopped, or
        judged), one at a time: the caller acts on each before the next is weighed (a replan
        one made leaves none for the next)."""
        for task, windows in self._running(list(self.board.active), skip):
            idle = self.idle(task, now)
            if idle < windows.nudge_after and idle < windows.restart_after:
                continue  # short of every rung: none is due (most running tasks, most of the time)
            action = stall_step(self.level(task.id), idle, windows, can_replan())
            if action is not None:
                yield task, action, stall_message(action, idle)

    def _running(
        self, agent_ids: Iterable[str], skip: Callable[[str], bool]
    ) -> Iterator[tuple[TaskState, StallWindows]]:
        """The running tasks of ``agent_ids`` the ladder weighs (none of ``skip``), each with its
        stall windows (none whose ladder is off). Each read as it is reached: the caller may act
        on one (a restart, a replan) before the next is weighed."""
        for agent_id in agent_ids:
            task = self.board.tasks.get(agent_id)
            if task is None or task.stored not in RUNNING or skip(agent_id):
                continue
            windows = stall_windows(self.board.agents[agent_id].config, self.options.stall)
            if windows.enabled:
                yield task, windows

    def climb(self, task: TaskState, action: str, message: str, now: datetime) -> list[Command]:
        """Take one step of the ladder for a stalled running task."""
        commands: list[Command] = []
        if action == "nudge":
            self.briefs.nudge(Nudge(task_id=task.id, message=message, at=now, source="stall"))
            self.state.levels[task.id] = 1
            task.last_progress = f"nudged: {message[:80]}"
        elif action == "restart":
            self.state.levels[task.id] = 2
            task.last_progress = message
            commands += self.board.stop(task.agent_id, StopReason.RESTART)
        elif action == "replan":
            # Failed now, so the replan resets it; the stuck attempt is abandoned.
            commands += self.board.stop(task.agent_id, StopReason.ABANDON)
            self.board.finish(task, "failed", now, error=f"stalled: {message}")
            commands += self.replan(f"{task.id} stalled ({message})", True)
        else:
            self.state.levels[task.id] = ESCALATED
            request = self.requests.new(
                "escalation",
                task,
                f"{task.id} is stuck — {message}. Answer with guidance to "
                "run it again with it, or use retry_task, skip_task or cancel_task.",
                now,
            )
            self.board.set_waiting(task, request.id)
            task.last_progress = f"escalated as {request.id}"
            # blocked on the request from now; the stuck attempt is abandoned
            self.board.set_stored(task, "pending")
            commands += self.board.stop(task.agent_id, StopReason.ABANDON)
        return commands

    def deadlines(self, now: datetime, skip: Collection[str]) -> list[datetime]:
        """When the first running task's next rung could be due (one moment, or none).

        The earliest of ``now`` + each task's wait, found as ``now`` + the shortest wait:
        adding a wait to ``now`` keeps their order (timedelta rounds to the microsecond, the
        same way for every wait), so the moment is the one the earliest task gives."""
        shortest: float | None = None
        for task, windows in self._running(self.board.active, skip.__contains__):
            wait = seconds_to_next_step(self.level(task.id), self.idle(task, now), windows)
            if wait is not None and (shortest is None or wait < shortest):
                shortest = wait
        return [] if shortest is None else [now + timedelta(seconds=shortest)]
