"""A repository a sandboxed command plants, in any form git would use, keeps no program for a
person's later `git status` (activities/sandbox/git_guard.py). Each case plants a
`core.fsmonitor` that would touch a canary in the test's own temp folder, sweeps as the shell
tool does after a command, then runs the real `git status` where a person would: no canary.
Forms a security review found the sweep missed (its walk was 3 levels deep, skipped
node_modules and dot-folders, stopped after 5,000 entries, read no .git file, link or
commondir, and knew no bare repository)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from activities.sandbox import git_guard

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_SYSTEM": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)


def plant(config: Path, canary: Path) -> None:
    """What runs on `git status` in a work tree, and on an alias anywhere (a bare one too)."""
    with config.open("a") as f:
        f.write(f'[core]\n\tfsmonitor = "touch {canary}; false"\n')
        f.write(f'[alias]\n\tst = "!touch {canary}"\n')


def person(where: Path) -> None:
    """What a person runs in a workspace afterwards."""
    git("status", cwd=where)
    git("st", cwd=where)


def init(where: Path, *args: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    assert git("init", "-q", *args, cwd=where).returncode == 0


def symlinked_dotgit(ws: Path) -> tuple[Path, Path]:
    init(ws / "hid")
    (ws / "hid" / ".git").rename(ws / ".gitdata")
    os.symlink(".gitdata", ws / ".git")
    return ws / ".gitdata" / "config", ws


def gitfile(ws: Path) -> tuple[Path, Path]:
    ws.mkdir(parents=True)
    assert git("init", "-q", "--separate-git-dir", str(ws / ".gd"), str(ws), cwd=ws).returncode == 0
    assert (ws / ".git").is_file()
    return ws / ".gd" / "config", ws


def deep(ws: Path) -> tuple[Path, Path]:
    init(ws / "a" / "b" / "c" / "d" / "e")
    return ws / "a/b/c/d/e/.git/config", ws / "a/b/c/d/e"


def under_node_modules(ws: Path) -> tuple[Path, Path]:
    init(ws / "node_modules" / "pkg")
    return ws / "node_modules/pkg/.git/config", ws / "node_modules/pkg"


def after_many_files(ws: Path) -> tuple[Path, Path]:
    init(ws / "zzz")
    for i in range(5_100):
        (ws / f"f{i:05}").touch()
    return ws / "zzz/.git/config", ws / "zzz"


def commondir(ws: Path) -> tuple[Path, Path]:
    init(ws)
    init(ws / ".cd", "--bare")
    (ws / ".git" / "commondir").write_text("../.cd\n")
    return ws / ".cd" / "config", ws


def bare(ws: Path) -> tuple[Path, Path]:
    init(ws / "repo", "--bare")
    return ws / "repo" / "config", ws / "repo"


def worktree_config(ws: Path) -> tuple[Path, Path]:
    init(ws)
    assert git("config", "extensions.worktreeConfig", "true", cwd=ws).returncode == 0
    return ws / ".git" / "config.worktree", ws


def commondir_without_head(ws: Path) -> tuple[Path, Path]:
    """Git reads config and hooks from a commondir that has only objects/ and refs/."""
    init(ws)
    (ws / "evil" / "objects").mkdir(parents=True)
    (ws / "evil" / "refs").mkdir()
    (ws / "evil" / "config").write_text("")
    (ws / ".git" / "commondir").write_text("../evil\n")
    return ws / "evil" / "config", ws


def linked_gitfile(ws: Path) -> tuple[Path, Path]:
    """`.git` a link to a regular file inside the workspace, itself a gitfile."""
    init(ws / "store", "--bare")
    (ws / "sub").mkdir(parents=True)
    (ws / "notes.txt").write_text(f"gitdir: {ws / 'store'}\n")
    os.symlink("../notes.txt", ws / "sub" / ".git")
    return ws / "store" / "config", ws / "sub"


@pytest.mark.parametrize(
    "planted",
    [
        commondir_without_head,
        linked_gitfile,
        symlinked_dotgit,
        gitfile,
        deep,
        under_node_modules,
        after_many_files,
        commondir,
        bare,
        worktree_config,
    ],
)
def test_a_planted_repository_runs_nothing_on_a_persons_git(
    tmp_path: Path, planted: Callable[[Path], tuple[Path, Path]]
) -> None:
    ws, canary = tmp_path / "ws", tmp_path / "canary"
    config, where = planted(ws)
    plant(config, canary)
    # Without the sweep the plant works (so the case can fail): checked on a copy.
    copy = tmp_path / "copy"
    shutil.copytree(ws, copy, symlinks=True)
    person(copy / where.relative_to(ws))
    assert canary.exists(), "the planted program did not run even unswept"
    canary.unlink()
    notes = git_guard.sweep(ws)
    assert any("core.fsmonitor" in n and "alias" in n for n in notes), notes
    person(where)
    assert not canary.exists()


def test_a_pointer_out_of_the_workspace_is_removed_and_one_inside_kept(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "host-repo"
    init(outside)
    init(ws / "sub")
    (ws / "sub" / ".git" / "commondir").write_text(f"{outside}/.git\n")
    (ws / "elsewhere").mkdir()
    (ws / "elsewhere" / ".git").write_text(f"gitdir: {outside}/.git\n")
    os.symlink(outside / ".git", ws / "linked", target_is_directory=True)
    (ws / "linked2").mkdir()
    os.symlink(outside / ".git", ws / "linked2" / ".git")
    # a submodule's .git file, inside: kept, and its git folder is swept like any
    init(ws / ".git-modules-store" / "m", "--bare")
    (ws / "mod").mkdir()
    (ws / "mod" / ".git").write_text("gitdir: ../.git-modules-store/m\n")
    notes = git_guard.sweep(ws)
    assert sorted(notes) == [
        "elsewhere/.git: removed (a .git file that leads out of the workspace)",
        "linked2/.git: removed (a .git link that leads out of the workspace)",
        "sub/.git/commondir: removed (it leads out of the workspace)",
    ]
    assert (ws / "mod" / ".git").is_file() and (ws / "linked").is_symlink()
    assert (outside / ".git" / "config").exists()  # nothing outside is touched


def test_pointers_are_read_as_git_reads_them(tmp_path: Path) -> None:
    """A link to a gitfile that leads out, and a gitfile whose path holds a line break (git
    keeps it: it strips only the trailing line ends), are removed: the guard read the first
    line and the link's file as the target."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    init(outside, "--bare")
    (ws / "sub").mkdir(parents=True)
    (ws / "notes.txt").write_text(f"gitdir: {outside}\n")
    os.symlink("../notes.txt", ws / "sub" / ".git")
    (ws / "two" / "in\n").mkdir(parents=True)
    (ws / "two" / ".git").write_text(f"gitdir: in\n/../../../{outside.name}\n")
    notes = git_guard.sweep(ws)
    assert sorted(notes) == [
        "sub/.git: removed (a .git link that leads out of the workspace)",
        "two/.git: removed (a .git file that leads out of the workspace)",
    ]


