"""Where a run's workspace lives: always a folder the worker chose, made and owned for the sandbox.

A run's input names its workspace; it never gives a path. The stock ``temporal`` CLI can
start a run with any input, and the workspace is the one place a sandbox may write, so a
path there (``/etc/cron.d``, the worker's ``site-packages``, a home holding ``.ssh``) would
be a hole. So:

- no ``workspace`` option: ``<XSKY_RUNS>/<run id>/workspace`` (a run of its own);
- a name (``"site-build"``): ``<XSKY_HOME>/workspaces/site-build``, shared by the runs that
  name it;
- ``"<root>/<name>"`` where ``<root>`` is a key of the worker's own
  ``security.workspace_roots`` (``{"projects": "/srv/xsky-projects"}``): that folder.

Every root is checked when it is used: not the system, not a home or a folder holding one,
not a folder holding credentials (``.ssh``, ``.aws`` …), not xsky's state, and neither on
nor holding the worker's import or exec path (a ``.pth`` file a command wrote there would
run in the worker's next Python, outside every sandbox). The worker makes the workspace
itself and gives it to the sandbox user (a root worker's sandbox is not root).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from activities.fsio import atomic_write, settled, stamp
from xsky.artifacts import run_folder
from xsky.config import Settings
from xsky.settings_files import settings_paths

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# Dot-folders and files that hold credentials: a folder with one at its top is a home.
CREDENTIALS = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".kube",
    ".docker",
    ".azure",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".password-store",
    ".vault-token",
)
SYSTEM_FOLDERS = frozenset(
    {
        "/",
        "/usr",
        "/etc",
        "/bin",
        "/sbin",
        "/lib",
        "/lib64",
        "/var",
        "/boot",
        "/sys",
        "/proc",
        "/dev",
        "/opt",
        "/srv",
        "/run",
        "/tmp",
        "/home",
        "/root",
        "/mnt",
        "/media",
    }
)


class WorkspaceRefused(ValueError):
    """A run's workspace cannot be used; the message says why and what to write instead."""


def resolve(option: str | None, settings: Settings, run_id: str, roots: dict[str, str]) -> Path:
    """The folder a run's ``workspace`` option stands for (not made yet)."""
    if not option:
        return (settings.runs / run_folder(run_id) / "workspace").absolute()
    if option.startswith(("/", "~", ".")) or "\\" in option or "\x00" in option:
        raise WorkspaceRefused(
            f"the run's workspace {option!r} is a path; a run names its workspace, the worker decides where it lives: "
            'give a name such as "site-build" (it becomes <XSKY_HOME>/workspaces/site-build), or '
            '"<root>/<name>" for a root the worker\'s settings name in security.workspace_roots'
            + (f" ({', '.join(sorted(roots))})" if roots else "")
        )
    parts = option.split("/")
    bad = [p for p in parts if not NAME_RE.match(p)]
    if bad:
        raise WorkspaceRefused(
            f"the run's workspace {option!r} holds {bad[0]!r}, which is not a name; names are letters, digits, "
            "'.', '_' and '-' (not starting with '.' or '-'), joined by '/'"
        )
    if len(parts) > 1 and parts[0] in roots:
        base, rest = Path(roots[parts[0]]).expanduser().absolute(), parts[1:]
    else:
        base, rest = (settings.home / "workspaces").absolute(), parts
    return base.joinpath(*rest)


def problem(
    workspace: Path, settings: Settings, roots: dict[str, str], owner: int | None
) -> str | None:
    """Why ``workspace`` (resolved, made or not) cannot be a run's one writable place.

    ``owner``: the sandbox's uid. A folder it owns is one the worker made for a sandbox;
    any other existing folder must not look like a home (credentials at its top)."""
    # Every attempt resolves its workspace and the roots again: a folder a sandbox can write in
    # (another run's workspace) may hold a root or a workspace, and swap it for a link. What
    # is checked of a real folder is remembered (:func:`_checked`).
    ws = Path(os.path.realpath(workspace))
    under = next(((r, w) for r, w in workspace_roots(settings, roots) if _inside(ws, r)), None)
    if under is None:
        return f"the workspace {ws} is outside every workspace root of this worker"
    root, what = under
    found = _checked(root, settings, what) or _checked_code_path(ws)
    if found:
        return found
    if ws.is_dir() and (owner is None or ws.stat().st_uid != owner) and _credentials(ws):
        return f"the workspace {ws} holds credentials ({_credentials(ws)}): it looks like a home, not a workspace"
    return None


