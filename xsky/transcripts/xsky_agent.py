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

from xsky.trajectory import Event
from xsky.transcripts import FileInfo, Identity, ParseState, first_json_value, records, text_of

TASK_PREFIX = "Your task:\n"  # how the agent loop opens every conversation
NOT_INTENT = ("Message from your supervisor:", "You have used all")


class XskyAdapter:
    def identity(self, head: bytes, info: FileInfo) -> Identity:
        found = first_json_value(head, "runId", "agentId", "role", "model")
        key = f"{found.get('runId', '')}:{found.get('agentId', '')}:{info.path}"
        short = hashlib.sha256(key.encode()).hexdigest()[:8]
        return Identity(model_or_project=found.get("role"), short_id=short, project=found.get("runId"), model=found.get("model"))

    def parse(self, data: bytes, base: int, state: ParseState, info: FileInfo) -> list[Event]:
        events: list[Event] = []
        first_user = not state.seen
        for offset, end, rec in records(data, base, state):
            kind = rec.get("type")
            ts = rec.get("timestamp") if isinstance(rec.get("timestamp"), str) else None
            if kind == "session":
                state.model = rec.get("model") if isinstance(rec.get("model"), str) else state.model
                state.session_id = f"{rec.get('runId')}/{rec.get('agentId')}"
                facts = f"run {rec.get('runId')} · agent {rec.get('agentId')} · role {rec.get('role')}"
                events.append(Event("marker", facts, offset, end, timestamp=ts, marker="session_start"))
                continue
            if kind == "outcome":
                status = rec.get("status")
                events.append(Event("marker", str(rec.get("error") or status or ""), offset, end, timestamp=ts,
                                    marker="task_complete" if status == "completed" else "aborted"))
                continue
            message = rec.get("message")
            if kind != "message" or not isinstance(message, dict):
                state.count_opaque(kind if isinstance(kind, str) else "(no type)")
                continue
            role = message.get("role")
            text = text_of(message.get("content"))
            if role == "system":
                events.append(Event("meta", text, offset, end, timestamp=ts))
            elif role == "user":
                intent = first_user or not text.startswith(NOT_INTENT)
                shown = text.removeprefix(TASK_PREFIX) if first_user else text
                events.append(Event("user" if intent else "meta", shown, offset, end, timestamp=ts))
                first_user = False
                state.remember("seen", "user")
            elif role == "assistant":
                if text.strip():
                    events.append(Event("assistant", text, offset, end, timestamp=ts))
                for call in message.get("tool_calls") or []:
                    events.append(_call(call, offset, end, ts, state))
            elif role == "tool":
                call_id = message.get("tool_call_id") if isinstance(message.get("tool_call_id"), str) else None
                name = state.calls.pop(call_id, None) if call_id else None
                failed = text.startswith(("ERROR:", "DENIED:", "STOPPED:"))
                events.append(Event("tool_result", text, offset, end, timestamp=ts, call_id=call_id, tool=name, is_error=failed))
        return events


def _call(call: Any, offset: int, end: int, ts: str | None, state: ParseState) -> Event:
    fn = call.get("function") if isinstance(call, dict) and isinstance(call.get("function"), dict) else {}
    name = str(fn.get("name") or "tool")
    raw = fn.get("arguments") or "{}"
    try:
        args: Any = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        args = raw
    call_id = call.get("id") if isinstance(call, dict) and isinstance(call.get("id"), str) else None
    if call_id:
        state.open_call(call_id, name)
    skill = args.get("name") if name == "read_skill" and isinstance(args, dict) and isinstance(args.get("name"), str) else None
    text = raw if isinstance(raw, str) else json.dumps(raw)
    return Event("tool_call", text, offset, end, timestamp=ts, call_id=call_id, tool=name, skill=skill)
