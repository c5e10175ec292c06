"""``skills export [--canary]`` on disk: the symlink, its switches and their log, managed copies."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from activities.skills import canary_export as ce
from activities.skills import git as skill_git
from tests.integration.skill_library_helpers import make_skill
from xsky.skills import canary_window as cw
from xsky.skills.paired import RECORD
from xsky.skills.spec import render

T0 = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)
NAME = "deploy-helm"
DESCRIPTION = "Deploy a service to Kubernetes with Helm. Use when asked to deploy or roll back."


def moment(staging: str, side: cw.Side, after: datetime = T0) -> datetime:
    """One hour into the first window at or after ``after`` whose plan shows ``side``."""
    index = cw.window_of(after)
    while cw.planned_side(NAME, staging, index) != side:
        index += 1
    return cw.window_start(index) + timedelta(hours=1)


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    # staging as the entity leaves it: its paired test's record committed on top of it
    return make_skill(
        tmp_path / "home",
        NAME,
        DESCRIPTION,
        staging_body="# deploy-helm\n\nSTAGING.\n",
        paired=True,
    )


def text(dest: Path) -> str:
    return (dest / NAME / "SKILL.md").read_text()


def test_canary_export_links_the_planned_side_and_logs_each_switch_once(
    skill: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "claude" / "skills"
    dest.mkdir(parents=True)
    main, staging = (
        skill_git.branch_commit(skill, "main"),
        skill_git.branch_commit(skill, "staging"),
    )
    assert main and staging
    t_st = moment(staging, "staging")
    placed = ce.export_skill(skill, NAME, dest, True, t_st)
    link = dest / NAME
    assert placed.side == "staging" and placed.commit == staging and placed.switched
    assert link.is_symlink() and "STAGING." in text(dest)
    assert skill_git.show(skill, staging, RECORD), "the fixture's staging has no paired record"
    assert not (link / RECORD).exists(), "the paired test's record is the library's, not exported"
    assert Path(os.readlink(link)).parts[-2:] == (f"staging-{staging}", NAME)
    log = ce.read_switches(skill)
    assert [(s.side, s.commit, s.to, s.how) for s in log] == [
        ("staging", staging, str(link), "symlink")
    ]
    assert log[0].when == t_st and log[0].staging == staging

    # the same window again (cron every few minutes): nothing moves, nothing is logged
    again = ce.export_skill(skill, NAME, dest, True, t_st + timedelta(minutes=30))
    assert not again.switched and len(ce.read_switches(skill)) == 1

    # a window planned for main: the link turns to main, one more line
    t_main = moment(staging, "main", t_st)
    ce.export_skill(skill, NAME, dest, True, t_main)
    assert link.is_symlink() and "MAIN VERSION" in text(dest)
    log = ce.read_switches(skill)
    assert [(s.side, s.commit) for s in log] == [("staging", staging), ("main", main)]
    assert cw.installed_at(log, t_st + timedelta(minutes=5)).side == "staging"  # type: ignore[union-attr]
    assert cw.installed_at(log, t_main + timedelta(minutes=5)).side == "main"  # type: ignore[union-attr]


def test_the_versions_and_the_log_survive_the_skill_repository_being_reset(
    skill: Path, tmp_path: Path
) -> None:
    staging = skill_git.branch_commit(skill, "staging") or ""
    ce.export_skill(skill, NAME, tmp_path / "d", True, moment(staging, "staging"))
    skill_git.sync(skill)  # what every promotion, discard and edit does (reset + clean)
    assert ce.read_switches(skill) and "STAGING." in text(tmp_path / "d")
    assert "STAGING." not in (skill / "SKILL.md").read_text(), "the working tree stays main"


def test_without_canary_the_folder_is_a_copy_of_main_and_turning_canary_off_is_logged(
    skill: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "d"
    dest.mkdir()
    main, staging = (
        skill_git.branch_commit(skill, "main"),
        skill_git.branch_commit(skill, "staging"),
    )
    assert main and staging
    plain = ce.export_skill(skill, NAME, dest, False, T0)
    assert plain.side == "main" and plain.how == "copy"
    assert not (dest / NAME).is_symlink() and "MAIN VERSION" in text(dest)
    assert [(s.side, s.how) for s in ce.read_switches(skill)] == [("main", "copy")]
    t_st = moment(staging, "staging", T0 + timedelta(days=1))
    ce.export_skill(skill, NAME, dest, True, t_st)  # the copy becomes a link
    assert (dest / NAME).is_symlink() and "STAGING." in text(dest)
    ce.export_skill(skill, NAME, dest, False, t_st + timedelta(minutes=1))  # and back
    assert not (dest / NAME).is_symlink() and "MAIN VERSION" in text(dest)
    assert [(s.side, s.how) for s in ce.read_switches(skill)] == [
        ("main", "copy"),
        ("staging", "symlink"),
        ("main", "copy"),
    ]


def test_a_skill_without_staging_is_linked_to_main_and_after_a_promotion_to_the_new_main(
    tmp_path: Path,
) -> None:
    repo = make_skill(tmp_path / "home", NAME, DESCRIPTION)
    dest = tmp_path / "d"
    first = ce.export_skill(repo, NAME, dest, True, T0)
    assert (first.side, first.how) == ("main", "symlink") and "MAIN VERSION" in text(dest)
    files = tmp_path / "v2"
    files.mkdir()
    (files / "SKILL.md").write_text(render(NAME, DESCRIPTION, "# v2\n\nPROMOTED.\n"))
    old = skill_git.branch_commit(repo, "main")
    new = skill_git.commit_tree(repo, files, old, "promote")
    skill_git.publish(repo, "main", new, old)
    later = ce.export_skill(repo, NAME, dest, True, T0 + timedelta(hours=1))
    assert later.switched and later.commit == new and "PROMOTED." in text(dest)
    assert [s.commit for s in ce.read_switches(repo)] == [old, new]


def test_where_symlinks_fail_a_managed_copy_switches_and_is_logged_as_a_copy(
    skill: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_symlinks(*args: object, **kw: object) -> None:
        raise OSError(1, "symlinks are not permitted here")

    monkeypatch.setattr(os, "symlink", no_symlinks)
    staging = skill_git.branch_commit(skill, "staging") or ""
    dest = tmp_path / "d"
    t_st = moment(staging, "staging")
    placed = ce.export_skill(skill, NAME, dest, True, t_st)
    assert placed.how == "canary-copy" and not (dest / NAME).is_symlink()
    assert "STAGING." in text(dest)
    assert not ce.export_skill(skill, NAME, dest, True, t_st + timedelta(minutes=1)).switched
    ce.export_skill(skill, NAME, dest, True, moment(staging, "main", t_st))
    assert "MAIN VERSION" in text(dest)
    assert [(s.side, s.how) for s in ce.read_switches(skill)] == [
        ("staging", "copy"),
        ("main", "copy"),
    ]


def test_folders_xsky_did_not_export_and_draft_skills_are_left_alone(
    skill: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "d"
    (dest / NAME).mkdir(parents=True)
    (dest / NAME / "SKILL.md").write_text("mine")
    placed = ce.export_skill(skill, NAME, dest, True, T0)
    assert placed.skipped and "not exported by xsky" in placed.skipped
    assert (dest / NAME / "SKILL.md").read_text() == "mine" and ce.read_switches(skill) == []
    os.symlink(tmp_path, dest / "elsewhere")  # someone's own link: not ours either
    assert ce._foreign(dest / "elsewhere")

    files = tmp_path / "baby"
    files.mkdir()
    (files / "SKILL.md").write_text(render("a-draft", DESCRIPTION, "# draft\n"))
    baby = tmp_path / "home" / "skills" / "a-draft"
    skill_git.init(baby, files, "new a-draft")
    drafted = ce.export_skill(baby, "a-draft", dest, True, T0)
    assert drafted.skipped and "draft" in drafted.skipped and not (dest / "a-draft").exists()


def test_an_export_for_an_earlier_moment_logs_its_side_even_when_the_link_shows_it(
    skill: Path, tmp_path: Path
) -> None:
    """A run for a moment before the latest record (a clock set back, a replayed cron) whose
    side is the one the link already shows still writes a record for that moment: without
    it, sessions of that window would be read as "before the log" and scored on main."""
    dest = tmp_path / "claude" / "skills"
    staging = skill_git.branch_commit(skill, "staging")
    assert staging
    later = moment(staging, "staging", T0 + timedelta(days=30))
    ce.export_skill(skill, NAME, dest, True, later)
    earlier = moment(staging, "staging")
    placed = ce.export_skill(skill, NAME, dest, True, earlier)
    log = ce.read_switches(skill)
    assert [s.when for s in log] == [later, earlier]
    assert placed.switched
    in_force = cw.installed_at(log, earlier + timedelta(minutes=5))
    assert in_force is not None and in_force.side == "staging"