def workspace_roots(settings: Settings, roots: dict[str, str]) -> list[tuple[Path, str]]:
    """(real folder, what it is) of every root this worker makes workspaces in."""
    found = [
        (settings.runs, "the run workspaces"),
        (settings.home / "workspaces", "the named workspaces"),
        *((Path(p).expanduser(), f"workspace root {name!r}") for name, p in sorted(roots.items())),
    ]
    return [(Path(os.path.realpath(folder.absolute())), what) for folder, what in found]


# What was found of each real root, remembered while nothing it depends on has changed: the
# root itself (its inode and modification time: a name added or removed in it, or the folder
# replaced), the worker's settings file and folders, and its import and program paths — and
# only once the root and the file have not changed for a moment (fsio.settled).
_ROOTS: dict[tuple[object, ...], str | None] = {}
_CODE_PATHS: dict[tuple[object, ...], str | None] = {}
_REMEMBERED = 256  # entries of each, at most (a worker uses a few roots and workspaces)


def _checked(root: Path, settings: Settings, what: str) -> str | None:
    """:func:`root_problem_of` a real root, computed again when the root or what the check
    reads may have changed."""
    own, file = stamp(root, follow=False), stamp(settings.user_settings)
    key = (
        str(root),
        what,
        own,
        file,
        *(str(p) for p in (settings.home, settings.artifacts, settings.skills_home)),
        *(str(p) for _, p in settings_paths(settings)),
        tuple(sys.path),
        os.environ.get("PATH", ""),
    )
    if key in _ROOTS:
        return _ROOTS[key]
    found = root_problem_of(root, settings, what)
    if settled(own) and settled(file):
        if len(_ROOTS) >= _REMEMBERED:
            _ROOTS.clear()
        _ROOTS[key] = found
    return found


def _checked_code_path(ws: Path) -> str | None:
    """:func:`_code_path_problem` of a real workspace folder (a path, checked against the
    worker's import and program paths: computed again when those change)."""
    key = (str(ws), tuple(sys.path), os.environ.get("PATH", ""))
    if key not in _CODE_PATHS:
        if len(_CODE_PATHS) >= _REMEMBERED:
            _CODE_PATHS.clear()
        _CODE_PATHS[key] = _code_path_problem(ws, f"the workspace {ws}")
    return _CODE_PATHS[key]


def root_problem_of(root: Path, settings: Settings, what: str = "a workspace root") -> str | None:
    """Why a folder cannot hold workspaces (None: it can)."""
    real = Path(os.path.realpath(root))
    if str(real) in SYSTEM_FOLDERS:
        return f"{what} {real} is a system folder"
    for home in _homes():
        if real == home or _inside(home, real):
            return f"{what} {real} is, or holds, the home folder {home}"
    if real.exists() and _credentials(real):
        return f"{what} {real} holds credentials ({_credentials(real)})"
    state = Path(os.path.realpath(settings.home.absolute()))
    if real == state or _inside(state, real):
        return f"{what} {real} holds xsky's state ({state}: the Temporal database, logs, artifacts)"
    for name, folder in (
        ("xsky's artifact store", settings.artifacts),
        ("the skills home", settings.skills_home),
    ):
        place = Path(os.path.realpath(folder.expanduser().absolute()))
        if place == real or _inside(place, real) or _inside(real, place):
            return f"{what} {real} overlaps {name} ({place})"
    for _, path in settings_paths(settings):
        file = Path(os.path.realpath(path.expanduser().absolute()))
        if _inside(file, real):
            return f"{what} {real} holds the settings file {file}"
    return _code_path_problem(real, f"{what} {real}")


