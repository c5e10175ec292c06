"""The leader's oversight of the run: a stall's root cause, and whether the goal is met once
every task is done — the coordinator asked, its verdict applied within the run's bounds
(the automatic-replan cap), or the ladder's own step when it cannot be asked."""

from __future__ import annotations

from datetime import datetime

from xsky.leader.commands import (
    RUNNING,
    SATISFIED,
    Command,
    Consult,
    StopReason,
)
from xsky.leader.coordination import Coordination
from xsky.leader.judgment import GOAL_INPUT_CHARS, GOAL_RESULT_CHARS, RESULT_CHARS
from xsky.leader.ledger import (
    ConsultInput,
    ConsultOutcome,
    Verdict,
    cut,
)
from xsky.leader.state import (
    InterventionResult,
    Nudge,
    RetryTaskRequest,
)
from xsky.leader.tasks import TaskState
from xsky.outcomes import OFFLINE_PROVIDER
from xsky.plan.models import Workflow


class Oversight(Coordination):
    """Stalls past the nudge, and the goal."""

    # -- a stall --------------------------------------------------------------------------------------

    def _judge_stall(
        self, task: TaskState, action: str, message: str, now: datetime
    ) -> list[Command] | None:
        if not self._asks_model() or action not in ("restart", "replan"):
            return None
        self.stall_consults[task.agent_id] = (task.attempt, action, message)
        before = task.last_progress
        task.last_progress = f"stalled; the leader looks for the root cause ({message})"
        stalled = f"{message}; last progress: {task.last_progress_at or 'none'} ({cut(task.last_progress, 200)})"
        asked = self._hold_consult(
            self._consult_input(
                "stall", task, task=self._evidence(task, RESULT_CHARS), stalled=stalled
            ),
            now,
        )
        if asked is None:  # no room in the budget: the ladder's own step
            del self.stall_consults[task.agent_id]
            task.last_progress = before
            return None
        return [Consult(task.agent_id, task.attempt, asked)]

    def stall_judged(
        self, agent_id: str, judged: ConsultOutcome | None, now: datetime
    ) -> list[Command]:
        """The coordinator's view of a stall (None: it could not be asked): act on it, or
        take the ladder's own step."""
        dispatch, action, message = self.stall_consults.pop(agent_id)
        task = self.tasks.get(agent_id)
        self.changed = True
        if task is None or task.attempt != dispatch or task.stored not in RUNNING:
            return []  # it moved on (finished, stopped, replanned) meanwhile
        if judged is None or not self._heard(judged) or not self._acts():
            if judged is not None and judged.verdict != "unavailable":
                self._entry(
                    "stall", task, judged.verdict, judged.reason, now, detail=judged.root_cause
                )
            return self._climb(task, action, message, now)
        self._learn(judged, task.id, now)
        cause = judged.root_cause or judged.reason or "not stated"
        if judged.verdict == "instruct" and judged.instruction:
            self._entry("stall", task, "instruct", cause, now, detail=judged.instruction)
            self._add_nudge(
                Nudge(task_id=task.id, message=judged.instruction, at=now, source="leader")
            )
            self.state.stall_levels[task.id] = 2
            task.last_progress = f"restarted by the leader: {cut(judged.instruction, 80)}"
            return self._stop(agent_id, StopReason.RESTART)
        if judged.verdict == "replan" and self.state.auto_replans < self.options.max_auto_replans:
            self._entry("stall", task, "replan", cause, now, detail=judged.root_cause)
            commands = self._stop(agent_id, StopReason.ABANDON)
            self._finish(
                task, "failed", now, error=f"stalled — root cause (leader): {cut(cause, 300)}"
            )
            return commands + self.auto_replan(
                f"{task.id} stalled — root cause: {cut(cause, 600)}", force=True
            )
        self._entry("stall", task, "escalate", cause, now, detail=judged.root_cause)
        return self._climb(
            task, "escalate", f"{message} — root cause (leader): {cut(cause, 300)}", now
        )

    # -- the goal ------------------------------------------------------------------------------------

    def goal_review(self, now: datetime) -> ConsultInput | None:
        """When every task is done: what to ask the coordinator about the goal (None: nothing
        to ask — not coordinating, already checked at this plan version, or off)."""
        ledger = self.state.ledger
        if (
            not self.coordinating
            or self.ended
            or ledger.goal_checked_version == self.state.plan_version
            or any(t.stored not in SATISFIED for t in self.state.tasks)
        ):
            return None
        offline = [t.id for t in self.state.tasks if t.provider == OFFLINE_PROVIDER]
        if not self._asks_model() or offline:
            ledger.goal_checked_version = self.state.plan_version
            if offline:
                why = f"{', '.join(offline[:5])} answered offline (no model)"
            elif (no_room := self.no_room_to_judge()) is not None:
                why = no_room
            elif self.mode() == "auto":
                why = "no model agent ran in this run (--coordinator act checks any run's goal)"
            else:
                why = self.mode_label().split(":")[0]
            self._goal_unchecked(why, now)
            return None
        shown, used, omitted = [], 0, 0
        for task in self.state.tasks:
            evidence = self._evidence(task, GOAL_RESULT_CHARS)
            size = len(evidence.task) + len(evidence.result or "")
            if used + size > GOAL_INPUT_CHARS:
                omitted += 1
                continue
            used += size
            shown.append(evidence)
        asked = self._hold_consult(
            self._consult_input("goal", None, tasks=shown, omitted=omitted), now
        )
        if asked is None:  # no room in the budget (recorded as the goal unchecked)
            ledger.goal_checked_version = self.state.plan_version
        return asked

    def goal_judged(
        self, version: int, judged: ConsultOutcome | None, now: datetime
    ) -> list[Command]:
        """The coordinator's verdict on the goal of plan ``version``."""
        ledger = self.state.ledger
        if version != self.state.plan_version or self.ended:
            return []  # the plan changed while it was judged: the new one is checked
        ledger.goal_checked_version = version
        if judged is None or not self._heard(judged):
            self._goal_unchecked(
                "the coordinator could not be consulted"
                if judged is None
                else f"budget: {judged.reason}"
                if judged.verdict == "unchecked"
                else "no model configured on the workers",
                now,
            )
            return []
        self._learn(judged, "leader", now)
        verdict: Verdict = judged.verdict if judged.verdict in ("met", "not_met") else "unsure"
        gap = judged.gap or judged.reason
        ledger.goal_verdict = verdict
        ledger.goal_reason = judged.reason if verdict == "met" else gap
        self._entry("goal", None, verdict, judged.reason, now, detail=judged.gap)
        if self.mode() == "advise" or verdict == "met":
            return []
        if verdict == "not_met":
            replan = self.auto_replan(f"the goal is not met: {cut(gap, 600)}")
            if replan:
                return replan
            text = (
                f"the goal is not met: {cut(gap, 300)} — no automatic replans are left. Answer "
                "with what to do (a replan follows), or end_run to accept the results as they are"
            )
        else:
            text = (
                f"the leader cannot tell whether the goal is met: {cut(judged.reason, 300)} — answer "
                "with what is missing (a replan follows), or end_run to accept the results"
            )
        self._run_request("goal", text, now)
        return []

    # -- a goal escalation ends with the plan it was about --------------------------------------

    def _withdraw_goal_requests(self, why: str, now: datetime) -> None:
        for request in list(self._pending_requests):
            if request.about == "goal":
                self._close_request(request, "withdrawn", now)
                request.answer = why

    def apply_plan(
        self, wf: Workflow, reason: str, now: datetime, keep_cancelled: bool = True
    ) -> tuple[str, list[Command]]:
        self._withdraw_goal_requests("withdrawn: the plan changed", now)
        return super().apply_plan(wf, reason, now, keep_cancelled)

    def retry(self, req: RetryTaskRequest, now: datetime) -> InterventionResult:
        self._withdraw_goal_requests(f"withdrawn: {req.task_id} runs again", now)
        return super().retry(req, now)
