"""A draft skill (a baby branch, no version a model wrote) has nothing to promote or reject:
the command says it is a draft and what it needs, not "no staging version"."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cli.main import main


def test_promoting_a_draft_says_it_needs_a_model_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "skills-home"
    folder = home / "skills" / "fix-flaky-tests"
    folder.mkdir(parents=True)
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "baby"], check=True)
    (folder / "SKILL.md").write_text("---\nname: fix-flaky-tests\ndescription: Draft\n---\n")
    subprocess.run([*git, "add", "SKILL.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "draft"], check=True)
    monkeypatch.setenv("XSKY_SKILLS_HOME", str(home))
    assert main(["skills", "promote", "fix-flaky-tests"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "fix-flaky-tests is a draft: it has no version to promote until a model writes" in said
