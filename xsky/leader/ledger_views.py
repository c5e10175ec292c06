"""What people see of the leader's judgment: the ``ledger`` query, the goal check's line on
the board and in the run's result."""

from __future__ import annotations

from datetime import datetime

from xsky.leader.ledger import LedgerView, TaskIntent
from xsky.leader.oversight import Oversight
from xsky.leader.state import PageRequest
from xsky.leader.tasks import derive_statuses
from xsky.leader.views import Views
from xsky.runs import RunResult


class LedgerViews(Oversight, Views):
    """The ledgers as people read them (read only)."""

    def goal_line(self) -> str | None:
        """The goal check's verdict in words (None before the coordinator existed)."""
        if not self.coordinating:
            return None
        ledger = self.state.ledger
        if ledger.goal_checked_version == 0:
            return None
        if ledger.goal_verdict == "met":
            return f"met (leader): {ledger.goal_reason}"
        if ledger.goal_verdict == "not_met":
            applied = "" if self.mode() != "advise" else " (advice)"
            return f"not met (leader{applied}): {ledger.goal_reason}"
        if ledger.goal_verdict == "unsure":
            return f"not confirmed (leader): {ledger.goal_reason}"
        return ledger.goal_reason

    def ledger_view(self, req: PageRequest | None = None) -> LedgerView:
        """The task ledger (goal, facts, each task's intent) and a page of the progress ledger
        (``offset``/``limit`` count judgments, oldest first)."""
        req = req or PageRequest()
        ledger = self.state.ledger
        derived = derive_statuses({t.id: t for t in self.state.tasks})
        intents = [
            TaskIntent(task_id=t.id, intent=self.agents[t.agent_id].task, status=derived[t.id][0])
            for t in self.state.tasks[: req.limit]
        ]
        return LedgerView(
            mode=self.mode_label(),
            goal=self.goal(),
            goal_check=self.goal_line(),
            facts=list(ledger.facts),
            intents=intents,
            intents_total=len(self.state.tasks),
            entries=ledger.entries[req.offset : req.offset + req.limit],
            entries_total=len(ledger.entries),
            entries_dropped=ledger.entries_dropped,
            offset=req.offset,
        )

    def notices(self, now: datetime | None = None) -> list[str]:
        notes = super().notices(now)
        if self.coordinating:
            line = f"🧭 leader: {self.mode_label().split(' — ')[0]}"
            goal = self.goal_line()
            if goal:
                line += f" · goal {goal}"
            notes.append(" ".join(line.split())[:300])
        return notes

    def result(self, now: datetime) -> RunResult:
        """As :meth:`Views.result`, with the goal check; a goal the leader found not met
        that nobody took up (no replan left, its escalation unanswered) fails the run."""
        result = super().result(now)
        goal = self.goal_line()
        if goal is None:
            return result
        result.goal_check = goal
        ledger = self.state.ledger
        if (
            result.status == "completed"
            and ledger.goal_verdict == "not_met"
            and self.mode() == "act"
            and not self.ended_by_person
        ):
            result.status = "failed"
            result.summary = f"the goal is not met: {ledger.goal_reason}; {result.summary}"
        else:
            result.summary = f"{result.summary}; goal {goal}"
        return result
