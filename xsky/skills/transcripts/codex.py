"""Codex CLI rollouts: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` and ``archived_sessions/``.

Each line is ``{"timestamp", "type", "payload"}``. ``response_item`` is the protocol log
and the source of truth; ``event_msg`` is the UI log, of which only the turn markers
(``task_started`` / ``task_complete`` / ``turn_aborted``) are used — which other events
get persisted changes between versions. Rules that matter for skills:

- the model is in ``turn_context``, the cwd and thread id in ``session_meta``;
- calls and their outputs are paired by ``call_id``; a non-zero exit code is an error;
- injected context (``<environment_context>``, AGENTS.md / ``<user_instructions>``,
  ``<skills_instructions>``) arrives as user messages but is never user intent;
- a ``compacted`` record is a model-written summary, a boundary, not intent;
- a skill is used when the agent reads a ``…/skills/<name>/SKILL.md`` (Codex lists
  skills in the prompt and the model opens the file itself).
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from xsky.security.redact import redact
from xsky.skills.trajectory import Event
from xsky.skills.transcripts import (
    FileInfo,
    Identity,
    ParseState,
    as_text,
    first_json_value,
    guarded,
    ident,
    json_object,
    records,
)
from xsky.skills.transcripts.claude_code import SKILL_FILE

_INJECTED = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<skills_instructions>",
    "<permissions instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<ide_context>",
)


class CodexAdapter:
    def identity(self, head: bytes, info: FileInfo) -> Identity:
        found = first_json_value(head, "payload.id", "payload.cwd", "payload.model")
        cwd = found.get("payload.cwd")
        project = PurePosixPath(cwd).name if cwd else None
        thread = found.get("payload.id") or PurePosixPath(info.path).stem[-36:]
        return Identity(
            model_or_project=project or found.get("payload.model"),
            short_id=thread.replace("-", "")[:8],
            project=project,
            model=found.get("payload.model"),
        )

    def parse(self, data: bytes, base: int, state: ParseState, info: FileInfo) -> list[Event]:
        events: list[Event] = []
        for offset, end, rec in records(data, base, state):
            events.extend(guarded(self._record, offset, end, rec, state))
        return events

    def _record(self, offset: int, end: int, rec: dict[str, Any], state: ParseState) -> list[Event]:
        kind = rec.get("type")
        payload = json_object(rec.get("payload"))
        ts = ident(rec.get("timestamp"))

        def ev(kind: Any, text: str, **kw: Any) -> Event:
            return Event(kind, text, offset, end, timestamp=ts, **kw)

        if kind == "session_meta":
            state.session_id = ident(payload.get("id")) or state.session_id
            state.cwd = _cwd(payload.get("cwd")) or state.cwd
            facts = ", ".join(
                f"{k} {payload[k]}"
                for k in ("cwd", "originator", "cli_version")
                if _str(payload.get(k))
            )
            return [ev("marker", facts, marker="session_start")]
        if kind == "turn_context":
            state.model = ident(payload.get("model")) or state.model
            state.cwd = _cwd(payload.get("cwd")) or state.cwd
            return []
        if kind == "compacted":
            return [ev("compaction", _str(payload.get("message")) or "(context compacted)")]
        if kind == "event_msg":
            etype = payload.get("type")
            if etype in ("task_started", "turn_started"):
                return [ev("marker", "", marker="task_start")]
            if etype in ("task_complete", "turn_complete"):
                return [ev("marker", "", marker="task_complete")]
            if etype == "turn_aborted":
                return [ev("marker", _str(payload.get("reason")) or "", marker="aborted")]
            return []  # the UI log repeats response items; other events are not reliably persisted
        if kind != "response_item":
            state.count_opaque(kind if isinstance(kind, str) else "(no type)")
            return []

        ptype = payload.get("type")
        if ptype == "message":
            role = payload.get("role")
            text = _content_text(payload.get("content"))
            if role == "user":
                if text.lstrip().startswith(_INJECTED):
                    return [ev("meta", text)]
                return [ev("user", text)] if text.strip() else []
            if role == "assistant":
                return [ev("assistant", text)] if text.strip() else []
            return [ev("meta", f"{role}: {text}")]
        if ptype == "reasoning":
            summary = payload.get("summary")
            parts = (
                [s.get("text", "") for s in summary if isinstance(s, dict)]
                if isinstance(summary, list)
                else []
            )
            text = "\n".join(p for p in parts if isinstance(p, str))
            return [ev("thinking", text)] if text.strip() else []
        if ptype in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
            name = ident(payload.get("name")) or ptype.removesuffix("_call")
            call_id = ident(payload.get("call_id")) or ident(payload.get("id"))
            text = _call_text(ptype, payload)
            if call_id:
                state.open_call(call_id, name)
            m = SKILL_FILE.search(text)
            return [
                ev("tool_call", text, call_id=call_id, tool=name, skill=m.group(1) if m else None)
            ]
        if ptype in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            call_id = ident(payload.get("call_id"))
            name = state.calls.pop(call_id, None) if call_id else None
            text, failed = _output(payload.get("output"))
            return [ev("tool_result", text, call_id=call_id, tool=name, is_error=failed)]
        state.count_opaque(f"response_item.{ptype}")
        return []


def _cwd(value: Any) -> str | None:
    return redact(value.replace("\n", " "))[:500] if isinstance(value, str) and value else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict):
            if isinstance(item.get("text"), str):
                parts.append(item["text"])
            elif item.get("type") == "input_image":
                parts.append("[image]")
    return "\n".join(parts)


def _call_text(ptype: str, payload: dict[str, Any]) -> str:
    if ptype == "function_call":
        raw = payload.get("arguments")
        try:
            args = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            return str(raw)
        if isinstance(args, dict) and isinstance(args.get("command"), list):
            command = args["command"]
            shown = (
                command[-1]
                if len(command) >= 3 and command[0] in ("bash", "sh", "zsh")
                else " ".join(map(str, command))
            )
            rest = {k: v for k, v in args.items() if k != "command"}
            return str(shown) + (f"\n{as_text(rest)}" if rest else "")
        if isinstance(args, dict) and isinstance(args.get("cmd"), str):
            return args["cmd"]
        return as_text(args)
    if ptype == "custom_tool_call":
        return as_text(payload.get("input", ""))
    if ptype == "local_shell_call":
        action = json_object(payload.get("action"))
        command = action.get("command")
        return " ".join(map(str, command)) if isinstance(command, list) else as_text(action)
    # web_search_call: {"query": …}, or whatever a newer version sends
    search = payload.get("action")
    return as_text(search.get("query", search) if isinstance(search, dict) else search)


def _output(output: Any) -> tuple[str, bool]:
    """The text of a call's output and whether it failed (non-zero exit code)."""
    if isinstance(output, str):
        try:
            parsed = json.loads(output) if output.lstrip().startswith("{") else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "output" in parsed:
            output = parsed
        else:
            return output, False
    if isinstance(output, dict):
        meta = json_object(output.get("metadata"))
        code = meta.get("exit_code", output.get("exit_code"))
        failed = isinstance(code, int) and code != 0
        body = as_text(output.get("output", output))
        return (f"exit code {code}\n{body}" if failed else body), failed
    if isinstance(output, list):
        return "\n".join(
            as_text(o.get("text", o)) if isinstance(o, dict) else as_text(o) for o in output
        ), False
    return as_text(output), False
