"""The person's session a transcript belongs to, from its kind and raw path alone.

Skills count evidence by *distinct sessions*, so a subagent's file must name its parent's
session, never its own: Claude Code writes ``<project>/<session>.jsonl`` and its subagents
``<project>/<session>/subagents/agent-*.jsonl`` (a ``Workflow`` run's agents one level deeper,
``<session>/subagents/workflows/<run>/agent-*.jsonl``); Codex names a rollout
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


def claude_subagent_session(path: str) -> PurePath | None:
    """The session folder of a Claude Code subagent's file — ``<session>/subagents/agent-*.jsonl``,
    or a ``Workflow`` run's agent, ``<session>/subagents/workflows/<run>/agent-*.jsonl`` (its
    ``journal.jsonl`` beside is no transcript) — or None when ``path`` is neither."""
    p = PurePath(path)
    if not (p.name.startswith("agent-") and p.name.endswith(".jsonl")):
        return None
    if p.parent.name == "subagents":
        return p.parent.parent
    if p.parent.parent.name == "workflows" and p.parent.parent.parent.name == "subagents":
        return p.parent.parent.parent.parent
    return None


def session_of(kind: str, path: str) -> str | None:
    """The session id of the raw transcript at ``path`` (None when the path says nothing)."""
    p = PurePath(path)
    if not p.name.endswith(".jsonl"):
        return None
    stem = p.name[: -len(".jsonl")]
    if kind == "claude-code":
        if (folder := claude_subagent_session(path)) is not None:
            return folder.name or None
        return stem or None
    if kind == "codex":
        m = _UUID_TAIL.search(stem)
        return m.group(1).lower() if m else stem.removeprefix("rollout-") or None
    if kind == "xsky":
        return p.parent.name or None
    return stem or None


def is_subagent_path(kind: str, path: str) -> bool:
    """A Claude Code subagent's file: its user turns are the parent model's Task prompts."""
    return kind == "claude-code" and claude_subagent_session(path) is not None
