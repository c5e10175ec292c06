"""A run's workspace files, for a person (``Run.files``, ``starter.py files``): the list, or one
file's bytes — read where the worker keeps the workspace on this machine, confined to it the
way the agents' own file tools are (every folder opened by descriptor, no link followed, a
path or a link that leads out refused), so a file an agent left cannot show anything else.

The workspace belongs to the sandbox user (mode 750): a person who is neither root, the
worker's user nor in the sandbox user's group is told so and how to read it."""

from __future__ import annotations

import os
from pathlib import Path

from activities.sandbox.confine import confine, list_inside, open_inside, sandbox_settings
from activities.sandbox.workspace import WorkspaceRefused, resolve
from activities.storage import claims, open_objects
from activities.storage.snapshots import workspace_key
from activities.tools import ToolError
from xsky.config import Settings
from xsky.errors import UsageError
from xsky.runs import RunInput
from xsky.settings_files import worker_layers
from xsky.storage import ObjectStore, parse_store

MAX_LISTED = 5000  # names in one listing: a larger workspace is listed a folder at a time


def workspace_folder(settings: Settings, run_id: str, first: RunInput) -> Path:
    """Where the worker keeps run ``run_id``'s workspace (a follow-up's is its first run's),
    as the worker decides it: from the run's workspace name, never a path from the run."""
    roots = sandbox_settings(worker_layers(settings)).workspace_roots
    owner_run = first.resume.workspace_of if first.resume is not None else run_id
    try:
        return resolve(first.options.workspace, settings, owner_run, roots)
    except WorkspaceRefused as e:
        raise UsageError(str(e)) from None


def workspace_holder(settings: Settings, run_id: str, first: RunInput) -> str | None:
    """The host (``XSKY_HOST``) that holds run ``run_id``'s workspace, with an object store —
    where workers share no disk and one host at a time holds it (activities/storage/claims.py);
    None with a shared disk, or before an agent claimed it."""
    if not parse_store(settings.store).s3:
        return None
    workspace_of = first.resume.workspace_of if first.resume is not None else None
    return held_by(
        open_objects(settings), workspace_key(run_id, first.options.workspace, workspace_of)
    )


def held_by(store: ObjectStore, key: str) -> str | None:
    """The host the store's claims name for the workspace ``key`` (None: never claimed)."""
    held = claims.holder(store, key)
    return held.host or None if held is not None else None


def where_held(run_id: str, root: Path, here: str, holder: str | None) -> str | None:
    """What a person reading the workspace on this machine (host ``here``) must know when another
    host holds it: there is no copy here (an error), or this one may be behind (a note)."""
    if holder is None or holder == here:
        return None
    if not root.exists():
        return (
            f"{run_id}'s workspace is on host {holder!r} (the worker with XSKY_HOST={holder}), "
            f"not on this one ({here!r}): run `starter.py files {run_id}` there; "
            f"`starter.py result {run_id}` shows what its agents returned"
        )
    return (
        f"host {holder!r} holds {run_id}'s workspace now: this machine's copy ({root}) is the one "
        f"its agents left here and may be behind — `starter.py files {run_id}` on {holder!r} reads it"
    )


def list_files(root: Path, run_id: str, path: str = "") -> list[str]:
    """Every file under ``path`` (the whole workspace by default), relative to the workspace,
    sorted; a folder is listed with a trailing ``/`` when it is empty."""
    target = _inside(root, run_id, path or ".")
    names: list[str] = []
    try:
        for folder, dirnames, filenames in list_inside(root, target, recursive=True):
            names += [os.path.join(folder, f) for f in filenames]
            if not dirnames and not filenames and folder:
                names.append(folder + "/")
            if len(names) > MAX_LISTED:
                break
    except ToolError as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise _unreadable(root, run_id, path, e) from None
    names.sort()
    if len(names) > MAX_LISTED:
        raise UsageError(
            f"{run_id}'s workspace holds more than {MAX_LISTED} files under {path or '.'!r}: "
            "list one folder at a time (`starter.py files RUN FOLDER`)"
        )
    return names


def read_file(root: Path, run_id: str, path: str) -> bytes:
    """One file's bytes; a folder, a link, a FIFO or a path that leaves the workspace refused."""
    target = _inside(root, run_id, path)
    try:
        fd = open_inside(root, target, os.O_RDONLY)
    except ToolError as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise _unreadable(root, run_id, path, e) from None
    with os.fdopen(fd, "rb") as f:
        return f.read()


def is_folder(root: Path, run_id: str, path: str) -> bool:
    target = _inside(root, run_id, path)
    return target == root.resolve() or (target.is_dir() and not target.is_symlink())


def _inside(root: Path, run_id: str, path: str) -> Path:
    """The real path of ``path`` in the workspace; refused when it (or a link in it) leads out,
    or when there is no workspace here at all."""
    try:
        target = confine(root, path)
    except ToolError as e:
        raise UsageError(str(e)) from None
    except PermissionError as e:
        raise _unreadable(root, run_id, path, e) from None
    if not root.exists():
        raise UsageError(
            f"{run_id} has no workspace on this machine ({root}): its agents have written no file "
            "yet, or it lives on the host of a worker elsewhere (with an object store); "
            f"`starter.py result {run_id}` shows what its agents returned"
        )
    return target


def _unreadable(root: Path, run_id: str, path: str, e: OSError) -> UsageError:
    if isinstance(e, FileNotFoundError):
        return UsageError(
            f"no file {path!r} in {run_id}'s workspace: `starter.py files {run_id}` lists them"
        )
    if isinstance(e, PermissionError):
        try:
            info = root.stat()
            whose = f"the sandbox user (uid {info.st_uid}, group {info.st_gid})"
        except OSError:
            whose = "the sandbox user"
        return UsageError(
            f"{run_id}'s workspace ({root}) belongs to {whose} and you may not read it: run "
            "`starter.py files` as root or as the worker's user (e.g. with sudo), or have "
            "yourself added to that group; `starter.py result` shows what the agents returned"
        )
    return UsageError(f"cannot read {path!r} in {run_id}'s workspace: {e.strerror or e}")
