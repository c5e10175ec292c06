"""Adapters: the raw JSONL of one coding agent → :class:`xsky.skills.trajectory.Event`s.

One module per source kind (``claude_code``, ``codex``, ``xsky_agent``). Each parses the
complete lines of one delta, carrying a small :class:`ParseState` from delta to delta
(what was already seen, open tool calls, the session's model and cwd), and never trusts a
record's shape: unknown record types and unknown fields are kept opaque (indexed, not
interpreted), a line that is not JSON is counted and skipped. Every record type seen is
counted, as ``interpreted`` (a rule read it) or ``opaque`` (kept, not read): ``skills
status`` shows both, so a record type that carries the person's words and is not read yet
is noticed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Protocol

from pydantic import Field

from xsky.security.redact import redact
from xsky.skills.kinds import SOURCE_KINDS as SOURCE_KINDS
from xsky.skills.kinds import SourceKind as SourceKind
from xsky.skills.trajectory import Event
from xsky.wire import WireModel

# The short kind in trajectory ids and folder names: <home>/<tag>_sessions/traj_<tag>_….
KIND_TAG: dict[str, str] = {"claude-code": "cc", "codex": "codex", "xsky": "xsky"}

# Bounds on what the state remembers between deltas (it travels through a database row).
KEEP_SEEN = 4000
KEEP_CALLS = 500
KEEP_TYPES = 100  # record types counted per file (a record type is data: it may be anything)
KEEP_PENDING = 50  # queued prompts and mirrored texts remembered at once
NOT_INTENT = "not-intent"  # the record key of text recognised as not a person's intent


class ParseState(WireModel):
    """What an adapter remembers about one raw file between deltas."""

    session_id: str | None = None
    cwd: str | None = None
    model: str | None = None
    last_uuid: dict[str, str] = Field(default_factory=dict)  # per lane: the last record rendered
    known: list[str] = Field(default_factory=list)  # recent uuids (to tell a branch from a gap)
    last_time: dict[str, str] = Field(default_factory=dict)  # per lane: the latest timestamp
    seen: list[str] = Field(default_factory=list)  # recent dedupe keys
    calls: dict[str, str] = Field(default_factory=dict)  # open call id → tool name
    opaque: dict[str, int] = Field(default_factory=dict)  # record types kept opaque, counted
    interpreted: dict[str, int] = Field(default_factory=dict)  # record types a rule read, counted
    unreadable: int = 0  # lines that were not JSON objects
    # Who wrote the next user turn, from structure (both survive delta edges):
    question: str = ""  # the end of the agent's last words when they asked or offered options
    correction: bool = False  # the person rejected a tool use: the next prompt corrects
    # The person interrupted the agent: the next prompt refines the task or names a new one.
    interrupted: bool = False
    # Lanes whose conversation is machine work (a compaction agent, a warm-up): "<lane>:<kind>".
    machine_lanes: list[str] = Field(default_factory=list)
    # Claude Code's prompt queue: prompts typed while the agent works, not yet delivered …
    queued: list[str] = Field(default_factory=list)
    # … each with its kind, in the same order: one queue holds the person's prompts and
    # Claude Code's task notifications alike ("prompt" or a machine kind; missing: "prompt").
    queued_kinds: list[str] = Field(default_factory=list)
    # … and the ones delivered, so the user message they are popped into is not a second prompt.
    delivered: list[str] = Field(default_factory=list)  # text fingerprints
    call_skills: dict[str, str] = Field(default_factory=dict)  # open call id → skill it would use
    # Codex writes a prompt twice (response_item and event_msg) or once (Desktop): the
    # fingerprints of texts seen from one side, with the record number, to drop the mirror.
    mirror: list[str] = Field(default_factory=list)  # "<side>:<record no>:<fingerprint>"
    seq: int = 0  # records seen in this file
    failed_calls: list[str] = Field(default_factory=list)  # calls whose command exited non-zero
    succeeded: list[str] = Field(default_factory=list)  # "<call id>\t<tool>" of recent good outputs
    last_command: str = ""  # the slash command just typed (``/name``): a skill it loads is used
    # Who types this file's user turns when it is not a person: "model" (an agent another
    # agent spawned: its prompts are that model's) or "machine" (a review, a compaction —
    # no task at all); "" for a person's session.
    writer: str = ""
    # The person's session this file belongs to when another thread spawned it (a Codex
    # sub-agent names its parent's thread): evidence counts a parent and its sub-agent once.
    parent_session: str | None = None
    # Records another transcript holds already (a session resumed into a new file, a fork that
    # copies its parent's history): passed over as they come, counted; ``copying`` tells a
    # record without a key (a summary, a queue operation) which side of the copy it is on.
    copying: bool = False
    copied: int = 0
    chain: str = ""  # Codex: the running hash of the records so far (a fork copies a prefix)
    looked: bool = False  # records of this file were looked up as possible copies
    forked: bool = False  # Codex: a fork or a spawned sub-agent (it may begin with copies)

    def remember(self, attr: str, value: str, keep: int = KEEP_SEEN) -> None:
        items: list[str] = getattr(self, attr)
        items.append(value)
        if len(items) > keep * 2:  # trim in batches: amortised O(1)
            del items[: len(items) - keep]

    def open_call(self, call_id: str, name: str, skill: str | None = None) -> None:
        """A call waiting for its result; ``skill``: the skill it uses if it succeeds."""
        self.calls[call_id] = name
        if skill is not None:
            self.call_skills[call_id] = skill
        for calls in (self.calls, self.call_skills):
            if len(calls) > KEEP_CALLS * 2:
                for key in list(calls)[: len(calls) - KEEP_CALLS]:
                    del calls[key]

    def close_call(self, call_id: str | None, failed: bool) -> tuple[str | None, str | None]:
        """(tool name, skill used) of a call's result: a failed call used no skill."""
        if call_id is None:
            return None, None
        tool = self.calls.pop(call_id, None)
        skill = self.call_skills.pop(call_id, None)
        return tool, None if failed else skill

    def count_opaque(self, kind: str, sub: Any = None) -> None:
        _count(self.opaque, kind, sub)

    def count_interpreted(self, kind: str, sub: Any = None) -> None:
        _count(self.interpreted, kind, sub)

    def count_not_intent(self, what: str) -> None:
        """Text recognised as not a person's intent (machine text, a menu letter), by kind:
        counted as the record key ``not-intent/<kind>`` that ``skills status`` lists."""
        _count(self.interpreted, NOT_INTENT, what)

    def machine_lane(self, lane: str) -> str | None:
        """The machine kind of a lane's conversation, if it is machine work."""
        for item in self.machine_lanes:
            name, _, kind = item.partition(":")
            if name == lane:
                return kind
        return None

    def set_machine_lane(self, lane: str, kind: str | None) -> None:
        self.machine_lanes = [i for i in self.machine_lanes if i.partition(":")[0] != lane]
        if kind is not None:
            self.machine_lanes.append(f"{lane}:{kind}")

    def bounded(self, attr: str, value: str, keep: int = KEEP_PENDING) -> None:
        """Append to a short list, dropping the oldest beyond ``keep``."""
        items: list[str] = getattr(self, attr)
        items.append(value)
        del items[: max(0, len(items) - keep)]


