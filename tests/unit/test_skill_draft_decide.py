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
    # walk8: it pointed at `skills show`, which prints the draft's SKILL.md (counts only);
    # the atoms it is made of are listed by `skills candidates`
    assert "`starter.py skills candidates fix-flaky-tests` lists what it is made of" in said, said


def test_a_drafts_evidence_points_to_the_command_that_lists_it(tmp_path: Path) -> None:
    """`skills list` said "4 task(s) from 4 session(s) (`starter.py skills show NAME` lists
    them)", and `show` printed a SKILL.md that lists none of them."""
    from cli.skill_library_cmd import evidence

    folder = tmp_path / "skills" / "implement-tests"
    folder.mkdir(parents=True)
    (folder / ".candidates.yml").write_text(
        "candidates:\n- atom_id: atom_traj_cc_a_1111aaaa_0001\n  weightscore: 6\n"
        "- atom_id: atom_traj_cc_a_2222bbbb_0001\n  weightscore: 6\n"
        "cumulative_weightscore: 12\n"
    )
    said = evidence(folder)
    assert said.startswith("2 task(s) from 2 session(s)"), said
    assert "`starter.py skills candidates implement-tests` lists them" in said, said
