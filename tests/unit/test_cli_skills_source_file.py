"""`skills add-source KIND PATH` with a file for PATH is refused, and nothing is registered: a
source is a folder of transcripts (a file was registered as "watched once it does" exist)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(tmp_path / "user.json"))
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(tmp_path / "project"))
    monkeypatch.setenv("XSKY_SKILLS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return tmp_path / "project"


def test_a_file_is_refused_as_a_source_and_nothing_is_registered(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = tmp_path / "passwd"
    transcript.write_text("root:x:0:0\n")
    assert main(["skills", "add-source", "claude-code", str(transcript)]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert f"{transcript} is a file, not a folder: a claude-code source is the folder" in said
    assert f"(usually {tmp_path / '.claude' / 'projects'}); give that folder" in said
    assert not list(project.rglob("settings.json"))  # nothing written


def test_a_folder_that_does_not_exist_yet_is_still_registered_with_a_note(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["skills", "add-source", "codex", str(tmp_path / "later")]) == 0
    said = capsys.readouterr()
    assert "does not exist yet; it is watched once it does" in " ".join(said.err.split())
    assert "registered codex" in said.out


@pytest.mark.parametrize("user", [False, True])
def test_the_hint_after_add_source_is_the_command_that_removes_what_was_added(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], user: bool
) -> None:
    """walk11: the hint said `skills remove-source KIND`, and following it as written removed
    the kind's default place, not the folder just added."""
    import json
    import re
    import shlex

    folder = tmp_path / "my transcripts"
    folder.mkdir()
    where = ["--user"] if user else []
    assert main(["skills", "add-source", "claude-code", str(folder), *where]) == 0
    said = " ".join(capsys.readouterr().out.split())
    undo = re.search(r"`(starter\.py skills remove-source [^`]*)` removes it", said)
    assert undo is not None, said
    assert "the default sources stay registered beside it" in said
    assert main(shlex.split(undo[1])[1:]) == 0  # followed as written
    file = tmp_path / "user.json" if user else project / ".xsky" / "settings.json"
    sources = json.loads(file.read_text()).get("skills", {}).get("sources")
    # what was added is gone, the defaults stay (back to no list at all: the defaults apply)
    assert sources is None or {"kind": "claude-code"} in sources, sources
    assert not any(s.get("path") for s in sources or []), sources
