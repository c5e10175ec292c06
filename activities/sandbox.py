"""Confinement of tools to a run's workspace, and a scrubbed environment for commands.

:func:`confinement_for` says what the OS sandbox (activities/os_sandbox.py) hides from a
run's processes: everything xsky keeps and everything of the worker's user.
"""

from __future__ import annotations

import os
from pathlib import Path

from activities.os_sandbox import Confinement
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
    env = {k: v for k, v in os.environ.items() if k in _ENV_ALLOW or k.startswith(_ENV_ALLOW_PREFIX)}
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
            raise ToolError(f"writing into {hit}/ is not allowed ({path!r}); agents may not change version control or xsky state")
        if target == root:
            raise ToolError("the workspace itself is a directory; name a file inside it")
    return target


def confinement_for(settings: Settings, workspace: Path, run_id: str, proxy_socket: Path | None = None) -> Confinement:
    """A run's sandbox: its workspace writable, its own artifacts readable; hidden are the
    worker user's home, xsky's state (Temporal database, logs, transcripts), the artifact
    store, every run's workspace, the skills home and the settings folders."""
    hidden = [Path.home(), settings.home, settings.artifacts, settings.runs, settings.skills_home,
              *(path.parent for _, path in settings_paths())]
    return Confinement(workspace=workspace, hidden=tuple(hidden),
                       readable=(settings.artifacts / safe_component(run_id),), proxy_socket=proxy_socket)
