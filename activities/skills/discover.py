"""Which transcripts a source holds (the files the scan stats, by the source's layout), and
which file each one is.

Claude Code: ``<root>/<project>/*.jsonl``, and subagents' files under
``<project>/<session>/subagents/`` (a ``Workflow`` run's agents under
``subagents/workflows/<run>/agent-*.jsonl``, beside the run's ``journal.jsonl``); Codex: ``rollout-*.jsonl`` anywhere under ``sessions/``,
and ``archived_sessions/`` (a rollout Codex compressed, ``.jsonl.zst``, is listed apart: the scan reads a copy); xsky's own agents: ``<root>/<run>/*.jsonl``. Folders that cannot
be read are skipped, and symlinks are never followed. A file is known by its first bytes
(:func:`head_of`) as well as by its path and inode, which renames and reuse change.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from xsky.skills.sources import Source

HEAD_FINGERPRINT = 4096  # bytes that identify a file across renames


# Codex compresses cold rollouts in place (``rollout-….jsonl`` → ``rollout-….jsonl.zst``, zstd;
# codex-rs/rollout/src/compression.rs: archived rollouts a week old) and reads either; the scan
# reads a compressed one through a decompressed copy (activities/skills/unpacked.py).
COMPRESSED = ".jsonl.zst"


def _jsonl(
    folder: Path, prefix: str = "", linked: bool = True, packed: list[str] | None = None
) -> Iterator[os.DirEntry[str]]:
    """The ``.jsonl`` files of ``folder``; ``linked`` False: none when ``folder`` is itself a
    link (a folder found inside a source, where a link would lead the scan anywhere).
    ``packed``: where to add the paths of compressed ``.jsonl.zst`` files that have no plain
    copy beside them (Codex reads the plain one when both exist)."""
    try:
        if not linked and folder.is_symlink():
            return
        zst: list[str] = []
        plain: set[str] = set()
        with os.scandir(folder) as it:
            for entry in it:
                if not entry.name.startswith(prefix) or not entry.is_file(follow_symlinks=False):
                    continue
                if entry.name.endswith(".jsonl"):
                    plain.add(entry.name)
                    yield entry
                elif packed is not None and entry.name.endswith(COMPRESSED):
                    zst.append(entry.path)
        if packed is not None:
            packed.extend(p for p in zst if Path(p).name[: -len(".zst")] not in plain)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return


def subdirs(folder: Path) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    yield entry
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return


def discover(
    source: Source, packed: list[str] | None = None
) -> Iterator[tuple[os.DirEntry[str], bool]]:
    """(file, is a Claude Code subagent file) for every transcript under a source's root;
    ``packed`` collects the Codex rollouts found compressed (``.jsonl.zst``), which are not read.

    Symlinks are not followed: a transcript folder is not a way to read other files.
    """
    root = source.root
    if source.kind == "claude-code":
        for project in subdirs(root):
            yield from ((e, False) for e in _jsonl(Path(project.path)))
            for session in subdirs(Path(project.path)):
                subagents = Path(session.path) / "subagents"
                yield from ((e, True) for e in _jsonl(subagents, linked=False))
                workflows = subagents / "workflows"
                if subagents.is_symlink() or workflows.is_symlink():
                    continue
                for run in subdirs(workflows):
                    yield from ((e, True) for e in _jsonl(Path(run.path), "agent-", linked=False))
    elif source.kind == "codex":
        sessions = root / "sessions"
        if not sessions.is_dir() and root.name in ("sessions", "archived_sessions"):
            sessions = root
        for dirpath, dirnames, _ in os.walk(sessions):
            dirnames.sort()
            yield from ((e, False) for e in _jsonl(Path(dirpath), "rollout-", packed=packed))
        archive = _jsonl(root / "archived_sessions", linked=False, packed=packed)
        yield from ((e, False) for e in archive)
    elif source.kind == "xsky":
        for run in subdirs(root):
            yield from ((e, False) for e in _jsonl(Path(run.path)))


def head_of(path: str, size: int) -> str:
    """``<n>:<sha256 of the first n bytes>``: which file this is, whatever its name or inode."""
    n = min(HEAD_FINGERPRINT, size)
    with open(path, "rb") as f:
        return f"{n}:{hashlib.sha256(f.read(n)).hexdigest()}"


def same_file(head: str, path: str) -> bool:
    """Is the file at ``path`` the one whose :func:`head_of` was ``head``?"""
    if not head:
        return True  # recorded before fingerprints existed
    n = int(head.split(":", 1)[0])
    try:
        return head_of(path, n) == head
    except OSError:
        return False
