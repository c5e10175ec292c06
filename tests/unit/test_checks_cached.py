"""What an attempt reads of the worker's settings and checks of its paths, once per worker:
the settings view kept until its file changes, a root's check kept until the root or the
settings change — and what is never kept: the workspace and the roots are resolved at every
attempt, so a folder a sandbox can write in, swapped for a link, is refused at once."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from activities.agents import attempt as attempts
from activities.sandbox import workspace as ws
from xsky.config import Settings, load_settings

PAST = time.time() - 3600  # a file last changed an hour ago: what was read of it is kept


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("XSKY_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XSKY_SKILLS_HOME", str(tmp_path / "skills-home"))
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(tmp_path / "project"))
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(tmp_path / "settings.json"))
    for var in ("XSKY_RUNS", "XSKY_ARTIFACTS"):
        monkeypatch.delenv(var, raising=False)
    return load_settings()


def written(path: Path, value: object, when: float = PAST) -> None:
    path.write_text(json.dumps(value))
    os.utime(path, (when, when))


def test_the_settings_view_is_read_once_and_again_when_its_file_changes(settings: Settings):
    role = {"description": "d", "systemPrompt": "p", "allowedTools": ["file_read"]}
    written(settings.user_settings, {"security": {"sandbox": "off"}})
    first = attempts.worker_view(settings)
    assert attempts.worker_view(settings) is first  # not read again
    assert "writer" not in first.roles and not first.sandbox.on
    written(settings.user_settings, {"security": {"sandbox": "off"}, "roles": {"writer": role}})
    changed = attempts.worker_view(settings)
    assert changed is not first and "writer" in changed.roles
    # a file changed a moment ago is read at every attempt (its stamp could come again)
    written(settings.user_settings, {"security": {"sandbox": "off"}}, when=time.time())
    assert "writer" not in attempts.worker_view(settings).roles
    assert attempts.worker_view(settings) is not attempts.worker_view(settings)


def test_a_broken_settings_file_fails_every_attempt_and_is_not_kept(settings: Settings):
    from temporalio.exceptions import ApplicationError

    written(settings.user_settings, {"security": {"sandbox": "off"}})
    attempts.worker_view(settings)
    settings.user_settings.write_text("{ not json")
    for _ in range(2):
        with pytest.raises(ApplicationError, match="the worker's settings cannot be read"):
            attempts.worker_view(settings)


def test_a_root_swapped_for_a_link_is_checked_again_at_the_next_attempt(
    settings: Settings, tmp_path: Path
):
    root = tmp_path / "projects"
    (root / "site").mkdir(parents=True)
    written(settings.user_settings, {"security": {"workspaceRoots": {"projects": str(root)}}})
    roots = {"projects": str(root)}
    folder = ws.resolve("projects/site", settings, "run-1", roots)
    assert ws.problem(folder, settings, roots, None) is None
    assert ws.problem(folder, settings, roots, None) is None  # (its root's check kept)
    # Whoever can write beside the root swaps it for a link to a home (credentials at its top).
    home = tmp_path / "someone"
    (home / ".ssh").mkdir(parents=True)
    (home / "site").mkdir()
    root.rename(tmp_path / "projects-old")
    root.symlink_to(home)
    found = ws.problem(folder, settings, roots, None)
    assert found is not None and "holds credentials (.ssh)" in found


def test_a_workspace_swapped_for_a_link_out_of_its_root_is_refused_at_the_next_attempt(
    settings: Settings, tmp_path: Path
):
    """A workspace inside another run's workspace ("a" holds "a/b") can be swapped by that
    run's agents: each attempt resolves its own again."""
    written(settings.user_settings, {})
    outer = ws.resolve("a", settings, "run-1", {})
    inner = ws.resolve("a/b", settings, "run-2", {})
    inner.mkdir(parents=True)
    assert ws.problem(outer, settings, {}, None) is None
    assert ws.problem(inner, settings, {}, None) is None
    inner.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    inner.symlink_to(elsewhere)  # what run-1's agent can do in its workspace
    found = ws.problem(inner, settings, {}, None)
    assert found is not None and "outside every workspace root" in found


def test_credentials_planted_in_a_root_are_found_at_the_next_attempt(
    settings: Settings, tmp_path: Path
):
    root = tmp_path / "projects"
    root.mkdir()
    roots = {"projects": str(root)}
    written(settings.user_settings, {})
    os.utime(root, (PAST, PAST))
    folder = ws.resolve("projects/site", settings, "run-1", roots)
    assert ws.problem(folder, settings, roots, None) is None
    (root / ".aws").mkdir()  # the root's own folder changes: its check is made again
    found = ws.problem(folder, settings, roots, None)
    assert found is not None and "holds credentials (.aws)" in found
