"""Registering transcript folders: a kind's usual place can be named by its path, and the
refusal says how to reach the user file (client/skills.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from client.skills import Skills
from xsky.config import load_settings
from xsky.errors import UsageError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XSKY_HOME", str(tmp_path / ".xsky"))
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(tmp_path / "proj"))
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(tmp_path / "user.json"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    (tmp_path / "proj").mkdir()
    return tmp_path


def test_the_usual_place_named_by_its_path_is_the_default_source(home: Path) -> None:
    """`remove-source claude-code ~/.claude/projects` said "not registered" although the
    default source reads exactly that folder."""
    skills = Skills(load_settings())
    mine = home / "samples"
    change = skills.add_source("claude-code", str(mine))
    assert change.changed and change.defaults_kept  # the defaults stay beside it (it says so)
    file = skills.remove_source("claude-code", str(home / ".claude" / "projects"))
    sources = json.loads(file.read_text())["skills"]["sources"]
    assert {"kind": "claude-code"} not in sources  # the default is gone, yours stays
    assert {"kind": "claude-code", "path": str(mine)} in sources
    assert not skills.add_source("codex", str(home / ".codex")).changed  # already registered
    with pytest.raises(UsageError) as e:
        skills.remove_source("codex", str(home / "elsewhere"))
    assert "add --user" in str(e.value)
