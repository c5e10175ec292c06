"""The kinds of transcript source, by name: what settings files name, without loading the
adapters (their redaction's patterns and models) — every command reads the settings."""

from __future__ import annotations

from typing import Literal

SourceKind = Literal["claude-code", "codex", "xsky"]
SOURCE_KINDS: tuple[SourceKind, ...] = ("claude-code", "codex", "xsky")
