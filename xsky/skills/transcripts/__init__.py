"""Adapters: the raw JSONL of one coding agent → :class:`xsky.skills.trajectory.Event`s.

One module per source kind (``claude_code``, ``codex``, ``xsky_agent``). Each parses the
complete lines of one delta, carrying a small :class:`ParseState` from delta to delta
(what was already seen, open tool calls, the session's model and cwd), and never trusts a
record's shape: unknown record types and unknown fields are kept opaque (indexed, not
interpreted), a line that is not JSON is counted and skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import Field

from xsky.plan.models import WireModel
from xsky.security.redact import redact
from xsky.skills.trajectory import Event

SourceKind = Literal["claude-code", "codex", "xsky"]
SOURCE_KINDS: tuple[SourceKind, ...] = ("claude-code", "codex", "xsky")
# The short kind in trajectory ids and folder names: <home>/<tag>_sessions/traj_<tag>_….
KIND_TAG: dict[str, str] = {"claude-code": "cc", "codex": "codex", "xsky": "xsky"}

# Bounds on what the state remembers between deltas (it travels through a database row).
KEEP_SEEN = 4000
KEEP_CALLS = 500


class ParseState(WireModel):
    """What an adapter remembers about one raw file between deltas."""

    session_id: str | None = None
    cwd: str | None = None
    model: str | None = None
    last_uuid: dict[str, str] = Field(default_factory=dict)  # per lane: the last record rendered
    known: list[str] = Field(default_factory=list)  # recent uuids (to tell a branch from a gap)
    seen: list[str] = Field(default_factory=list)  # recent dedupe keys
    calls: dict[str, str] = Field(default_factory=dict)  # open call id → tool name
    opaque: dict[str, int] = Field(default_factory=dict)  # record types kept opaque, counted
    unreadable: int = 0  # lines that were not JSON objects

    def remember(self, attr: str, value: str, keep: int = KEEP_SEEN) -> None:
        items: list[str] = getattr(self, attr)
        items.append(value)
        if len(items) > keep * 2:  # trim in batches: amortised O(1)
            del items[: len(items) - keep]

    def open_call(self, call_id: str, name: str) -> None:
        self.calls[call_id] = name
        if len(self.calls) > KEEP_CALLS * 2:
            for key in list(self.calls)[: len(self.calls) - KEEP_CALLS]:
                del self.calls[key]

    def count_opaque(self, kind: str) -> None:
        key = ident(kind) or "(other)"  # a record type is data too: never a way to smuggle text out
        if key in self.opaque or len(self.opaque) < 100:
            self.opaque[key] = self.opaque.get(key, 0) + 1


@dataclass(frozen=True)
class FileInfo:
    """What the adapter knows about the file apart from its lines."""

    path: str
    subagent: bool = False  # a Claude Code subagents/agent-*.jsonl file


@dataclass(frozen=True)
class Identity:
    """How a new file is named: ``traj_<tag>_<model-or-project>_<short-id>``."""

    model_or_project: str | None
    short_id: str
    project: str | None = None
    model: str | None = None


class Adapter(Protocol):
    def parse(self, data: bytes, base: int, state: ParseState, info: FileInfo) -> list[Event]: ...

    def identity(self, head: bytes, info: FileInfo) -> Identity: ...


_IDENT = re.compile(r"^[A-Za-z0-9_.:\-]{1,80}$")
SKILL_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


def ident(value: Any) -> str | None:
    """A record's identifier (tool name, call id, uuid, model, type) if it looks like one.

    Identifiers go into headings, indexes and model prompts unredacted, so anything that
    is not a plain token (a key pasted as a tool name, a path, prose) is dropped.
    """
    if not isinstance(value, str) or not _IDENT.match(value):
        return None
    return value if redact(value) == value else None  # a key has the shape of an identifier too


def json_object(value: Any) -> dict[str, Any]:
    """A record's field when it is a JSON object, else an empty one (any field may have any type)."""
    return value if isinstance(value, dict) else {}


def skill_name(value: Any) -> str | None:
    """A skill name as the library spells them (``plugin:name`` → ``name``), or None."""
    if not isinstance(value, str):
        return None
    name = value.strip().lstrip("/").split(":")[-1].split()[0] if value.strip().lstrip("/") else ""
    return name if SKILL_NAME.match(name) else None


def guarded(
    parse_one: Any, offset: int, end: int, rec: dict[str, Any], state: ParseState
) -> list[Any]:
    """One record parsed, or counted unreadable: a malformed record never blocks a transcript."""
    try:
        return parse_one(offset, end, rec, state)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError):
        state.unreadable += 1
        return []


def records(data: bytes, base: int, state: ParseState) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(byte offset, byte end, record) for each complete JSON-object line of ``data``."""
    at = 0
    n = len(data)
    while at < n:
        nl = data.find(b"\n", at)
        end = n if nl < 0 else nl + 1
        line = data[at:end].strip()
        if line:
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
            if isinstance(rec, dict):
                yield base + at, base + end, rec
            else:
                state.unreadable += 1
        at = end


def text_of(content: Any) -> str:
    """Plain text of a message content: a string, or the text parts of a block list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                value = block.get("text")
                if isinstance(value, str):
                    parts.append(value)
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def first_json_value(head: bytes, *keys: str) -> dict[str, Any]:
    """The first of ``keys`` found in the complete lines of ``head``, as {key: value}."""
    found: dict[str, Any] = {}
    state = ParseState()
    for _, _, rec in records(head[: head.rfind(b"\n") + 1] if b"\n" in head else head, 0, state):
        for key in keys:
            if key not in found:
                value = dig(rec, key)
                if isinstance(value, str) and value:
                    found[key] = value
        if len(found) == len(keys):
            break
    return found


def dig(rec: dict[str, Any], dotted: str) -> Any:
    value: Any = rec
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def adapter_for(kind: str) -> Adapter:
    """The adapter of a source kind."""
    from xsky.skills.transcripts.claude_code import ClaudeCodeAdapter
    from xsky.skills.transcripts.codex import CodexAdapter
    from xsky.skills.transcripts.xsky_agent import XskyAdapter

    adapters: dict[str, Adapter] = {
        "claude-code": ClaudeCodeAdapter(),
        "codex": CodexAdapter(),
        "xsky": XskyAdapter(),
    }
    if kind not in adapters:
        raise ValueError(
            f"unknown transcript source kind {kind!r}; kinds: {', '.join(SOURCE_KINDS)}"
        )
    return adapters[kind]
