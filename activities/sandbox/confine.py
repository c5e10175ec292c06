"""Confinement of the worker's own file tools to a run's workspace, and what a run's sandbox is.

The file tools (``file_read``, ``file_write``, ``file_list``, ``code_search``) run in the
worker, not in a sandbox, so every path is checked here and opened one folder at a time
without following links (:func:`open_inside`). :func:`confinement_for` gives the OS sandbox
(activities/sandbox/bwrap.py) what one run's commands may touch, from the worker's own
:class:`SandboxSettings`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from activities.sandbox import bwrap
from activities.sandbox.bwrap import Confinement
from activities.sandbox.limits import Limits, parse_size
from activities.tools import ToolError
from xsky.artifacts import run_folder
from xsky.config import Settings
from xsky.settings_files import SettingsError, SettingsLayer

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


@dataclass(frozen=True)
class SandboxSettings:
    """The worker's own word on sandboxes (its user settings, never a project's)."""

    on: bool = True
    sandbox_user: int | str | None = None
    limits: Limits = field(default_factory=Limits)
    read_only_paths: tuple[Path, ...] = ()
    workspace_roots: dict[str, str] = field(default_factory=dict)

    @property
    def owner(self) -> tuple[int, int] | None:
        """(uid, gid) that should own workspaces: the sandbox user's, when the worker is root."""
        who = bwrap.identity(self.sandbox_user)
        return (who.uid, who.gid) if who.drop else None


def sandbox_settings(layers: list[SettingsLayer]) -> SandboxSettings:
    """From the worker's layers (xsky.settings_files.worker_layers); a bad size is a SettingsError."""
    found = SandboxSettings()
    for layer in layers:
        sec = layer.settings.security
        if sec is None:
            continue
        given = sec.model_fields_set
        lim = sec.limits
        try:
            limits = replace(
                found.limits,
                **{
                    name: parse_size(value, f"security.limits.{name}") if name in _SIZES else value
                    for name, value in lim.model_dump().items()
                    if value is not None
                },
            )
        except ValueError as e:
            raise SettingsError(layer.path, 1, 1, str(e)) from None
        if "sandbox_user" in given:
            try:
                bwrap.identity(sec.sandbox_user)
            except bwrap.SandboxUnavailable as e:
                raise SettingsError(layer.path, 1, 1, str(e)) from None
        found = SandboxSettings(
            on=(sec.sandbox == "on") if "sandbox" in given else found.on,
            sandbox_user=sec.sandbox_user if "sandbox_user" in given else found.sandbox_user,
            limits=limits,
            read_only_paths=tuple(Path(p) for p in sec.read_only_paths) or found.read_only_paths,
            workspace_roots={**found.workspace_roots, **sec.workspace_roots},
        )
    return found


_SIZES = ("memory", "file_size", "disk", "tmp", "disk_reserve", "browser_memory")


def confinement_for(
    settings: Settings,
    sandbox: SandboxSettings,
    workspace: Path,
    run_id: str,
    proxy_socket: Path | None = None,
    attempt_key: str | None = None,
) -> Confinement:
    """A run's sandbox: its workspace writable (with git's code-running files read-only), its
    own artifacts readable, the worker's read-only additions, its limits.

    An agent's sandbox gets its dispatch's ``attempt_key`` as ``XSKY_ATTEMPT_KEY``: the same
    for every attempt of a dispatch, so a script can tell a retry of its own work from new work
    and guard a side effect it must not repeat (the recipe in docs/deployment.md, "Recovery from a lost worker")."""
    # (run_folder: a run id naming a folder of the store's own — `_pages/`, every run's browser
    # logins — gets a folder of its own; any Temporal client can start a run with such an id)
    readable = (settings.artifacts / run_folder(run_id),)
    return Confinement(
        workspace=workspace,
        readable=readable,
        proxy_socket=proxy_socket,
        extra_env={"XSKY_ATTEMPT_KEY": attempt_key} if attempt_key is not None else {},
        read_only_paths=sandbox.read_only_paths,
        limits=sandbox.limits,
        sandbox_user=sandbox.sandbox_user,
        protected=bwrap.protected_paths(workspace),
    )


def hand_over(fd: int, owner: tuple[int, int] | None) -> None:
    """A file or folder the worker made in a workspace becomes the sandbox user's, so the
    agent's own commands may change it (a root worker's sandbox is not root)."""
    if owner is not None:
        with contextlib.suppress(OSError):
            os.fchown(fd, *owner)


def open_inside(
    workspace: Path,
    target: Path,
    flags: int,
    *,
    make_parents: bool = False,
    owner: tuple[int, int] | None = None,
) -> int:
    """A descriptor of ``target`` (a path :func:`confine` returned), opened one folder at a
    time from the workspace with no symlink followed: a folder swapped for a link between
    the check and the open (by a command running beside) fails instead of leading out.
    Only regular files open; a FIFO or device would hang or feed the worker. Folders and
    files made here are handed to ``owner`` (the sandbox user).
    """
    root = workspace.resolve()
    parts = target.relative_to(root).parts
    if not parts:
        raise ToolError("the workspace itself is a directory; name a file inside it")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            made = False
            if make_parents:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                    made = True
            step = os.open(
                part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
            )
            os.close(fd)
            fd = step
            if made:
                hand_over(fd, owner)
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
    if flags & os.O_CREAT and owner is not None and info.st_uid != owner[0]:
        hand_over(out, owner)
    os.set_blocking(out, True)
    return out


def list_inside(
    workspace: Path, target: Path, recursive: bool
) -> Iterator[tuple[str, list[str], list[str]]]:
    """(folder relative to the workspace, its folders, its files) under ``target``, walked by
    descriptors (``os.fwalk``): a folder swapped for a link to a host folder mid-walk is not
    followed, so no name from outside the workspace is ever listed."""
    root = workspace.resolve()
    rel = target.relative_to(root)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in rel.parts:
            step = os.open(
                part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
            )
            os.close(fd)
            fd = step
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ToolError(
                f"{rel!s} goes through a symbolic link or a file; name the real folder"
            ) from None
        raise
    try:
        for dirpath, dirnames, filenames, _dirfd in os.fwalk(".", dir_fd=fd, follow_symlinks=False):
            here = os.path.normpath(os.path.join(str(rel), dirpath))
            yield ("" if here == "." else here), dirnames, filenames
            if not recursive:
                break
    finally:
        os.close(fd)
