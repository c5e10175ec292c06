"""Which transcript folders feed the skill pipeline.

Registered in settings (``"skills": {"sources": [{"kind": "claude-code", "path": "~/.claude/projects"}]}``,
user and project files, both counted) or with ``starter.py skills add-source``. When no
settings file says anything about sources, the three defaults apply: Claude Code, Codex
and xsky's own agents, at their usual places. An explicit empty list means none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from xsky.skills.transcripts import SOURCE_KINDS


@dataclass(frozen=True)
class Source:
    kind: str
    root: Path  # absolute
    origin: str  # "default" or the settings file that registers it
    usual: bool = False  # the kind's usual place (no path given): silent while it does not exist

    def label(self) -> str:
        return f"{self.kind} {self.root}"


def default_root(kind: str, env: Mapping[str, str]) -> Path:
    home = Path(env.get("HOME") or Path.home())
    if kind == "claude-code":
        config = env.get("CLAUDE_CONFIG_DIR")
        return (Path(config) if config else home / ".claude") / "projects"
    if kind == "codex":
        return Path(env.get("CODEX_HOME") or home / ".codex")
    if kind == "xsky":
        return Path(env.get("XSKY_HOME") or ".xsky") / "transcripts"
    raise ValueError(f"unknown source kind {kind!r}; kinds: {', '.join(SOURCE_KINDS)}")


def expand(path: str, env: Mapping[str, str]) -> Path:
    home = env.get("HOME") or str(Path.home())
    text = home + path[1:] if path == "~" or path.startswith("~/") else path
    return Path(os.path.abspath(os.path.expandvars(text)))


def resolve(
    registered: list[tuple[str, list[tuple[str, str | None]]]] | None, env: Mapping[str, str]
) -> list[Source]:
    """Sources from ``[(settings path, [(kind, path or None), …]), …]``; None = no file says anything."""
    if registered is None:
        return [
            Source(k, Path(os.path.abspath(default_root(k, env))), "default", usual=True)
            for k in SOURCE_KINDS
        ]
    out: dict[tuple[str, Path], Source] = {}
    for origin, items in registered:
        for kind, path in items:
            root = expand(path, env) if path else Path(os.path.abspath(default_root(kind, env)))
            out.setdefault((kind, root), Source(kind, root, origin, usual=not path))
    return list(out.values())
