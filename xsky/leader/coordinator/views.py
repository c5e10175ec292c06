"""What people see of the leader's judgment: the ``ledger`` query, the goal check's line on
the board and in the run's result (read only, but :meth:`CoordinatorViews.judged_result`,
which returns a new result)."""

from __future__ import annotations

from xsky.leader.board import TaskBoard
from xsky.leader.coordinator.judgment import Judgment
from xsky.leader.ledger import LedgerView, TaskIntent
from xsky.leader.state import PageRequest
from xsky.leader.tasks import derive_statuses
from xsky.runs import RunResult


class CoordinatorViews:
    """The ledgers as people read them."""

    def __init__(self, judgment: Judgment, board: TaskBoard) -> None:
        self.judgment = judgment
        self.board = board

    def goal_line(self) -> str | None:
        """The goal check's verdict in words (None before the coordinator existed)."""
        j = self.judgment
        if not j.on:
            return None
        ledger = j.ledger
        if ledger.goal_checked_version == 0:
            return None
        if ledger.goal_verdict == "met":
            return f"met (leader): {ledger.goal_reason}"
        if ledger.goal_verdict == "not_met":
            applied = "" if j.mode() != "advise" else " (advice)"
            return f"not met (leader{applied}): {ledger.goal_reason}"
        if ledger.goal_verdict == "unsure":
            return f"not confirmed (leader): {ledger.goal_reason}"
        return ledger.goal_reason

    def unchecked(self) -> str | None:
        """Why the goal is not checked while the run goes, when it will not be (the ledger's
        line, rather than "not yet")."""
        j = self.judgment
        if not j.on or j.ledger.goal_checked_version != 0:
            return None
        mode = j.mode()
        if mode == "off":
            return "not checked: the leader's judgment is off for this run (mechanical rules only)"
        if mode == "auto":
            return (
                "not checked: no model answered for an agent of this run, so the leader has no "
                "model to check the goal with"
            )
        return None

    def ledger_view(self, req: PageRequest | None = None) -> LedgerView:
        """The task ledger (goal, facts, each task's intent) and a page of the progress ledger
        (``offset``/``limit`` count judgments, oldest first)."""
        req = req or PageRequest()
        j = self.judgment
        ledger = j.ledger
        tasks = self.board.state.tasks
        derived = derive_statuses({t.id: t for t in tasks})
        intents = [
            TaskIntent(
                task_id=t.id, intent=self.board.agents[t.agent_id].task, status=derived[t.id][0]
            )
            for t in tasks[: req.limit]
        ]
        return LedgerView(
            mode=j.mode_label(),
            goal=j.goal(),
            goal_check=self.goal_line() or self.unchecked(),
            facts=list(ledger.facts),
            intents=intents,
            intents_total=len(tasks),
            entries=ledger.entries[req.offset : req.offset + req.limit],
            entries_total=len(ledger.entries),
            entries_dropped=ledger.entries_dropped,
            offset=req.offset,
        )

    def notice(self) -> str | None:
        """The board's line about the leader (None: no coordinator in this run)."""
        if not self.judgment.on:
            return None
        line = f"leader: {self.judgment.mode_label().split(' — ')[0]}"
        goal = self.goal_line()
        if goal:
            line += f" · goal {goal}"
        return " ".join(line.split())[:300]

    def judged_result(self, result: RunResult, ended_by_person: bool) -> RunResult:
        """The run's result with the goal check; a goal the leader found not met that nobody
        took up (no replan left, its escalation unanswered) fails the run."""
        goal = self.goal_line()
        if goal is None:
            return result
        result.goal_check = goal
        ledger = self.judgment.ledger
        if (
            result.status == "completed"
            and ledger.goal_verdict == "not_met"
            and self.judgment.mode() == "act"
            and not ended_by_person
        ):
            result.status = "failed"
            result.summary = f"the goal is not met: {ledger.goal_reason}; {result.summary}"
        else:
            result.summary = f"{result.summary}; goal {goal}"
        return result
