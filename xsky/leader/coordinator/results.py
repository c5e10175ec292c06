"""A model agent's completed result, judged before it is taken: the coordinator's verdict
(accept, or send it back with an instruction, at most ``coordinator_retries`` times), and the
mechanical rules that apply in every mode, with or without a model: an empty answer, or a
model that stopped without a final answer, is not accepted."""

from __future__ import annotations

from datetime import datetime

from xsky.leader.board import TaskBoard
from xsky.leader.briefs import Briefs
from xsky.leader.coordinator.judgment import EMPTY, NOT_CHECKED, Judgment
from xsky.leader.ledger import ConsultOutcome, Verdict, cut
from xsky.leader.state import Nudge
from xsky.leader.tasks import TaskState
from xsky.outcomes import NO_FINAL_ANSWER, OFFLINE_PROVIDER
from xsky.runs import AgentOutcome


def unfinished(outcome: AgentOutcome) -> str | None:
    """A mechanical rule's objection to a model's or an offline answer, if any."""
    text = outcome.result
    if text is not None and not text.strip():
        return EMPTY
    if text is not None and text.startswith(NO_FINAL_ANSWER):
        return "the model stopped calling tools without giving its final answer"
    return None


class ResultCheck:
    """Results judged, within ``coordinator_retries``."""

    def __init__(self, judgment: Judgment, board: TaskBoard, briefs: Briefs) -> None:
        self.judgment = judgment
        self.board = board
        self.briefs = briefs
        self.options = judgment.options

    def take(
        self, task: TaskState, outcome: AgentOutcome, now: datetime, judged: ConsultOutcome | None
    ) -> bool:
        """Judge a completed attempt's result; True when it is dealt with here (sent back, or
        failed), False when the task completes with it."""
        j = self.judgment
        if not j.on or outcome.provider is None:
            return False
        ledger = j.ledger
        if outcome.provider == OFFLINE_PROVIDER and ledger.mode == "auto":
            # an offline answer: the workers have no model, so there is no one to ask
            ledger.mode = "off"
            # said inside mode_label's parentheses: one deep, wherever the leader's line is
            # shown (board notes, the Web UI's pane, the ledger query; patch leader-line-one-deep)
            ledger.note = (
                f"no model configured on the workers; {task.id} was answered offline"
                if self.board.patched("leader-line-one-deep")
                else f"no model configured on the workers ({task.id} was answered offline)"
            )
        objection = unfinished(outcome)
        if objection is not None:
            return self._mechanical(task, outcome, objection, now)
        return judged is not None and self._judge(task, judged, now)

    def _mechanical(
        self, task: TaskState, outcome: AgentOutcome, objection: str, now: datetime
    ) -> bool:
        """An answer a fixed rule refuses: sent back while tries remain (a model's), else
        failed when empty, kept (with its true note) when the work was done but unsaid."""
        mechanical = "leader (mechanical)"
        tries_left = task.leader_retries < self.options.coordinator_retries
        if outcome.provider != OFFLINE_PROVIDER and tries_left:
            instruction = (
                "Your last reply gave no answer to your task. Give your final answer now."
                if objection == EMPTY
                else "You stopped without a final answer. State your final answer to your task now."
            )
            self._send_back(task, instruction, now)
            self.judgment.entry(
                "result", task, "retry", objection, now, detail=instruction, by=mechanical
            )
            return True
        if objection == EMPTY:
            self.judgment.entry(
                "result", task, "retry", f"{objection}; no tries left", now, by=mechanical
            )
            self.board.finish(task, "failed", now, error=f"not accepted by the leader: {objection}")
            return True
        self.judgment.entry(
            "result", task, "accept", f"{objection}; kept as it is", now, by=mechanical
        )
        return False

    def _send_back(self, task: TaskState, instruction: str, now: datetime) -> None:
        """The task runs again from its conversation, with the leader's instruction."""
        task.leader_retries += 1
        self.briefs.nudge(Nudge(task_id=task.id, message=instruction, at=now, source="leader"))
        self.board.back_to_pending(task)
        task.last_progress = f"sent back by the leader: {cut(instruction, 80)}"

    def _judge(self, task: TaskState, judged: ConsultOutcome, now: datetime) -> bool:
        """Apply the coordinator's verdict on a result; True when the task was sent back."""
        j = self.judgment
        if not j.heard(judged):
            if judged.verdict == "unchecked":  # its share ran out before it answered
                task.check = NOT_CHECKED
                j.entry(
                    "result",
                    task,
                    "unsure",
                    f"{NOT_CHECKED}: {judged.reason}",
                    now,
                    by="leader (mechanical)",
                    applied=False,
                )
            return False
        j.learn(judged, task.id, now)
        if judged.verdict == "retry" and j.acts():
            if task.leader_retries < self.options.coordinator_retries:
                instruction = judged.instruction or judged.reason or "Do the task as asked."
                self._send_back(task, instruction, now)
                j.entry("result", task, "retry", judged.reason, now, detail=instruction)
                return True
            j.entry(
                "result",
                task,
                "accept",
                f"kept: it was sent back {task.leader_retries} time(s) already; still doubted: "
                f"{judged.reason}",
                now,
            )
            return False
        verdict: Verdict = (
            judged.verdict if judged.verdict in ("accept", "retry", "unsure") else "unsure"
        )
        j.entry("result", task, verdict, judged.reason, now, detail=judged.instruction)
        if j.mode() == "advise" and verdict == "retry":
            task.last_progress = f"leader (advice): {cut(judged.reason, 80)}"
        return False