def record_key(kind: Any, sub: Any = None) -> str:
    """``type`` or ``type/subtype`` of a record, as counted (never free text)."""
    key = ident(kind) or "(other)"  # a record type is data too: never a way to smuggle text out
    if sub is not None:
        key += "/" + (ident(sub) or "(other)")
    return key


def _count(counts: dict[str, int], kind: str, sub: Any) -> None:
    key = record_key(kind, sub)
    if key in counts or len(counts) < KEEP_TYPES:
        counts[key] = counts.get(key, 0) + 1


@dataclass(frozen=True)
class FileInfo:
    """What the adapter knows about the file apart from its lines."""

    path: str
    subagent: bool = False  # a Claude Code subagents/agent-*.jsonl file
    # The session of the other transcript that committed the record with this key, or None
    # (activities/skills/render.py asks the store); and the keys of the records read here.
    owner: Callable[[str], str | None] | None = None
    claims: list[str] = field(default_factory=list)


def copied(info: FileInfo, state: ParseState, keys: list[str], look: bool = True) -> bool:
    """Whether a record is a copy of another transcript's (one of its ``keys`` is held by
    one) — its events are dropped, what it tells the parse state is kept (a new turn's parent
    is a copied record) — and its session the one this file continues; a record of this
    file's own has its keys claimed. A record without keys is on the side of the one before.
    ``look`` False: this file copies nothing (its keys are claimed, never looked up)."""
    if not keys:
        return state.copying
    owner = None
    if info.owner is not None and look:
        state.looked = True
        owner = next((o for o in map(info.owner, keys) if o is not None), None)
    if owner is None:
        state.copying = False
        info.claims.extend(keys)
        return False
    state.copying = True
    state.copied += 1
    if state.parent_session is None:  # evidence counts a session and its resumed copy once
        state.parent_session = owner
    return True


@dataclass(frozen=True)
class Identity:
    """How a new file is named: ``traj_<tag>_<model-or-project>_<short-id>``."""

    model_or_project: str | None
    short_id: str
    project: str | None = None
    model: str | None = None
    # The session whose records this file begins with, copied (a Codex fork, a sub-agent given
    # its parent's context): the scan reads that session's file first, so the copy is known.
    copies: str | None = None


class Adapter(Protocol):
    def parse(self, data: bytes, base: int, state: ParseState, info: FileInfo) -> list[Event]: ...

    def identity(self, head: bytes, info: FileInfo) -> Identity: ...


_IDENT = re.compile(r"^[A-Za-z0-9_.:\-]{1,80}$")
_PART = r"[a-z0-9][a-z0-9-]{0,63}"
# A skill name as used: ``name``, or ``plugin:name`` for a plugin's skill (the namespace is
# kept: ``handgemacht:commit`` is not the library's ``commit``).
SKILL_NAME = re.compile(rf"^(?:{_PART}:)?{_PART}$")


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
    """A skill name as used (``name``, ``/name args``, ``plugin:name``: the namespace kept), or None."""
    if not isinstance(value, str):
        return None
    words = value.strip().lstrip("/").split()
    name = words[0] if words else ""
    return name if SKILL_NAME.match(name) else None


def guarded(
    parse_one: Any, offset: int, end: int, rec: dict[str, Any], state: ParseState
) -> list[Any]:
    """One record parsed, or counted unreadable: a malformed record never blocks a transcript."""
    try:
        return parse_one(offset, end, rec, state)
    # (RecursionError: a record nested deeper than Python walks, made or hostile)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError):
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
            # a line nested deeper than the parser goes: unreadable, not a transcript stuck
            # on it for ever (every later tick failed the same delta)
            except (ValueError, RecursionError):
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
                elif block.get("type") == "image":  # (a Read of a picture: not its bytes)
                    parts.append("[image]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return "(nested too deeply to show)"


_WINDOWS_PATH = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


def folder_name(path: str) -> str:
    """The last folder of a recorded working directory, a Windows one (``C:\\Users\\dev\\shop``)
    as well as a POSIX one — the project a transcript is named for."""
    if _WINDOWS_PATH.match(path) or ("\\" in path and "/" not in path):
        return PureWindowsPath(path).name
    return PurePosixPath(path).name


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
