"""Transcript fixtures for the skill pipeline's tests: a copy of realistic Claude Code and
Codex sessions under a temporary folder, registered as sources in a project settings file.

The ``*.append.jsonl`` files are not sessions: they hold the lines a test appends to the
session of the same name, as the coding agent would.
"""

from __future__ import annotations

import json
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcripts"
SECRETS = [line for line in (FIXTURES / "SECRETS.txt").read_text().splitlines() if line.strip()]
CC_MAIN = "claude/projects/-home-dev-shopapp/3f2a9c1e-5b7d-4e21-9a0c-6d8e1f2a3b4c.jsonl"
CODEX_MAIN = "codex/sessions/2026/11/28/rollout-2026-11-28T09-14-03-0199a3c2-7e51-7b20-9c4d-1f2e3d4c5b6a.jsonl"
CC_TRAJ = "traj_cc_shopapp_3f2a9c1e"
CODEX_TRAJ = "traj_codex_learn_0199a3c2"


@dataclass
class Transcripts:
    root: Path  # holds claude/ and codex/
    home: Path  # the skills home

    @property
    def claude(self) -> Path:
        return self.root / "claude" / "projects"

    @property
    def codex(self) -> Path:
        return self.root / "codex"

    def append(self, rel: str, cut: int | None = None) -> int:
        """Append the fixture's continuation to a session (its first ``cut`` bytes only, if given)."""
        extra = (FIXTURES / rel.replace(".jsonl", ".append.jsonl")).read_bytes()
        data = extra if cut is None else extra[:cut]
        with open(self.root / rel, "ab") as fh:
            fh.write(data)
        return len(data)

    def sources(self) -> list[tuple[str, Path]]:
        return [("claude-code", self.claude), ("codex", self.codex)]


def copy_transcripts(dest: Path) -> Path:
    shutil.copytree(FIXTURES, dest, ignore=shutil.ignore_patterns("*.append.jsonl", "SECRETS.txt"))
    return dest


@pytest.fixture
def transcripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Transcripts:
    """Fixture sessions in a temp folder, registered in a project settings file; an empty user file."""
    t = Transcripts(copy_transcripts(tmp_path / "transcripts"), tmp_path / "skills-home")
    project = tmp_path / "project"
    (project / ".xsky").mkdir(parents=True)
    sources = [{"kind": kind, "path": str(path)} for kind, path in t.sources()]
    (project / ".xsky" / "settings.json").write_text(json.dumps({"skills": {"sources": sources}}))
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(project))
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(tmp_path / "no-user-settings.json"))
    monkeypatch.setenv("XSKY_SKILLS_HOME", str(t.home))
    return t


def leaks(texts: dict[str, str]) -> list[str]:
    """(where, secret) for every fixture secret found in the given texts."""
    return [
        f"{where}: {secret[:12]}…"
        for where, text in texts.items()
        for secret in SECRETS
        if secret in text
    ]


def all_files_text(root: Path) -> dict[str, str]:
    return {
        str(p): p.read_bytes().decode("utf-8", errors="replace")
        for p in root.rglob("*")
        if p.is_file()
    }


def clone_codex(
    t: Transcripts, count: int, day: str = "30", skill_read: str | None = None
) -> list[Path]:
    """``count`` more rollouts of the first Codex session (same work, new thread ids), so
    their atoms cluster together; ``skill_read`` makes each read that library skill's SKILL.md."""
    original = (FIXTURES / CODEX_MAIN).read_text()
    thread = "0199a3c2-7e51-7b20-9c4d-1f2e3d4c5b6a"
    made = []
    for _ in range(count):
        new = f"0199{uuid.uuid4().hex[:4]}-{uuid.uuid4().hex[:4]}-7{uuid.uuid4().hex[:3]}-8{uuid.uuid4().hex[:3]}-{uuid.uuid4().hex[:12]}"
        text = original.replace(thread, new)
        if skill_read:
            text = text.replace(
                "~/.codex/skills/sql-migrate/SKILL.md",
                f"~/.xsky/skills-home/skills/{skill_read}/SKILL.md",
            )
        path = (
            t.codex
            / "sessions"
            / "2026"
            / "11"
            / day
            / f"rollout-2026-11-{day}T10-00-00-{new}.jsonl"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        made.append(path)
    return made
