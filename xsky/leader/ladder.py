"""The stall ladder, as the core climbs it: for a running task without progress, nudge →
restart from its checkpoint → replan (while the run's replans last) → escalate to a person;
any progress starts it over (xsky/leader/stall.py has the rungs' timing and words). Past the
nudge, the coordinator may look for the root cause first (the router asks it).

A task whose attempt waits for a worker (its activity scheduled, no worker has started it:
none polls its queue, or the one that had it was lost and the retry waits for another) is
not stalled: before a rung, the workflow asks the server (activity ``leader_attempts``) and
:meth:`StallLadder.attempts_seen` restarts such a task's idle clock instead of climbing
(patch stall-waits-for-worker)."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator
from datetime import datetime, timedelta

from xsky.leader.board import TaskBoard
from xsky.leader.briefs import Briefs
from xsky.leader.commands import RUNNING, Command, StopReason
from xsky.leader.requests import RequestBook
from xsky.leader.stall import (
    ESCALATED,
    NOT_RUNNING,
    PAUSED_BY_OPERATOR,
    WAITING_FOR_WORKER,
    StallAction,
    seconds_to_next_step,
    stall_message,
    stall_step,
)
from xsky.leader.state import LadderState, Nudge
from xsky.leader.tasks import TaskState
from xsky.plan.agent_config import StallWindows, stall_windows, tool_name
from xsky.runs import PendingAttempt, RunOptions

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
        skip: Callable[[str], bool],
        can_replan: Callable[[], bool],
    ) -> None:
        self.state = state
        self.board = board
        self.requests = requests
        self.briefs = briefs
        self.options = options
        self.replan = replan
        # (a task the ladder does not weigh: being stopped, or judged by the coordinator)
        self.skip = skip
        self.can_replan = can_replan

    def level(self, task_id: str) -> int:
        return self.state.levels.get(task_id, 0)

    def forget(self, task_id: str) -> None:
        """The task starts the ladder over (it progressed, was retried, or the plan changed)."""
        self.state.levels.pop(task_id, None)
        self.state.since.pop(task_id, None)

    def progressed(self, task_id: str) -> None:
        """Progress starts the ladder over — but not past an escalation a person must answer."""
        if self.level(task_id) < ESCALATED:
            self.forget(task_id)

    def restarted_by_leader(self, task_id: str) -> None:
        """The coordinator restarted the task with an instruction: the restart's rung."""
        self.state.levels[task_id] = 2

    def idle(self, task: TaskState, now: datetime) -> float:
        """Seconds without progress: since the last progress, the attempt's start or its
        dispatch — and no earlier than when its attempt was last seen waiting for a worker, or
        started by one (``attempts_seen``)."""
        since = task.last_progress_at or task.started_at or task.dispatched_at or now
        seen = self.state.since.get(task.id)
        if seen is not None and seen > since:
            since = seen
        return (now - since).total_seconds()

    def due(
        self, now: datetime, checked: Collection[str] | None = None
    ) -> Iterator[tuple[TaskState, StallAction, str]]:
        """The running tasks whose next rung is due (none of ``skip``: being stopped, or
        judged), one at a time: the caller acts on each before the next is weighed (a replan
        one made leaves none for the next). ``checked`` (patch stall-waits-for-worker): only
        the tasks whose attempt the server was asked about climb; another's rung waits for its
        own check (it is due: the next deadline is now)."""
        for task, windows in self._running(list(self.board.active), self.skip):
            idle = self.idle(task, now)
            if idle < windows.nudge_after and idle < windows.restart_after:
                continue  # short of every rung: none is due (most running tasks, most of the time)
            action = stall_step(self.level(task.id), idle, windows, self.can_replan())
            if action is not None and (checked is None or task.id in checked):
                yield task, action, stall_message(action, idle)

    def attempts_seen(
        self, task_ids: Iterable[str], pending: list[PendingAttempt], now: datetime
    ) -> Iterator[tuple[str, str | None]]:
        """Each running task of ``task_ids`` (their rungs due), with what :meth:`attempt_seen`
        says of it."""
        for task_id in task_ids:
            task = self.board.task_by_id(task_id)
            if task is not None and task.stored in RUNNING:
                yield task.id, self.attempt_seen(task, pending, now)

    def attempt_seen(
        self, task: TaskState, pending: Iterable[PendingAttempt], now: datetime
    ) -> str | None:
        """What the server holds of a task's current attempt, asked as its rung came due: one
        waiting for a worker restarts its idle clock (no rung: it is not stalled, it has not
        run) and says so on the board; one started counts its idle time from no earlier than
        its start (a retry a worker took after the last one was lost). One an operator paused
        (Temporal's activity pause) is not stalled either: its clock starts over, the board
        says it is paused (patch stall-sees-operator-pause). The board's note when it waits,
        else None (started, or not found: the ladder climbs as ever)."""
        mine = re.compile(rf"{re.escape(task.id)}-v\d+-d{task.attempt}(?:-r\d+)?")
        found = [p for p in pending if mine.fullmatch(p.activity_id)]
        paused = [p for p in found if p.paused]
        if paused and self.board.patched("stall-sees-operator-pause"):
            self.state.since[task.id] = now
            attempt = max(paused, key=lambda p: p.attempt)
            until = "runs until it ends, then waits" if attempt.state == "started" else "waits"
            task.last_progress = (
                f"{PAUSED_BY_OPERATOR}: attempt {attempt.attempt} {until} for `temporal activity "
                f"unpause --activity-id {attempt.activity_id}` (and the run's --workflow-id); "
                "not a stall"
            )
            return task.last_progress
        started = [p.started_at for p in found if p.state == "started" and p.started_at]
        if started:
            since = max(started)
            if since > self.state.since.get(task.id, since - timedelta(seconds=1)):
                self.state.since[task.id] = since
            if (task.last_progress or "").startswith(NOT_RUNNING):
                task.last_progress = None
            return None
        waiting = [p for p in found if p.state == "scheduled"]
        if not waiting:
            return None
        self.state.since[task.id] = now
        attempt = max(waiting, key=lambda p: p.attempt)
        when = attempt.scheduled_at or task.dispatched_at or now
        task.last_progress = (
            f"{WAITING_FOR_WORKER}: attempt {attempt.attempt} scheduled "
            f"{when.strftime('%H:%M:%S')} UTC, no worker has started it (none serves its queue, "
            "or the one that had it was lost); not a stall"
        )
        return task.last_progress

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

    def logged(self, task: TaskState, action: StallAction, message: str, now: datetime) -> str:
        """The log's line for a rung due (workflows/leader/metrics.py counts its step by the
        word after the task): a direct tool agent's first rung is ``counted``, not ``nudge`` —
        no model reads a nudge, none is sent (patch stall-rung-named)."""
        tool = tool_name(self.board.agents[task.agent_id].config) if action == "nudge" else None
        if (
            tool is not None
            and self.board.patched("stall-rung-named")
            and self.board.patched("stall-waits-for-worker")
        ):
            return (
                f"stall ladder: {task.id} counted (no progress for {self.idle(task, now):.0f}s: "
                f"a direct {tool} call, nothing to nudge; restarted if none comes)"
            )
        return f"stall ladder: {task.id} {action} ({message})"

    def climb(self, task: TaskState, action: str, message: str, now: datetime) -> list[Command]:
        """Take one step of the ladder for a stalled running task."""
        commands: list[Command] = []
        if action == "nudge":
            tool = tool_name(self.board.agents[task.agent_id].config)
            self.state.levels[task.id] = 1
            if tool is not None and self.board.patched("stall-waits-for-worker"):
                # A direct tool call has no model to read a nudge: the rung is only counted.
                task.last_progress = (
                    f"no progress for {self.idle(task, now):.0f}s: a direct {tool} call, nothing "
                    "to nudge (restarted if none comes)"
                )
                return commands
            self.briefs.nudge(Nudge(task_id=task.id, message=message, at=now, source="stall"))
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
