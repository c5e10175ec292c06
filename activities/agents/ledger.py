"""What each attempt of an agent's activity ended with, kept beside its checkpoint.

Temporal retries an attempt whether its code failed or its worker died; xsky tells the
two apart (issue: a lost worker is not the agent's failure). An attempt that fails
writes why here before it raises; an attempt that finds no line for the one before it
knows that one's worker was lost (killed, crashed, cut off: no heartbeat) or timed out.
The error budget (``AgentInput.error_attempts``) counts only written failures; lost
workers spend Temporal's separate allowance (``RunOptions.lost_worker_retries``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from activities.agents.key import AgentKey
from xsky.artifacts import safe_component


@dataclass(frozen=True)
class AttemptLedger:
    path: Path

    @classmethod
    def of(cls, root: Path, key: AgentKey) -> AttemptLedger:
        name = f"{safe_component(key.execution_id or 'run', 40)}-{safe_component(key.task_id, 60)}-v{key.plan_version}-d{key.dispatch}.jsonl"
        return cls(root / safe_component(key.run_id) / "_attempts" / name)

    def entries(self) -> list[dict[str, object]]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a crash mid-write
        return out

    def errors(self) -> int:
        return sum(1 for e in self.entries() if e.get("kind") == "error")

    def record(self, attempt: int, kind: str, reason: str) -> int:
        """Write how ``attempt`` ended; returns the errors recorded so far."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"attempt": attempt, "kind": kind, "reason": reason[:300]}) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        return self.errors()

    def previous(self, attempt: int, heartbeat_timeout: float | None) -> str | None:
        """Why attempt ``attempt - 1`` ended (None for a first attempt)."""
        if attempt <= 1:
            return None
        for e in reversed(self.entries()):
            if e.get("attempt") == attempt - 1:
                return f"{e.get('kind')}: {e.get('reason')}"
        beat = f" for {heartbeat_timeout:g}s" if heartbeat_timeout else ""
        return f"worker lost: no heartbeat{beat} (killed, crashed or cut off)"
