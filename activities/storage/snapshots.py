"""A run's workspace in the store: snapshotted after each workspace agent, restored on another
machine when the one that held it is lost.

A workspace lives on one host at a time (the leader sends its agents to that host's task
queue); with a shared object store, each agent that ran there ends by recording the workspace:
every regular file's content under ``<key>/files/<sha256>`` (content-addressed: only what
changed is uploaded), a manifest of paths, modes and digests, and ``<key>/HEAD`` naming the
newest manifest. An agent that starts on a host whose copy is not at ``HEAD`` (a new host,
after the old one was lost) first makes the workspace exactly the manifest's: missing and
changed files fetched, files the manifest does not hold removed. What each host last made or
restored is noted outside the workspace (``$XSKY_HOME/snapshots/…``), where agents cannot write.

Symbolic links, sockets and empty folders are not kept: a workspace moves as its files.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from activities.fsio import atomic_write
from xsky.artifacts import safe_component
from xsky.storage import ObjectStore

MANIFEST_VERSION = 1


def workspace_key(run_id: str, workspace: str | None, workspace_of: str | None) -> str:
    """Where a workspace's snapshots are in the store: the run's own (or the run it follows up),
    or a named workspace, shared by the runs that name it."""
    if workspace:
        return f"_workspaces/{safe_component(workspace)}"
    return f"{safe_component(workspace_of or run_id)}/_workspace"


@dataclass(frozen=True)
class Snapshots:
    store: ObjectStore
    key: str  # workspace_key(...)
    folder: Path  # the workspace on this machine
    marks: Path  # $XSKY_HOME/snapshots: what this machine last took or restored
    owner: tuple[int, int] | None = None  # the sandbox user, who owns the workspace's files

    @property
    def _mark(self) -> Path:
        return self.marks / f"{self.key.replace('/', '__')}.json"

    def _local(self) -> dict[str, object]:
        try:
            value = json.loads(self._mark.read_text(encoding="utf-8"))
            return value if isinstance(value, dict) else {}
        except (OSError, ValueError):
            return {}

    def head(self) -> str | None:
        try:
            return self.store.get(f"{self.key}/HEAD").decode("utf-8").strip() or None
        except FileNotFoundError:
            return None

    def restore(self) -> int | None:
        """Make the workspace the newest snapshot when this machine's copy is not it; the
        number of files fetched (None: it was already, or there is no snapshot yet)."""
        head = self.head()
        if head is None or self._local().get("manifest") == head:
            return None
        manifest = json.loads(self.store.get(head))
        files: dict[str, dict[str, object]] = manifest["files"]
        self.folder.mkdir(parents=True, exist_ok=True)
        here = _scan(self.folder, {})
        fetched = 0
        for rel, info in files.items():
            target = self.folder / rel
            if not _inside(target, self.folder):
                continue  # a manifest that climbs out is not followed
            if here.get(rel, {}).get("sha256") == info["sha256"]:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            data = b"".join(self.store.chunks(f"{self.key}/files/{info['sha256']}"))
            mode = info.get("mode")
            atomic_write(
                target, data, sync=False, mode=mode & 0o777 if isinstance(mode, int) else 0o644
            )
            fetched += 1
        for rel in here.keys() - files.keys():
            (self.folder / rel).unlink(missing_ok=True)
        if self.owner is not None:
            _hand_over(self.folder, self.owner)
        self._note(head, _scan(self.folder, {}))
        return fetched

    def take(self) -> int:
        """Record the workspace as it is now; the number of files uploaded (changed ones)."""
        noted = self._local().get("files")
        known: dict[str, dict[str, object]] = noted if isinstance(noted, dict) else {}
        files = _scan(self.folder, known)
        stored = {str(v["sha256"]) for v in known.values()}
        sent = 0
        for rel, info in files.items():
            digest = str(info["sha256"])
            if digest in stored:
                continue
            blob = f"{self.key}/files/{digest}"
            if not self.store.exists(blob):
                self.store.put(blob, (self.folder / rel).read_bytes())
                sent += 1
            stored.add(digest)
        manifest = {
            "version": MANIFEST_VERSION,
            "takenAt": time.time(),
            "files": {k: {"sha256": v["sha256"], "mode": v["mode"]} for k, v in files.items()},
        }
        name = f"{self.key}/manifest-{time.time_ns():020d}-{secrets.token_hex(3)}.json"
        self.store.put(name, json.dumps(manifest).encode(), sync=True)
        self.store.put(f"{self.key}/HEAD", name.encode(), sync=True)
        self._note(name, files)
        return sent

    def _note(self, manifest: str, files: dict[str, dict[str, object]]) -> None:
        atomic_write(self._mark, json.dumps({"manifest": manifest, "files": files}), sync=False)


def _scan(folder: Path, known: dict[str, dict[str, object]]) -> dict[str, dict[str, object]]:
    """Every regular file under ``folder``: digest, mode, size and mtime (a file whose size and
    mtime are those ``known`` has keeps its known digest: nothing is read twice)."""
    out: dict[str, dict[str, object]] = {}
    if not folder.is_dir():
        return out
    for dirpath, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(dirpath, d))]
        for name in names:
            path = Path(dirpath, name)
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):
                continue
            rel = path.relative_to(folder).as_posix()
            seen = known.get(rel)
            if seen and seen.get("size") == info.st_size and seen.get("mtime") == info.st_mtime_ns:
                digest = str(seen["sha256"])
            else:
                digest = _digest(path)
            out[rel] = {
                "sha256": digest,
                "mode": stat.S_IMODE(info.st_mode),
                "size": info.st_size,
                "mtime": info.st_mtime_ns,
            }
    return out


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while piece := fh.read(1024 * 1024):
            h.update(piece)
    return h.hexdigest()


def _inside(path: Path, folder: Path) -> bool:
    return os.path.normpath(path).startswith(os.path.normpath(folder) + os.sep)


def _hand_over(folder: Path, owner: tuple[int, int]) -> None:
    """Restored files belong to the sandbox user, as the workspace does."""
    for dirpath, dirs, names in os.walk(folder):
        for name in [*dirs, *names]:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chown(path, *owner)