def test_a_later_sweep_sees_what_changed_in_folders_it_remembers(tmp_path: Path) -> None:
    """The walk remembers folders by their ctime: a repository planted deep in a tree swept
    before is found, and a .git file rewritten in place (its folder's ctime unchanged) is
    read again."""
    ws, canary = tmp_path / "ws", tmp_path / "canary"
    for i in range(30):
        (ws / f"d{i}" / "x" / "y").mkdir(parents=True)
    assert git_guard.sweep(ws) == []
    init(ws / "d7" / "x" / "y" / "r")
    plant(ws / "d7/x/y/r/.git/config", canary)
    assert git_guard.sweep(ws) == ["d7/x/y/r/.git/config: removed core.fsmonitor, alias.st"]
    (ws / "d3" / "x" / ".git").write_text("gitdir: ../../d7/x/y/r/.git\n")
    assert git_guard.sweep(ws) == []  # inside: kept
    before = os.lstat(ws / "d3" / "x").st_ctime_ns
    with open(ws / "d3" / "x" / ".git", "r+") as f:  # in place: the folder's ctime stays
        f.write(f"gitdir: {tmp_path}/x/.git\n")
    assert os.lstat(ws / "d3" / "x").st_ctime_ns == before
    assert git_guard.sweep(ws) == [
        "d3/x/.git: removed (a .git file that leads out of the workspace)"
    ]


def test_a_projects_own_folders_and_files_are_never_taken_for_git(tmp_path: Path) -> None:
    """A project folder holding `objects/`, `refs/`, `hooks/auth/` and a `config` was taken for
    a git folder: its config was rewritten and the sweep then failed on every command."""
    ws = tmp_path / "ws"
    for folder in ("src/objects", "src/refs", "src/hooks/auth"):
        (ws / folder).mkdir(parents=True)
    (ws / "src" / "config").write_text("[server]\nport = 8080\n")
    (ws / "gitdir-dot").mkdir()
    (ws / "gitdir-dot" / ".git").write_text("gitdir: ..\n")  # points inside, at no git folder
    (ws / "config").write_text("[server]\nport = 9090\n")
    assert git_guard.sweep(ws) == []
    assert (ws / "src" / "config").read_text() == "[server]\nport = 8080\n"
    assert (ws / "config").read_text() == "[server]\nport = 9090\n"
    # a hooks/ folder of a real repository may hold folders: kept, the sweep goes on
    init(ws / "repo")
    (ws / "repo" / ".git" / "hooks" / "lib").mkdir()
    assert git_guard.sweep(ws) == []


def test_a_fifo_or_a_link_to_a_device_where_git_looks_does_not_stop_the_sweep(
    tmp_path: Path,
) -> None:
    """`mkfifo .git` blocked the sweep for ever, with the workspace's other agents frozen; a
    `.git` link to /proc/kmsg would have been read (and consumed) as root."""
    import threading

    ws = tmp_path / "ws"
    (ws / "a").mkdir(parents=True)
    os.mkfifo(ws / "a" / ".git")
    init(ws / "b")
    os.mkfifo(ws / "b" / ".git" / "commondir")
    (ws / "c").mkdir()
    os.symlink("/dev/zero", ws / "c" / ".git")
    done: list[list[str]] = []
    t = threading.Thread(target=lambda: done.append(git_guard.sweep(ws)), daemon=True)
    t.start()
    t.join(10)
    assert done, "the sweep blocked"
    assert sorted(done[0]) == [
        "a/.git: removed (a .git file that leads out of the workspace)",
        "b/.git/commondir: removed (it leads out of the workspace)",
        "c/.git: removed (a .git link that leads out of the workspace)",
    ]
