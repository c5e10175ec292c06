"""The stall ladder as the core climbs it, and time passing (requests that expire)."""

from __future__ import annotations

from datetime import datetime, timedelta

from xsky.leader.commands import RUNNING, Command, StopReason
from xsky.leader.course import Course
from xsky.leader.requests import RUN_REQUEST
from xsky.leader.stall import ESCALATED, seconds_to_next_step, stall_message, stall_step
from xsky.leader.state import (
    HumanRequest,
    Nudge,
)
from xsky.leader.tasks import TaskState
from xsky.plan.agent_config import stall_windows


class StallLadder(Course):
    """Time passing: deadlines of requests, and the stall ladder's steps."""

    def tick(self, now: datetime) -> list[Command]:
        """Time passed: a review past its deadline is decided, requests past theirs expire,
        the stall ladder climbs."""
        review_due = self.state.review_deadline if self.state.review == "waiting" else None
        if review_due is not None and now >= review_due:
            # An automatic replan's review (a first plan's is timed by the shell's review gate).
            stops = (
                []
                if self.options.review_timeout_action == "approve"
                else self.stop_everything(StopReason.RUN_CANCEL)
            )
            self.review_timed_out(now)
            self.changed = True
            return stops
        for request in list(self._pending_requests):
            if request.deadline is not None and now >= request.deadline:
                request.status = "expired"
                self._pending_requests.remove(request)
                if request.about == "budget":
                    self._budget_expired(request, now)
                    self.changed = True
                    continue
                task = self.task_by_id(request.task_id)
                if task is not None and task.waiting_on == request.id:
                    self._set_waiting(task, None)
                    self._finish(
                        task,
                        "failed",
                        now,
                        error=f"no answer to {request.id} within {self.options.request_timeout:g}s",
                    )
        return self._check_stalls(now)

    def _budget_expired(self, request: HumanRequest, now: datetime) -> None:
        """Nobody decided a budget escalation in time. The run's: it ends failed, what did not
        run is not run. A task's own: that task fails."""
        wait = (
            f"{self.options.request_timeout / 3600:g}h"
            if self.options.request_timeout >= 3600
            else f"{self.options.request_timeout:g}s"
        )
        figures = request.text.removeprefix("budget: ").split(";")[0]
        if request.task_id != RUN_REQUEST:
            task = self.task_by_id(request.task_id)
            if task is not None and task.waiting_on == request.id:
                self._set_waiting(task, None)
                self._finish(
                    task,
                    "failed",
                    now,
                    error=f"budget spent: {figures}; nobody raised it within {wait}",
                )
            return
        self.ended = f"budget spent: {figures}; nobody raised it within {wait}"
        self.ended_failed = True
        for task in self.state.tasks:
            if not task.terminal and task.agent_id not in self.active:
                self._withdraw(task.waiting_on, f"withdrawn: {task.id} not run", now)
                self._set_waiting(task, None)
                self._finish(task, "cancelled", now, error="not run: the budget was spent")

    # -- the stall ladder ------------------------------------------------------------------------

    @staticmethod
    def _idle(task: TaskState, now: datetime) -> float:
        since = task.last_progress_at or task.started_at or task.dispatched_at or now
        return (now - since).total_seconds()

    def _check_stalls(self, now: datetime) -> list[Command]:
        commands: list[Command] = []
        for agent_id in list(self.active):
            task = self.tasks.get(agent_id)
            if (
                task is None
                or task.stored not in RUNNING
                or agent_id in self.intents
                or agent_id in self.stall_consults
            ):
                continue
            windows = stall_windows(self.agents[agent_id].config, self.options.stall)
            level = self.state.stall_levels.get(task.id, 0)
            idle = self._idle(task, now)
            action = stall_step(
                level, idle, windows, self.state.auto_replans < self.options.max_auto_replans
            )
            if action is None:
                continue
            message = stall_message(action, idle)
            self.log.append(f"stall ladder: {task.id} {action} ({message})")
            judging = self._judge_stall(task, action, message, now)
            if judging is not None:  # the coordinator finds the root cause instead
                commands += judging
                self.changed = True
                continue
            commands += self._climb(task, action, message, now)
            self.changed = True
        return commands

    def _climb(self, task: TaskState, action: str, message: str, now: datetime) -> list[Command]:
        """Take one step of the ladder for a stalled running task."""
        commands: list[Command] = []
        if action == "nudge":
            self._add_nudge(Nudge(task_id=task.id, message=message, at=now, source="stall"))
            self.state.stall_levels[task.id] = 1
            task.last_progress = f"nudged: {message[:80]}"
        elif action == "restart":
            self.state.stall_levels[task.id] = 2
            task.last_progress = message
            commands += self._stop(task.agent_id, StopReason.RESTART)
        elif action == "replan":
            # Failed now, so the replan resets it; the stuck attempt is abandoned.
            commands += self._stop(task.agent_id, StopReason.ABANDON)
            self._finish(task, "failed", now, error=f"stalled: {message}")
            commands += self.auto_replan(f"{task.id} stalled ({message})", force=True)
        else:
            self.state.stall_levels[task.id] = ESCALATED
            request = self._new_request(
                "escalation",
                task,
                f"{task.id} is stuck — {message}. Answer with guidance to "
                "run it again with it, or use retry_task, skip_task or cancel_task.",
                now,
            )
            self._set_waiting(task, request.id)
            task.last_progress = f"escalated as {request.id}"
            # blocked on the request from now; the stuck attempt is abandoned
            self._set_stored(task, "pending")
            commands += self._stop(task.agent_id, StopReason.ABANDON)
        return commands

    def _judge_stall(
        self, task: TaskState, action: str, message: str, now: datetime
    ) -> list[Command] | None:
        """A step past the nudge: the coordination layer may consult the coordinator (the
        commands to do so) instead of a blind restart or replan; None: climb as ever."""
        return None

    def next_deadline(self, now: datetime) -> datetime | None:
        due: list[datetime] = [r.deadline for r in self._pending_requests if r.deadline is not None]
        if self.state.review == "waiting" and self.state.review_deadline is not None:
            due.append(self.state.review_deadline)
        for agent_id in self.active:
            task = self.tasks.get(agent_id)
            if task is None or task.stored not in RUNNING or agent_id in self.stall_consults:
                continue
            windows = stall_windows(self.agents[agent_id].config, self.options.stall)
            wait = seconds_to_next_step(
                self.state.stall_levels.get(task.id, 0), self._idle(task, now), windows
            )
            if wait is not None:
                due.append(now + timedelta(seconds=wait))
        return min(due) if due else None
