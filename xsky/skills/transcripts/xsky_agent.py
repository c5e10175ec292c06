"""xsky's own agent conversations: ``$XSKY_HOME/transcripts/<run>/<agent>-<key>.jsonl``.

The agent loop writes one file per finished conversation (activities/transcripts.py):
a ``session`` line (run, agent, role, model, task, the skills it could read and from
which branch), one ``message`` line per chat message in the OpenAI shape, and an
``outcome`` line. Our own agents thereby feed the same skill pipeline as Claude Code and
Codex. A skill is used when the agent called ``read_skill``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from xsky.skills.trajectory import Event
from xsky.skills.transcripts import (
    FileInfo,
    Identity,
    ParseState,
    first_json_value,
    guarded,
    ident,
    json_object,
    records,
    skill_name,
    text_of,
)

TASK_PREFIX = "Your task:\n"  # how the agent loop opens every conversation
NOT_INTENT = ("Message from your supervisor:", "You have used all")


class XskyAdapter:
    def identity(self, head: bytes, info: FileInfo) -> Identity:
        found = first_json_value(head, "runId", "agentId", "role", "model")
        key = f"{found.get('runId', '')}:{found.get('agentId', '')}:{info.path}"
        short = hashlib.sha256(key.encode()).hexdigest()[:8]
        return Identity(
            model_or_project=found.get("role"),
            short_id=short,
            project=found.get("runId"),
            model=found.get("model"),
        )

    def parse(self, data: bytes, base: int, state: ParseState, info: FileInfo) -> list[Event]:
        events: list[Event] = []
        for offset, end, rec in records(data, base, state):
            events.extend(guarded(self._record, offset, end, rec, state))
        return events

    def _record(self, offset: int, end: int, rec: dict[str, Any], state: ParseState) -> list[Event]:
        kind = rec.get("type")
        ts = ident(rec.get("timestamp"))
        if kind in ("session", "outcome") or (
            kind == "message" and isinstance(rec.get("message"), dict)
        ):
            state.count_interpreted(kind)
        if kind == "session":
            state.model = ident(rec.get("model")) or state.model
            state.session_id = f"{ident(rec.get('runId'))}/{ident(rec.get('agentId'))}"
            facts = f"run {ident(rec.get('runId'))} · agent {ident(rec.get('agentId'))} · role {ident(rec.get('role'))}"
            return [Event("marker", facts, offset, end, timestamp=ts, marker="session_start")]
        if kind == "outcome":
            status = rec.get("status")
            return [
                Event(
                    "marker",
                    str(rec.get("error") or status or ""),
                    offset,
                    end,
                    timestamp=ts,
                    marker="task_complete" if status == "completed" else "aborted",
                )
            ]
        message = rec.get("message")
        if kind != "message" or not isinstance(message, dict):
            state.count_opaque(kind if isinstance(kind, str) else "(no type)")
            return []
        role = message.get("role")
        text = text_of(message.get("content"))
        if role == "system":
            return [Event("meta", text, offset, end, timestamp=ts)]
        if role == "user":
            first_user = "user" not in state.seen
            state.remember("seen", "user")
            intent = first_user or not text.startswith(NOT_INTENT)
            shown = text.removeprefix(TASK_PREFIX) if first_user else text
            if not intent:  # the supervisor's steering, the loop's budget notice: not a task
                return [Event("meta", shown, offset, end, timestamp=ts)]
            # the task given to the agent (by a person's plan or a planner): its prompt
            return [Event("user", shown, offset, end, timestamp=ts, origin="prompt")]
        if role == "assistant":
            out = [Event("assistant", text, offset, end, timestamp=ts)] if text.strip() else []
            calls = message.get("tool_calls")
            return out + [
                _call(call, offset, end, ts, state)
                for call in (calls if isinstance(calls, list) else [])
            ]
        if role == "tool":
            call_id = ident(message.get("tool_call_id"))
            name = state.calls.pop(call_id, None) if call_id else None
            failed = text.startswith(("ERROR:", "DENIED:", "STOPPED:"))
            return [
                Event(
                    "tool_result",
                    text,
                    offset,
                    end,
                    timestamp=ts,
                    call_id=call_id,
                    tool=name,
                    is_error=failed,
                )
            ]
        return []


def _call(call: Any, offset: int, end: int, ts: str | None, state: ParseState) -> Event:
    fn = json_object(call.get("function")) if isinstance(call, dict) else {}
    name = ident(fn.get("name")) or "tool"
    raw = fn.get("arguments") or "{}"
    try:
        args: Any = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        args = raw
    call_id = ident(call.get("id")) if isinstance(call, dict) else None
    if call_id:
        state.open_call(call_id, name)
    skill = (
        skill_name(args.get("name")) if name == "read_skill" and isinstance(args, dict) else None
    )
    text = raw if isinstance(raw, str) else json.dumps(raw)
    return Event(
        "tool_call", text, offset, end, timestamp=ts, call_id=call_id, tool=name, skill=skill
    )
