"""The skill pipeline's Python API (client.skills.Skills) without the CLI: sources are
edited in the settings file, and status tells what it knows locally when no server answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from client.skills import Skills
from xsky.config import load_settings
from xsky.errors import UsageError


@pytest.fixture
def skills(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Skills:
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(tmp_path / "user.json"))
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(tmp_path / "project"))
    monkeypatch.setenv("XSKY_SKILLS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")  # nothing listens there
    return Skills(load_settings())


def test_a_source_is_added_once_beside_the_defaults_and_removed(skills: Skills, tmp_path: Path):
    folder = tmp_path / "codex-sessions"
    first = skills.add_source("codex", str(folder))
    project_file = tmp_path / "project" / ".xsky" / "settings.json"
    assert first.changed and first.defaults_kept and first.file == project_file
    assert not (tmp_path / "user.json").exists()  # the project's file, unless asked otherwise
    assert not skills.add_source("codex", str(folder)).changed
    listed = json.loads(first.file.read_text())["skills"]["sources"]
    assert {"kind": "codex", "path": str(folder)} in listed and {"kind": "claude-code"} in listed
    assert ("codex", folder) in {(s.kind, s.root) for s in skills.sources()}
    skills.remove_source("codex", str(folder))
    assert ("codex", folder) not in {(s.kind, s.root) for s in skills.sources()}
    # what was added is taken away, the defaults not left written as a copy (walk8)
    assert json.loads(first.file.read_text()) == {}
    with pytest.raises(UsageError, match="is not registered"):
        skills.remove_source("codex", str(folder))
    with pytest.raises(UsageError, match="unknown source kind 'cursor'"):
        skills.add_source("cursor")


def test_a_source_goes_to_the_users_file_when_asked(skills: Skills, tmp_path: Path):
    change = skills.add_source("codex", str(tmp_path / "mine"), user=True)
    assert change.file == tmp_path / "user.json"
    assert not (tmp_path / "project" / ".xsky" / "settings.json").exists()
    with pytest.raises(UsageError, match="add --user; user=True in Python"):
        skills.remove_source("codex", str(tmp_path / "mine"))  # not in the project's file
    assert skills.remove_source("codex", str(tmp_path / "mine"), user=True) == change.file


async def test_status_without_a_server_has_the_local_facts_and_says_why_the_rest_is_missing(
    skills: Skills,
):
    status = await skills.status()
    facts = status.as_json()
    assert facts["cursors"]["files"] == 0 and facts["atoms"] == {} and facts["inFlight"] == []
    assert "cannot reach Temporal at 127.0.0.1:1" in facts["schedule"]["error"]
    assert "lastScan" not in facts  # nothing was ingested
    with pytest.raises(UsageError, match="nothing ingested yet") as empty:
        skills.atoms("traj_cc")
    assert empty.value.topic == "skills-empty"
