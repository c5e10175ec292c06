"""Claude Code sessions: ``<root>/<munged-cwd>/<session>.jsonl`` (+ ``<session>/subagents/agent-*.jsonl``).

The record format is internal to Claude Code and changes between releases, so only what
is documented by observation is interpreted (``user``, ``assistant``, ``system``
subtypes, ``summary``) and everything else is kept opaque. Rules that matter for skills:

- order follows the ``parentUuid`` → ``uuid`` chain, not file order; a record whose parent
  is not the previous one starts a branch (a rewind or an edited prompt) and says so;
- one API message is written as several lines (one content block each) sharing
  ``message.id`` and ``requestId``; an identical line seen twice is dropped;
- ``isMeta`` lines, command wrappers and ``isCompactSummary`` summaries are never user intent;
- ``isSidechain`` lines inside a main file are an old-style subagent: their own lane;
- a skill is *used* when the assistant calls the ``Skill`` tool (``input.skill``) or
  reads a ``…/skills/<name>/SKILL.md``; the injected skill listing is not use.
"""

from __future__ import annotations

import hashlib
import json
import re
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
    skill_name,
    text_of,
)

SKILL_FILE = re.compile(r"skills/([a-z0-9][a-z0-9-]{0,63})/SKILL\.md")
_COMMAND_WRAPPER = (
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "Caveat: The messages below were generated",
    "<system-reminder>",
    "<bash-input>",
    "<bash-stdout>",
)
INTERRUPTED = "[Request interrupted by user"


def munged_cwd(cwd: str) -> str:
    """The project folder name Claude Code uses for a cwd."""
    return re.sub(r"[/.\\:]", "-", cwd)


class ClaudeCodeAdapter:
    def identity(self, head: bytes, info: FileInfo) -> Identity:
        path = PurePosixPath(info.path)
        found = first_json_value(head, "cwd", "message.model", "sessionId", "agentId")
        cwd = found.get("cwd")
        project = PurePosixPath(cwd).name if cwd else path.parent.name.rsplit("-", 1)[-1]
        if info.subagent:  # <root>/<project>/<session>/subagents/agent-<id>.jsonl
            session = path.parent.parent.name
            agent = found.get("agentId") or path.stem.removeprefix("agent-")
            if not cwd:
                project = path.parent.parent.parent.name.rsplit("-", 1)[-1]
            short = f"{session[:8]}-sub-{agent[:8]}"
        else:
            short = (found.get("sessionId") or path.stem)[:8]
        return Identity(
            model_or_project=project,
            short_id=short,
            project=project,
            model=found.get("message.model"),
        )

    def parse(self, data: bytes, base: int, state: ParseState, info: FileInfo) -> list[Event]:
        lines = list(records(data, base, state))
        events: list[Event] = []
        for offset, end, rec in _parent_order(lines):
            events.extend(
                guarded(lambda o, e, r, s: self._record(o, e, r, s, info), offset, end, rec, state)
            )
        return events

    # -- one record --------------------------------------------------------------------------

    def _record(
        self, offset: int, end: int, rec: dict[str, Any], state: ParseState, info: FileInfo
    ) -> list[Event]:
        kind = rec.get("type")
        if not isinstance(kind, str) or kind not in ("user", "assistant", "system"):
            state.count_opaque(kind if isinstance(kind, str) else "(no type)")
            return []
        lane = "sidechain" if rec.get("isSidechain") is True and not info.subagent else "main"
        uuid = ident(rec.get("uuid"))
        ts = ident(rec.get("timestamp"))
        if isinstance(rec.get("cwd"), str):
            state.cwd = redact(rec["cwd"].replace("\n", " "))[:500]
        if ident(rec.get("sessionId")):
            state.session_id = rec["sessionId"]
        key = _dedupe_key(rec)
        if key is not None:
            if key in state.seen:
                return []
            state.remember("seen", key)
        out: list[Event] = []
        parent = ident(rec.get("parentUuid"))
        if uuid is not None:
            last = state.last_uuid.get(lane)
            if (
                isinstance(parent, str)
                and last is not None
                and parent != last
                and parent in state.known
            ):
                out.append(
                    Event(
                        "marker",
                        f"continues from earlier message {parent} (a rewind or an edited prompt)",
                        offset,
                        end,
                        lane,
                        uuid=uuid,
                        marker="branch",
                        timestamp=ts,
                    )
                )
            state.last_uuid[lane] = uuid
            state.remember("known", uuid)

        def ev(kind: Any, text: str, **kw: Any) -> Event:
            return Event(kind, text, offset, end, lane, uuid=uuid, timestamp=ts, **kw)

        message = json_object(rec.get("message"))
        if kind == "system":
            sub = rec.get("subtype")
            if sub == "compact_boundary":
                meta = json_object(rec.get("compactMetadata"))
                why = (
                    f"{meta.get('trigger', '?')} compaction at {meta.get('preTokens', '?')} tokens"
                )
                out.append(ev("marker", why, marker="compaction"))
            elif sub == "turn_duration":
                ms = rec.get("durationMs")
                out.append(
                    ev(
                        "marker",
                        f"turn took {ms / 1000:.0f}s" if isinstance(ms, (int, float)) else "",
                        marker="turn_end",
                    )
                )
            else:
                out.append(ev("meta", f"{sub or 'system'}: {as_text(rec.get('content', ''))}"))
            return out

        if kind == "assistant":
            model = ident(message.get("model"))
            if model and not model.startswith("<"):
                state.model = model
            for block in _blocks(message.get("content")):
                btype = block.get("type")
                if btype == "text":
                    out.append(ev("assistant", str(block.get("text", ""))))
                elif btype == "thinking":
                    out.append(ev("thinking", str(block.get("thinking", ""))))
                elif btype in ("tool_use", "server_tool_use"):
                    name = ident(block.get("name")) or "tool"
                    call_id = ident(block.get("id"))
                    args = json_object(block.get("input"))
                    if call_id:
                        state.open_call(call_id, name)
                    out.append(
                        Event(
                            "tool_call",
                            _call_text(name, args),
                            offset,
                            end,
                            lane,
                            uuid=uuid,
                            call_id=call_id,
                            tool=name,
                            skill=_skill_used(name, args),
                            timestamp=ts,
                        )
                    )
                elif btype is not None:
                    state.count_opaque(f"assistant.{btype}")  # ident() inside drops anything odd
            return out

        # user lines: a prompt, tool results, or injected context
        content = message.get("content")
        if rec.get("isCompactSummary") is True:
            out.append(ev("compaction", text_of(content)))
            return out
        if rec.get("isMeta") is True:
            out.append(ev("meta", text_of(content)))
            return out
        if isinstance(content, str):
            out.extend(self._prompt(content, ev))
            return out
        for block in _blocks(content):
            btype = block.get("type")
            if btype == "tool_result":
                call_id = ident(block.get("tool_use_id"))
                tool = state.calls.pop(call_id, None) if call_id else None
                out.append(
                    Event(
                        "tool_result",
                        _result_text(block.get("content")),
                        offset,
                        end,
                        lane,
                        uuid=uuid,
                        call_id=call_id,
                        tool=tool,
                        is_error=block.get("is_error") is True,
                        timestamp=ts,
                    )
                )
            elif btype == "text":
                out.extend(self._prompt(str(block.get("text", "")), ev))
            elif btype == "image":
                out.append(ev("meta", "[image]"))
            elif btype is not None:
                state.count_opaque(f"user.{btype}")
        return out

    @staticmethod
    def _prompt(text: str, ev: Any) -> list[Event]:
        stripped = text.lstrip()
        if stripped.startswith(INTERRUPTED):
            return [ev("marker", "the person interrupted the agent", marker="interrupted")]
        if stripped.startswith(_COMMAND_WRAPPER):
            return [ev("meta", text)]
        return [ev("user", text)] if stripped else []


