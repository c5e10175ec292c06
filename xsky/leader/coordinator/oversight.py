"""The leader's oversight of the run: a stall's root cause, and whether the goal is met once
every task is done — the coordinator asked, its verdict applied within the run's bounds (the
automatic-replan cap), or the ladder's own step when it cannot be asked."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from xsky.leader.board import TaskBoard
from xsky.leader.briefs import Briefs
from xsky.leader.commands import RUNNING, SATISFIED, CallPlanner, Command, Consult, StopReason
from xsky.leader.coordinator.judgment import (
    GOAL_INPUT_CHARS,
    GOAL_RESULT_CHARS,
    RESULT_CHARS,
    Judgment,
)
from xsky.leader.ladder import Replan, StallLadder
from xsky.leader.ledger import ConsultInput, ConsultOutcome, Verdict, cut
from xsky.leader.requests import RequestBook
from xsky.leader.state import HumanRequest, Nudge
from xsky.leader.tasks import TaskState
from xsky.outcomes import OFFLINE_PROVIDER


class Oversight:
    """Stalls past the nudge, and the goal."""

    def __init__(
        self,
        judgment: Judgment,
        board: TaskBoard,
        requests: RequestBook,
        briefs: Briefs,
        ladder: StallLadder,
        replan: Replan,
        ended: Callable[[], bool],
    ) -> None:
        self.judgment = judgment
        self.board = board
        self.requests = requests
        self.briefs = briefs
        self.ladder = ladder
        self.replan = replan
        self.ended = ended  # has the run ended (the goal is not checked then)
        self.options = judgment.options
        # agent id → (dispatch, ladder step, its message) of a stall the coordinator judges;
        # workflow-local: a run drains them before it continues as new
        self.stall_consults: dict[str, tuple[int, str, str]] = {}

    # -- a stall --------------------------------------------------------------------------------------

    def judge_stall(
        self, task: TaskState, action: str, message: str, now: datetime
    ) -> list[Command] | None:
        """A step past the nudge: consult the coordinator (the commands to do so) instead of a
        blind restart or replan; None: the ladder climbs as ever."""
        j = self.judgment
        if not j.asks_model() or action not in ("restart", "replan"):
            return None
        self.stall_consults[task.agent_id] = (task.attempt, action, message)
        before = task.last_progress
        task.last_progress = f"stalled; the leader looks for the root cause ({message})"
        stalled = f"{message}; last progress: {task.last_progress_at or 'none'} ({cut(task.last_progress, 200)})"
        asked = j.hold(
            j.consult_input("stall", task, task=j.evidence(task, RESULT_CHARS), stalled=stalled),
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
        j = self.judgment
        dispatch, action, message = self.stall_consults.pop(agent_id)
        task = self.board.tasks.get(agent_id)
        if task is None or task.attempt != dispatch or task.stored not in RUNNING:
            return []  # it moved on (finished, stopped, replanned) meanwhile
        if judged is None or not j.heard(judged) or not j.acts():
            if judged is not None and judged.verdict != "unavailable":
                j.entry("stall", task, judged.verdict, judged.reason, now, detail=judged.root_cause)
            return self.ladder.climb(task, action, message, now)
        j.learn(judged, task.id, now)
        cause = judged.root_cause or judged.reason or "not stated"
        if judged.verdict == "instruct" and judged.instruction:
            j.entry("stall", task, "instruct", cause, now, detail=judged.instruction)
            self.briefs.nudge(
                Nudge(task_id=task.id, message=judged.instruction, at=now, source="leader")
            )
            self.ladder.restarted_by_leader(task.id)
            task.last_progress = f"restarted by the leader: {cut(judged.instruction, 80)}"
            return self.board.stop(agent_id, StopReason.RESTART)
        if (
            judged.verdict == "replan"
            and j.plans.state.auto_replans < self.options.max_auto_replans
        ):
            j.entry("stall", task, "replan", cause, now, detail=judged.root_cause)
            commands = self.board.stop(agent_id, StopReason.ABANDON)
            self.board.finish(
                task, "failed", now, error=f"stalled — root cause (leader): {cut(cause, 300)}"
            )
            return commands + self.replan(
                f"{task.id} stalled — root cause: {cut(cause, 600)}", True
            )
        j.entry("stall", task, "escalate", cause, now, detail=judged.root_cause)
        return self.ladder.climb(
            task, "escalate", f"{message} — root cause (leader): {cut(cause, 300)}", now
        )

    # -- the goal ------------------------------------------------------------------------------------

    def goal_review(self, now: datetime) -> ConsultInput | None:
        """When every task is done: what to ask the coordinator about the goal (None: nothing
        to ask — not coordinating, already checked at this plan version, or off)."""
        j = self.judgment
        ledger = j.ledger
        version = j.plans.version
        if (
            not j.on
            or self.ended()
            or ledger.goal_checked_version == version
            or any(t.stored not in SATISFIED for t in self.board.state.tasks)
        ):
            return None
        offline = [t.id for t in self.board.state.tasks if t.provider == OFFLINE_PROVIDER]
        if not j.asks_model() or offline:
            ledger.goal_checked_version = version
            if offline:
                why = f"{', '.join(offline[:5])} answered offline (no model)"
            elif (no_room := j.budget.no_room_to_judge()) is not None:
                why = no_room
            elif j.mode() == "auto":
                why = (
                    "no model agent ran in this run (with a model configured on the workers, "
                    "--coordinator act checks any run's goal)"
                )
            else:
                why = j.mode_label().split(":")[0]
            j.goal_unchecked(why, now)
            return None
        shown, used, omitted = [], 0, 0
        for task in self.board.state.tasks:
            evidence = j.evidence(task, GOAL_RESULT_CHARS)
            size = len(evidence.task) + len(evidence.result or "")
            if used + size > GOAL_INPUT_CHARS:
                omitted += 1
                continue
            used += size
            shown.append(evidence)
        asked = j.hold(j.consult_input("goal", None, tasks=shown, omitted=omitted), now)
        if asked is None:  # no room in the budget (recorded as the goal unchecked)
            ledger.goal_checked_version = version
        return asked

    def goal_judged(
        self, version: int, judged: ConsultOutcome | None, now: datetime
    ) -> list[Command]:
        """The coordinator's verdict on the goal of plan ``version``."""
        j = self.judgment
        ledger = j.ledger
        if version != j.plans.version or self.ended():
            return []  # the plan changed while it was judged: the new one is checked
        ledger.goal_checked_version = version
        if judged is None or not j.heard(judged):
            j.goal_unchecked(
                "the coordinator could not be consulted"
                if judged is None
                else f"budget: {judged.reason}"
                if judged.verdict == "unchecked"
                else "no model configured on the workers",
                now,
            )
            return []
        j.learn(judged, "leader", now)
        verdict: Verdict = judged.verdict if judged.verdict in ("met", "not_met") else "unsure"
        gap = judged.gap or judged.reason
        ledger.goal_verdict = verdict
        ledger.goal_reason = judged.reason if verdict == "met" else gap
        j.entry("goal", None, verdict, judged.reason, now, detail=judged.gap)
        if j.mode() == "advise" or verdict == "met":
            return []
        if verdict == "not_met":
            replan = self.replan(f"the goal is not met: {cut(gap, 600)}", False)
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
        j.run_request("goal", text, now)
        return []

    def withdraw_goal_requests(self, why: str, now: datetime) -> None:
        """A goal escalation ends with the plan it was about."""
        for request in self.requests.about("goal"):
            self.requests.close(request, "withdrawn", now)
            request.answer = why

    @staticmethod
    def goal_answered(request: HumanRequest, text: str) -> CallPlanner:
        """A person answered a run-level escalation about the goal: replan with their words."""
        return CallPlanner(
            f"{request.id} answered by a person: {text}", label=f"a person answered {request.id}"
        )