def _code_path_problem(folder: Path, what: str) -> str | None:
    """A folder a sandbox writes in must not be, or hold, a folder the worker loads code from.

    A ``.pth`` or module planted there would run in the worker's next Python, outside every
    sandbox; a program planted in a folder of ``PATH`` would run on the next call of its name.
    Just below an import folder is refused too (``site-packages/<name>`` is a package the
    worker may import by that name); deeper is not: ``<project>/.xsky/runs/<id>`` holds
    nothing Python imports unless it asks for that very path."""
    for entry in _import_path():
        if entry == folder or _inside(entry, folder):
            return f"{what} is, or holds, {entry}, where the worker imports Python code from"
        if folder.parent == entry:
            return f"{what} is directly in {entry}, where the worker imports Python code from"
    for entry in _program_path():
        if entry == folder or _inside(entry, folder):
            return f"{what} is, or holds, {entry}, a folder of PATH the worker runs programs from"
    return None


def _import_path() -> list[Path]:
    return _real_dirs(tuple(p for p in sys.path if p))


def _program_path() -> list[Path]:
    return _real_dirs(tuple(os.environ.get("PATH", "").split(os.pathsep)))


@lru_cache(maxsize=16)
def _real_dirs(entries: tuple[str, ...]) -> list[Path]:
    """Real folders among ``entries`` (cached: every attempt checks its workspace against them)."""
    return list(dict.fromkeys(Path(os.path.realpath(e)) for e in entries if e and os.path.isdir(e)))


def make(workspace: Path, uid: int | None, gid: int | None) -> Path:
    """The workspace, made by the worker and owned by the sandbox user (with what is in it,
    once: a workspace made before the sandbox had a user of its own is handed over)."""
    workspace.mkdir(parents=True, exist_ok=True)
    if uid is not None and gid is not None:
        info = workspace.stat()
        if info.st_uid != uid:
            for path in _tree(workspace):
                try:
                    os.chown(path, uid, gid, follow_symlinks=False)
                except OSError:
                    pass
        workspace.chmod(0o750)
    return workspace.resolve()


def used_mark(
    settings: Settings, run_id: str, workspace: Path, execution: str | None = None
) -> Path:
    """Where this worker notes that run ``run_id`` has used ``workspace`` (outside every
    workspace, in xsky's own state, which no tool may touch). ``execution``: the run's first
    execution (AgentInput.execution_id), which a continue-as-new keeps and a new run of the same
    id does not — an id is free again once the server dropped the ended run, and the new run's
    first attempt was refused by the old one's mark (review20)."""
    named = f"{run_id}\0{workspace.absolute()}" + (f"\0{execution}" if execution else "")
    digest = hashlib.sha256(named.encode()).hexdigest()[:32]
    return settings.home / "workspace-marks" / f"{digest}.json"


def mark_used(mark: Path, run_id: str, workspace: Path) -> None:
    """Note that run ``run_id`` has used ``workspace`` here: from now on, the folder gone means
    it was deleted under the run (attempt.workspace_for)."""
    mark.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(
        mark,
        json.dumps({"run": run_id, "workspace": str(workspace.absolute()), "at": time.time()}),
        sync=False,
    )


def _tree(root: Path) -> Iterable[str]:
    yield str(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            yield os.path.join(dirpath, name)


@lru_cache(maxsize=1)
def _homes() -> list[Path]:
    homes = {Path(os.path.realpath(Path.home()))}
    try:
        import pwd

        for entry in pwd.getpwall():
            if (
                entry.pw_dir
                and entry.pw_dir not in ("/", "/nonexistent")
                and os.path.isdir(entry.pw_dir)
            ):
                if entry.pw_uid == 0 or entry.pw_uid >= 1000:
                    homes.add(Path(os.path.realpath(entry.pw_dir)))
    except (ImportError, OSError):
        pass
    return sorted(homes)


def _credentials(folder: Path) -> str:
    return ", ".join(c for c in CREDENTIALS if (folder / c).exists())


def _inside(path: Path, folder: Path) -> bool:
    """Is ``path`` strictly inside ``folder``? (Both absolute and normal, as real paths are:
    compared by their names' components, as ``Path.is_relative_to`` does, only faster.)"""
    inner, outer = str(path), str(folder)
    return inner != outer and inner.startswith(outer.rstrip("/") + "/")