def _parent_order(
    lines: list[tuple[int, int, dict[str, Any]]],
) -> list[tuple[int, int, dict[str, Any]]]:
    """File order, except that a record never comes before its parent from the same delta."""
    in_delta = {rec["uuid"] for _, _, rec in lines if isinstance(rec.get("uuid"), str)}
    emitted: set[str] = set()
    waiting: dict[str, list[tuple[int, int, dict[str, Any]]]] = {}
    ordered: list[tuple[int, int, dict[str, Any]]] = []

    def emit(item: tuple[int, int, dict[str, Any]]) -> None:
        stack = [item]
        while stack:
            current = stack.pop()
            ordered.append(current)
            uuid = current[2].get("uuid")
            if isinstance(uuid, str):
                emitted.add(uuid)
                stack.extend(reversed(waiting.pop(uuid, [])))

    for item in lines:
        parent = item[2].get("parentUuid")
        if (
            isinstance(parent, str)
            and parent in in_delta
            and parent not in emitted
            and parent != item[2].get("uuid")
        ):
            waiting.setdefault(parent, []).append(item)
        else:
            emit(item)
    for rest in waiting.values():  # parents that never came (a cycle or a broken chain): file order
        ordered.extend(rest)
    return ordered


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    if isinstance(content, str) and content:
        return [{"type": "text", "text": content}]
    return []


def _dedupe_key(rec: dict[str, Any]) -> str | None:
    """``message.id:requestId`` plus the line's content: the same block written twice is one."""
    message = rec.get("message")
    if rec.get("type") != "assistant" or not isinstance(message, dict):
        return None
    mid, rid = message.get("id"), rec.get("requestId")
    if not isinstance(mid, str):
        return None
    body = json.dumps(message.get("content"), sort_keys=True, default=str)
    return f"{mid}:{rid}:{hashlib.sha1(body.encode(), usedforsecurity=False).hexdigest()[:12]}"


def _call_text(name: str, args: dict[str, Any]) -> str:
    for key in ("command", "file_path", "pattern", "url", "skill", "prompt", "path"):
        if isinstance(args.get(key), str) and len(args) <= 3:
            rest = {k: v for k, v in args.items() if k != key}
            return args[key] + (f"\n{as_text(rest)}" if rest else "")
    return as_text(args)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return text_of(content) or as_text(content)


def _skill_used(name: str, args: dict[str, Any]) -> str | None:
    if name == "Skill":
        return skill_name(args.get("skill") or args.get("command"))
    if name in ("Read", "View"):
        m = SKILL_FILE.search(str(args.get("file_path", "")))
        return m.group(1) if m else None
    return None
