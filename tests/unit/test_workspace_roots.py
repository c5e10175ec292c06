"""Where a run's workspace may be: a name the worker places, never a path from the run; roots
that are not the system, a home, xsky's state or the worker's import and exec path."""

from __future__ import annotations

import os
import site
import sys
from pathlib import Path

import pytest

from activities.sandbox import workspace as ws
from xsky.config import Settings, load_settings


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("XSKY_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XSKY_SKILLS_HOME", str(tmp_path / "skills-home"))
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(tmp_path / "project"))
    for var in ("XSKY_RUNS", "XSKY_ARTIFACTS"):
        monkeypatch.delenv(var, raising=False)
    return load_settings()


def test_no_option_is_the_runs_own_folder_and_a_name_is_placed_by_the_worker(settings: Settings):
    assert (
        ws.resolve(None, settings, "run-1", {})
        == (settings.runs / "run-1" / "workspace").absolute()
    )
    assert (
        ws.resolve("site-build", settings, "run-1", {})
        == (settings.home / "workspaces" / "site-build").absolute()
    )
    assert (
        ws.resolve("a/b", settings, "run-1", {})
        == (settings.home / "workspaces" / "a" / "b").absolute()
    )
    roots = {"projects": "/srv/xsky-projects"}
    assert ws.resolve("projects/site", settings, "run-1", roots) == Path("/srv/xsky-projects/site")


@pytest.mark.parametrize(
    "given",
    [
        "/etc/cron.d",
        "/usr/local/lib/python3.11/dist-packages",
        "~/.ssh",
        "./x",
        "../x",
        "a/../../b",
        ".git",
        "-rf",
        "a\\b",
        "a\x00b",
        "a//b",
    ],
)
def test_a_path_or_anything_that_is_not_a_name_is_refused_with_what_to_write(
    settings: Settings, given: str
):
    with pytest.raises(ws.WorkspaceRefused) as e:
        ws.resolve(given, settings, "run-1", {"projects": "/srv/p"})
    assert "name" in str(e.value)


def test_a_resolved_workspace_must_be_inside_a_root(settings: Settings, tmp_path: Path):
    assert ws.problem(settings.runs / "run-1" / "workspace", settings, {}, None) is None
    assert ws.problem(settings.home / "workspaces" / "x", settings, {}, None) is None
    assert "outside every workspace root" in (
        ws.problem(tmp_path / "elsewhere", settings, {}, None) or ""
    )


def test_a_link_inside_a_root_that_leads_out_is_refused(settings: Settings, tmp_path: Path):
    named = settings.home / "workspaces"
    named.mkdir(parents=True)
    (named / "escape").symlink_to(tmp_path / "outside", target_is_directory=True)
    (tmp_path / "outside").mkdir()
    assert "outside every workspace root" in (
        ws.problem(named / "escape", settings, {}, None) or ""
    )


@pytest.mark.parametrize("where", ["/", "/etc", "/usr", "/tmp", "/home", "HOME", "HOME_PARENT"])
def test_a_root_may_not_be_the_system_or_a_home(settings: Settings, where: str):
    path = where.replace("HOME_PARENT", str(Path.home().parent)).replace("HOME", str(Path.home()))
    assert ws.root_problem_of(Path(path), settings) is not None


def test_a_root_may_not_hold_credentials_xskys_state_or_the_settings(
    settings: Settings, tmp_path: Path
):
    fake_home = tmp_path / "alice"
    (fake_home / ".aws").mkdir(parents=True)
    assert "holds credentials" in (ws.root_problem_of(fake_home, settings) or "")
    assert "xsky's state" in (ws.root_problem_of(settings.home, settings) or "")
    assert "xsky's state" in (ws.root_problem_of(tmp_path, settings) or "")  # holds the state
    artifacts = (settings.artifacts / "x").absolute()
    assert "artifact store" in (ws.root_problem_of(artifacts, settings) or "")
    user = tmp_path / "conf" / "settings.json"
    settings = Settings(**{**settings.__dict__, "user_settings": user})
    assert "settings file" in (ws.root_problem_of(tmp_path / "conf", settings) or "")


def test_no_root_is_on_the_workers_import_or_exec_path(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    packages = Path(site.getsitepackages()[0])
    assert "imports Python code" in (ws.root_problem_of(packages, settings) or "")
    assert "imports Python code" in (
        ws.root_problem_of(packages / "httpx", settings) or ""
    )  # below it
    assert "imports Python code" in (
        ws.root_problem_of(packages.parent, settings) or ""
    )  # holds it
    bin_dir = tmp_path / "tools" / "bin"
    bin_dir.mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert "PATH" in (ws.root_problem_of(tmp_path / "tools", settings) or "")
    assert "PATH" in (ws.root_problem_of(bin_dir, settings) or "")
    assert ws.root_problem_of(bin_dir / "sub", settings) is None  # PATH is not searched below


def test_just_below_an_import_folder_is_refused_deeper_is_not(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert "directly in" in (ws.root_problem_of(tmp_path / "httpx", settings) or "")
    assert ws.root_problem_of(tmp_path / ".xsky" / "runs", settings) is None


def test_an_existing_folder_with_credentials_is_not_a_workspace_unless_the_sandbox_made_it(
    settings: Settings,
):
    folder = settings.home / "workspaces" / "looks-like-home"
    (folder / ".ssh").mkdir(parents=True)
    assert "holds credentials" in (ws.problem(folder, settings, {}, None) or "")
    owner = folder.stat().st_uid
    assert ws.problem(folder, settings, {}, owner) is None  # its own workspace: its own .ssh


def test_made_by_the_worker_and_handed_to_the_sandbox_user(settings: Settings, tmp_path: Path):
    if os.geteuid() != 0:
        pytest.skip("handing a folder to another user needs root")
    folder = tmp_path / "made" / "ws"
    (folder / "old").mkdir(parents=True)
    (folder / "old" / "f").write_text("x")
    made = ws.make(folder, 61000, 61000)
    assert made == folder.resolve()
    for path in (folder, folder / "old", folder / "old" / "f"):
        assert (path.stat().st_uid, path.stat().st_gid) == (61000, 61000)
