"""Trajectories: a coding agent's transcript as events, rendered to a ``.md`` view with an index.

The raw JSONL stays the source of truth. An adapter (``xsky/skills/transcripts/``) turns the
bytes of one delta into :class:`Event`s; :func:`render` appends them to the trajectory's
``.md`` view and returns, for every event, its character range in the view and its raw
anchor (byte range, ``uuid`` / ``call_id``), so any slice of the view maps back to the
file it came from. Every text passes :func:`xsky.security.redact.redact` on the way in.

The ``.md`` is a *view*: its character offsets are stable because the view is only ever
appended to (one render version per trajectory, recorded in its index), never re-rendered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from xsky.security.redact import redact

RENDER_VERSION = "md-1"

EventKind = Literal[
    "user",  # a real prompt typed by a person: a candidate atom boundary
    "assistant",  # the agent's visible answer
    "thinking",  # reasoning (shortened)
    "tool_call",
    "tool_result",
    "compaction",  # a context compaction and its model-written summary: never user intent
    "marker",  # task started / completed, turn ended, interrupted, aborted, branch, reverted
    "meta",  # injected context, command wrappers, skill listings, titles: never user intent
]
Marker = Literal[
    "task_start",
    "task_complete",
    "turn_end",
    "interrupted",
    "aborted",
    "branch",
    "reverted",  # the person undid the agent's file changes (Codex's /undo)
    "session_start",
    "compaction",
    "api_retry",  # the model's API failed and the agent will try again (Claude Code's notice)
]
# Who wrote a ``user`` event (adapters classify every user-role record; machine input such as
# task notifications, hook output and compaction instructions is not ``user`` at all but
# ``meta`` or ``compaction``):
UserOrigin = Literal[
    "prompt",  # the person's own prompt
    "queued",  # a prompt the person typed while the agent worked (delivered when dequeued)
    "correction",  # the person correcting or refining the task in progress
    # the first prompt after the person interrupted the agent: a refinement of the task, or
    # a new goal typed at once (the splitter reads which from the words)
    "after_interrupt",
    "answer",  # an approval or menu answer: stays with the turn that asked
    "model",  # written by a model (a subagent's Task prompt): the task of its own
    # trajectory, but never the founder of a skill
]

# Characters of each kind kept in the view (the raw file keeps everything).
CAPS: dict[str, int] = {
    "user": 20_000,
    "assistant": 20_000,
    "thinking": 1_500,
    "tool_call": 2_000,
    "tool_result": 2_000,
    "compaction": 6_000,
    "marker": 300,
    "meta": 300,
}
# Text is cut to the cap plus this margin *before* redaction (so huge tool outputs are not
# scanned in full) and to the cap after; the margin is longer than any single-line secret.
_REDACT_MARGIN = 4096


# The ``tool`` of an error that is no tool's: the agent's model API failed to answer (Claude
# Code's isApiErrorMessage, Codex's error event). Counted apart from tool errors.
MODEL_API = "model API"


@dataclass
class Event:
    kind: EventKind
    text: str
    offset: int  # byte offset of the raw line
    end: int  # byte end of the raw line
    lane: str = "main"  # "sidechain": an old-style subagent interleaved in the main file
    uuid: str | None = None
    call_id: str | None = None
    tool: str | None = None
    is_error: bool = False
    marker: Marker | None = None
    skill: str | None = None  # a skill this event *used* (measured from the record, not claimed)
    timestamp: str | None = None
    origin: UserOrigin | None = None  # of a ``user`` event: who wrote it


@dataclass
class Unit:
    """One rendered event as the splitter sees it: where it is in the view and what it is."""

    s: int
    e: int
    kind: EventKind
    head: str  # the first characters of its text
    tool: str | None = None
    error: bool = False
    marker: str | None = None
    skill: str | None = None
    offset: int = 0
    end: int = 0
    uuid: str | None = None
    call_id: str | None = None
    origin: str | None = None  # of a ``user`` unit: :data:`UserOrigin`

    def wire(self) -> dict[str, Any]:
        # `is`, not `in`: 0 == False, and offset 0 must be kept.
        return {k: v for k, v in self.__dict__.items() if v is not None and v is not False}

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> Unit:
        return cls(**{k: d.get(k, v) for k, v in _UNIT_DEFAULTS.items()})


_UNIT_DEFAULTS: dict[str, Any] = {
    "s": 0,
    "e": 0,
    "kind": "meta",
    "head": "",
    "tool": None,
    "error": False,
    "marker": None,
    "skill": None,
    "offset": 0,
    "end": 0,
    "uuid": None,
    "call_id": None,
    "origin": None,
}
HEAD_CHARS = 400
# A person's prompt keeps more: a fixed preamble pasted before each request (rules, a
# project brief) can fill the first 400 characters of every prompt, and the request
# follows it (followups.own_part reads past it).
PROMPT_HEAD_CHARS = 4000
# An answer keeps its end too: a turn that ends asking the person something asks it last.
ANSWER_TAIL_CHARS = 400
ANSWER_GAP = "\n[…]\n"


def head_of(text: str, kind: str) -> str:
    """What a unit keeps of its text for the rules: the start (a prompt's longer), and an
    answer's end after it."""
    if kind == "user":
        return text[:PROMPT_HEAD_CHARS]
    if kind == "assistant" and len(text) > HEAD_CHARS + ANSWER_TAIL_CHARS:
        return text[:HEAD_CHARS] + ANSWER_GAP + text[-ANSWER_TAIL_CHARS:]
    return text[: HEAD_CHARS + ANSWER_TAIL_CHARS if kind == "assistant" else HEAD_CHARS]


@dataclass
class Rendered:
    """The ``.md`` text one delta appends to one trajectory, and what is in it."""

    text: str = ""
    units: list[Unit] = field(default_factory=list)


def cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} more characters in the raw transcript]"


