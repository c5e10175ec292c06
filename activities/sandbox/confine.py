"""Confinement of tools to a run's workspace, and a scrubbed environment for commands.

:func:`confinement_for` says what the OS sandbox (activities/os_sandbox.py) hides from a
run's processes: everything xsky keeps and everything of the worker's user.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from activities.sandbox.bwrap import SYSTEM_DIRS, Confinement
from activities.tools import ToolError
from xsky.artifacts import safe_component
from xsky.config import Settings
from xsky.settings import settings_paths

# Directories no agent may write into, wherever they sit in the workspace.
PROTECTED_DIRS = (".git", ".xsky")

# Only these variables reach commands agents run: no API keys, tokens or our own settings.
_ENV_ALLOW = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "USER", "LOGNAME", "SHELL", "TMPDIR")
_ENV_ALLOW_PREFIX = ("LC_",)


def scrubbed_env(workspace: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k in _ENV_ALLOW or k.startswith(_ENV_ALLOW_PREFIX)
    }
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["PWD"] = str(workspace)
    env["HOME"] = str(workspace)  # not the worker's home: no ~/.aws, ~/.netrc, ~/.ssh
    return env


def confine(workspace: Path, path: str, *, write: bool = False) -> Path:
    """The real path of ``path`` inside ``workspace``, or a ToolError saying why not.

    Symlinks are resolved before the check, so a link pointing out is refused like ``..``.
    """
    if not isinstance(path, str) or path == "":
        raise ToolError("a path is needed, relative to the run's workspace (e.g. 'notes/out.txt')")
    if "\x00" in path:
        raise ToolError("the path holds a NUL character")
    root = workspace.resolve()
    candidate = Path(path)
    target = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if target != root and not target.is_relative_to(root):
        raise ToolError(
            f"{path!r} is outside the run's workspace ({root}); use a path inside it, such as 'out/{candidate.name or 'file.txt'}'"
        )
    if write:
        rel_parts = target.relative_to(root).parts
        hit = next((p for p in rel_parts if p in PROTECTED_DIRS), None)
        if hit:
            raise ToolError(
                f"writing into {hit}/ is not allowed ({path!r}); agents may not change version control or xsky state"
            )
        if target == root:
            raise ToolError("the workspace itself is a directory; name a file inside it")
    return target


def workspace_problem(workspace: Path, settings: Settings, run_id: str) -> str | None:
    """Why ``workspace`` cannot be a run's one writable place, or None when it can.

    A run's options may name any folder (the stock ``temporal`` CLI can start a run), and
    the file tools write inside the workspace with the worker's own rights, so the folder
    is checked here, on the worker: not the system, not the worker's home or a folder
    holding it, and not xsky's state (the Temporal database, artifacts, other runs'
    workspaces, the skills home, the settings) nor a folder holding any of those.
    """
    ws = workspace.expanduser().resolve()
    home = Path.home().resolve()
    if str(ws) in SYSTEM_DIRS or ws == home or home.is_relative_to(ws):
        return f"the workspace {ws} is a system folder or holds the worker's home"
    own = (settings.runs / safe_component(run_id) / "workspace").resolve()
    if ws == own:
        return None
    kept = [
        ("xsky's state", settings.home),
        ("the artifact store", settings.artifacts),
        ("the run workspaces", settings.runs),
        ("the skills home", settings.skills_home),
        *(("the settings", path.parent) for _, path in settings_paths()),
    ]
    for what, folder in kept:
        place = folder.expanduser().resolve()
        if ws == place or ws.is_relative_to(place) or place.is_relative_to(ws):
            return f"the workspace {ws} overlaps {what} ({place})"
    return None


def confinement_for(
    settings: Settings, workspace: Path, run_id: str, proxy_socket: Path | None = None
) -> Confinement:
    """A run's sandbox: its workspace writable, its own artifacts readable; hidden are the
    worker user's home, xsky's state (Temporal database, logs, transcripts), the artifact
    store, every run's workspace, the skills home and the settings folders."""
    state = [settings.home, settings.artifacts, settings.runs, settings.skills_home]
    for (
        folder
    ) in state:  # made now: one made later would show through the sandbox's read-only view of /
        folder.mkdir(parents=True, exist_ok=True)
    hidden = [Path.home(), *state, *(path.parent for _, path in settings_paths())]
    return Confinement(
        workspace=workspace,
        hidden=tuple(hidden),
        readable=(settings.artifacts / safe_component(run_id),),
        proxy_socket=proxy_socket,
    )


def open_inside(workspace: Path, target: Path, flags: int, *, make_parents: bool = False) -> int:
    """A descriptor of ``target`` (a path :func:`confine` returned), opened one folder at a
    time from the workspace with no symlink followed: a folder swapped for a link between
    the check and the open (by a command running beside) fails instead of leading out.
    Only regular files open; a FIFO or device would hang or feed the worker.
    """
    root = workspace.resolve()
    parts = target.relative_to(root).parts
    if not parts:
        raise ToolError("the workspace itself is a directory; name a file inside it")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            if make_parents:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            step = os.open(
                part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
            )
            os.close(fd)
            fd = step
        out = os.open(
            parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644, dir_fd=fd
        )
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ToolError(
                f"{target.relative_to(root)!s} goes through a symbolic link or a file; "
                "name the real path inside the workspace"
            ) from None
        raise
    finally:
        os.close(fd)
    info = os.fstat(out)
    if not stat.S_ISREG(info.st_mode) or (flags & (os.O_WRONLY | os.O_RDWR) and info.st_nlink > 1):
        os.close(out)
        what = (
            "a file with other hard links" if stat.S_ISREG(info.st_mode) else "not a regular file"
        )
        raise ToolError(
            f"{target.relative_to(root)!s} is {what}; the file tools read and write regular files only"
        )
    os.set_blocking(out, True)
    return out
