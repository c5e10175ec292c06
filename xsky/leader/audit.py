"""The run's permission log: every permission decision its attempts made, every tool request a
person or the leader decided, and every message refused.

A signal cannot be refused to its sender — the stock CLI and the Web UI say "signaled" whatever
the workflow does with it — so a malformed or oversized one (or a progress report that is not
from the attempt it names) is refused where people look: :meth:`AuditLog.refuse` counts it,
the board shows the last, and the log has each, with what was wrong. The log keeps its newest
:data:`~xsky.leader.commands.AUDIT_KEEP` entries and counts the rest.
"""

from __future__ import annotations

from datetime import datetime

from xsky.leader.commands import AUDIT_KEEP
from xsky.leader.limits import PAYLOAD_CHARS, cut
from xsky.leader.state import AuditEntry, AuditState
from xsky.leader.tasks import TaskState
from xsky.runs import DecisionRecord


class AuditLog:
    """Decisions and refusals, newest last."""

    def __init__(self, state: AuditState) -> None:
        self.state = state

    def add(self, entry: AuditEntry) -> None:
        self.state.entries.append(entry)
        if len(self.state.entries) > AUDIT_KEEP:
            self.state.dropped += len(self.state.entries) - AUDIT_KEEP
            del self.state.entries[: len(self.state.entries) - AUDIT_KEEP]

    def decisions(self, task: TaskState, records: list[DecisionRecord]) -> None:
        """What an attempt decided, by the rules, its role and the mode."""
        for r in records:
            self.state.entries.append(
                AuditEntry(
                    at=r.at,
                    task_id=task.id,
                    tool=r.tool,
                    arguments=r.arguments,
                    effect=r.effect,
                    reason=r.reason,
                    by=r.by,
                )
            )
        if len(self.state.entries) > AUDIT_KEEP:
            self.state.dropped += len(self.state.entries) - AUDIT_KEEP
            del self.state.entries[: len(self.state.entries) - AUDIT_KEEP]

    def refuse(self, what: str, payload: str, why: str, now: datetime, task_id: str = "") -> None:
        """A refused message: counted, the last on the board, each in the log."""
        self.state.refused += 1
        self.state.last_refusal = cut(f"{what}: {why}", 300)
        self.add(
            AuditEntry(
                at=now,
                task_id=task_id,
                tool=what,
                arguments=cut(payload, PAYLOAD_CHARS),
                effect="deny",
                reason=f"refused: {why}",
                by="person",
            )
        )

    def sandbox_off(self) -> bool:
        """Did a worker run this run's commands without the OS sandbox (lately)?"""
        return any(a.tool == "sandbox-off" for a in self.state.entries[-50:])