# Terminal control in tool output (colours, cursor moves, window titles, hyperlinks): the raw
# JSONL keeps it, the view and everything read from it (atoms, models' prompts) do not.
_ANSI = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC … BEL / ST (titles, hyperlinks)
    r"|\x1b[P_^X][^\x1b]*(?:\x1b\\)?"  # DCS, APC, PM, SOS strings
    r"|\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor, erase)
    r"|\x9b[0-?]*[ -/]*[@-~]"  # CSI as one 8-bit byte
    r"|\x1b[ -/]*[0-~]"  # any other escape (charset, keypad, reset)
    r"|\x1b"  # a lone ESC left at a cut
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _last_redraw(line: str) -> str:
    """A line a progress bar redrew with carriage returns: what the terminal showed last."""
    parts = [p for p in line.split("\r") if p.strip()]
    return parts[-1] if parts else ""


def strip_terminal(text: str) -> str:
    """``text`` without ANSI escape sequences, stray control characters and ``\\r`` redraws."""
    if "\x1b" in text or "\x9b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        lines = text.replace("\r\n", "\n").split("\n")
        text = "\n".join(_last_redraw(line) if "\r" in line else line for line in lines)
    return _CONTROL.sub("", text)


def clean(text: str, kind: str) -> str:
    """Redacted, shortened text for the view, without terminal control sequences."""
    limit = CAPS[kind]
    if len(text) > limit + _REDACT_MARGIN:
        text = text[: limit + _REDACT_MARGIN]
    # escapes out first: a colour code inside a key would hide the key from redaction
    return cap(redact(strip_terminal(text)), limit).strip()


_FENCE_RUN = re.compile(r"`{3,}")


def fenced(text: str, info: str = "") -> str:
    """A code fence longer than any backtick run inside (CommonMark), so content cannot close it."""
    longest = max((len(m) for m in _FENCE_RUN.findall(text)), default=2) if "```" in text else 2
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _heading(e: Event) -> str:
    when = f" · {e.timestamp[:19].replace('T', ' ')}" if e.timestamp else ""
    side = " · sidechain" if e.lane == "sidechain" else ""
    if e.kind == "user":
        return f"## User{when}{side}"
    if e.kind == "assistant":
        return f"## Assistant{when}{side}"
    if e.kind == "thinking":
        return "### Thinking"
    if e.kind == "tool_call":
        ref = f" `{e.call_id}`" if e.call_id else ""
        return f"### Tool call · {e.tool or 'tool'}{ref}"
    if e.kind == "tool_result":
        return f"### Tool result · {e.tool or 'tool'}{' · error' if e.is_error else ''}"
    if e.kind == "compaction":
        return f"## Compaction{when} (model-written summary of earlier context, not user intent)"
    return ""


def block(e: Event) -> str:
    """The markdown of one event (text already clean)."""
    if e.kind in ("tool_call", "tool_result"):
        return f"{_heading(e)}\n{fenced(e.text)}\n\n"
    if e.kind == "marker":
        return f"> {e.marker}: {e.text}\n\n" if e.text else f"> {e.marker}\n\n"
    if e.kind == "meta":
        return f"> meta: {' '.join(e.text.split())}\n\n"
    return f"{_heading(e)}\n{e.text}\n\n"


def render(events: list[Event], start: int) -> Rendered:
    """Append-render ``events`` to a view that is ``start`` characters long so far."""
    parts: list[str] = []
    units: list[Unit] = []
    at = start
    for e in events:
        e.text = clean(e.text, e.kind)
        if not e.text and e.kind not in ("marker",):
            continue
        md = block(e)
        parts.append(md)
        units.append(
            Unit(
                s=at,
                e=at + len(md),
                kind=e.kind,
                head=head_of(e.text, e.kind),
                tool=e.tool,
                error=e.is_error,
                marker=e.marker,
                skill=e.skill,
                offset=e.offset,
                end=e.end,
                uuid=e.uuid,
                call_id=e.call_id,
                origin=e.origin,
            )
        )
        at += len(md)
    return Rendered("".join(parts), units)


def header(traj_id: str, kind: str, path: str, project: str | None, model: str | None) -> str:
    facts = " · ".join(
        x for x in (f"project {project}" if project else "", f"model {model}" if model else "") if x
    )
    return (
        f"# {traj_id}\n\nsource: {kind} · `{path}`"
        + (f"\n{facts}" if facts else "")
        + f"\nview: {RENDER_VERSION}\n\n"
    )


_SLUG = re.compile(r"[^a-z0-9]+")


def slug(text: str, limit: int = 24) -> str:
    return _SLUG.sub("", text.lower())[:limit]


def traj_id(tag: str, model_or_project: str | None, short_id: str) -> str:
    """``traj_<kind>_<model-or-project>_<short-id>`` with only ``[a-z0-9-]`` inside the parts."""
    middle = slug(model_or_project or "") or "unknown"
    short = re.sub(r"[^a-z0-9-]+", "", short_id.lower())[:40] or "0"
    return f"traj_{tag}_{middle}_{short}"
