"""Finished agent conversations as JSONL transcripts, so our own agents feed the skill pipeline.

``$XSKY_HOME/transcripts/<run>/<agent>-d<dispatch>-<key>.jsonl``: a ``session`` line, a
``message`` line per chat message (OpenAI shape), an ``outcome`` line. Written once per
finished attempt, atomically (a temporary name the watcher ignores, then a rename), so
the watcher never sees half a conversation. The format is read back by
``xsky/skills/transcripts/xsky_agent.py``.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from activities.agents.key import AgentKey
from activities.fsio import atomic_write
from activities.tools import cap_text
from xsky.artifacts import safe_component
from xsky.plan.models import RoleCapabilityModel
from xsky.storage import ObjectStore

log = logging.getLogger("xsky.agent_log")


def transcript_path(root: Path, agent: AgentKey, key: str) -> Path:
    name = f"{safe_component(agent.agent_id, 60)}-d{agent.dispatch}-{safe_component(key, 40)}.jsonl"
    return root / safe_component(agent.run_id) / name


def write_transcript(
    root: Path,
    agent: AgentKey,
    role: RoleCapabilityModel,
    model: str,
    key: str,
    messages: list[dict[str, Any]],
    status: str,
    error: str | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    now = datetime.now(UTC).isoformat()
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "runId": agent.run_id,
            "agentId": agent.agent_id,
            "taskId": agent.task_id,
            "dispatch": agent.dispatch,
            "role": role.name,
            "model": model,
            "timestamp": now,
            **(extra or {}),
        }
    ]
    lines += [{"type": "message", "message": m} for m in messages]
    lines.append({"type": "outcome", "status": status, "error": error, "timestamp": now})
    path = transcript_path(root, agent, key)
    text = "".join(json.dumps(line, ensure_ascii=False, default=str) + "\n" for line in lines)
    atomic_write(path, text, sync=False)
    return path


# -- the agent log: every agent's conversation, as it happens, in the artifact store ---------------

# Tool results and messages longer than this are cut in the log (the checkpoint keeps them whole).
LOG_TEXT_CHARS = 20_000


def append_event(store: ObjectStore, key: str, kind: str, **fields: Any) -> None:
    """One event at the end of an agent's log (redacted; best effort: a full disk loses the
    line, never the work)."""
    from xsky.security.redact import redact_value

    line = {"type": kind, "at": datetime.now(UTC).isoformat(timespec="milliseconds"), **fields}
    try:
        text = json.dumps(redact_value(line), ensure_ascii=False, default=str)
        store.append(key, (text + "\n").encode("utf-8"))
    except Exception as e:  # noqa: BLE001 - a log line is best effort, whatever the store says
        log.warning("could not write the agent log %s in %s: %s", key, store.where, e)


class AgentLog:
    """Appends one agent's events to ``<artifacts>/<run>/<agent>/transcript.jsonl`` as they happen,
    so ``starter.py log … --follow`` shows an agent at work. Every attempt starts with an
    ``attempt`` line; secrets are redacted before anything is written. Writing is best effort:
    a full disk loses log lines, never the agent's work."""

    def __init__(
        self, store: ObjectStore, key: AgentKey, attempt: int, role: str, model: str | None
    ):
        from xsky.agent_log import transcript_key

        self.store = store
        self.key = transcript_key(key.run_id, key.agent_id)
        self.started = time.monotonic()
        self.decisions_seen = 0
        self.event(
            "attempt",
            runId=key.run_id,
            agentId=key.agent_id,
            taskId=key.task_id,
            dispatch=key.dispatch,
            attempt=attempt,
            planVersion=key.plan_version,
            role=role,
            model=model,
        )

    def event(self, kind: str, **fields: Any) -> None:
        append_event(self.store, self.key, kind, **fields)

    def message(self, message: dict[str, Any]) -> None:
        content = message.get("content")
        if isinstance(content, str):
            content = cap_text(content, LOG_TEXT_CHARS, "message")[0]
        self.event("message", role=message.get("role"), content=content)

    def llm(self, model: str, seconds: float, usage: Any) -> None:
        self.event(
            "llm",
            model=model,
            ms=round(seconds * 1000, 1),
            promptTokens=getattr(usage, "prompt_tokens", None),
            completionTokens=getattr(usage, "completion_tokens", None),
            totalTokens=getattr(usage, "total_tokens", None),
        )

    def tool_call(self, call_id: str, name: str, arguments: Any) -> None:
        self.event("tool_call", id=call_id, name=name, arguments=arguments)

    def decisions(self, decisions: list[Any]) -> None:
        """The permission decisions made since the last call of this (the gate keeps them all)."""
        for d in decisions[self.decisions_seen :]:
            self.event(
                "permission",
                tool=d.tool,
                arguments=d.arguments,
                effect=d.effect,
                reason=d.reason,
                by=getattr(d, "by", "auto"),
            )
        self.decisions_seen = len(decisions)

    def tool_result(self, call_id: str, name: str, content: str, seconds: float) -> None:
        cut = cap_text(content, LOG_TEXT_CHARS, "tool output")[0]
        self.event("tool_result", id=call_id, name=name, ms=round(seconds * 1000, 1), content=cut)

    def outcome(
        self,
        status: str,
        *,
        error: str | None = None,
        tokens: int | None = None,
        iterations: int | None = None,
        result: str | None = None,
        request: str | None = None,
    ) -> None:
        self.event(
            "outcome",
            status=status,
            error=error,
            tokens=tokens,
            iterations=iterations,
            ms=round((time.monotonic() - self.started) * 1000, 1),
            result=None if result is None else result[:2000],
            request=request,
        )
