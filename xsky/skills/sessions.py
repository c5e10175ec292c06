"""The person's session a transcript belongs to, from its kind and raw path alone.

Skills count evidence by *distinct sessions*, so a subagent's file must name its parent's
session, never its own: Claude Code writes ``<project>/<session>.jsonl`` and its subagents
``<project>/<session>/subagents/agent-*.jsonl``; Codex names a rollout
``rollout-<timestamp>-<thread uuid>.jsonl``; xsky writes ``transcripts/<run>/<agent>-<key>.jsonl``
(one run is one session, whatever agents it had). A pure function: the same path gives the
same session on every machine and in every delta.
"""

from __future__ import annotations

import re
from pathlib import PurePath

_UUID_TAIL = re.compile(
    r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
)


def session_of(kind: str, path: str) -> str | None:
    """The session id of the raw transcript at ``path`` (None when the path says nothing)."""
    p = PurePath(path)
    if not p.name.endswith(".jsonl"):
        return None
    stem = p.name[: -len(".jsonl")]
    if kind == "claude-code":
        if p.parent.name == "subagents" and stem.startswith("agent-"):
            return p.parent.parent.name or None
        return stem or None
    if kind == "codex":
        m = _UUID_TAIL.search(stem)
        return m.group(1).lower() if m else stem.removeprefix("rollout-") or None
    if kind == "xsky":
        return p.parent.name or None
    return stem or None


def is_subagent_path(kind: str, path: str) -> bool:
    """A Claude Code subagent's file: its user turns are the parent model's Task prompts."""
    p = PurePath(path)
    return kind == "claude-code" and p.parent.name == "subagents" and p.name.startswith("agent-")
