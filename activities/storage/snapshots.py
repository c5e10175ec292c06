"""A run's workspace in the store: snapshotted after each workspace agent, restored on another
machine when the one that held it is lost.

A workspace lives on one host at a time (the leader sends its agents to that host's task
queue); with a shared object store, each agent that ran there ends by recording the workspace:
every regular file's content under ``<key>/files/<sha256>`` (content-addressed: only what
changed is uploaded), a manifest of paths, modes and digests, and ``<key>/HEAD`` naming the
newest manifest. An agent that starts on a host whose copy is not at ``HEAD`` (a new host,
after the old one was lost) first makes the workspace exactly the manifest's: entries the
manifest does not hold removed (links and folders included), missing and changed files fetched.
What each host last made or restored is noted outside the workspace (``$XSKY_HOME/snapshots/…``),
where agents cannot write.

The workspace is the agents' and may be full of traps (links planted where a later restore
writes, files swapped for links to the worker's keys while they are read): the filesystem half
of both runs as the sandbox's user, through directory descriptors and never following a link
(tree_helper.py, workspace_tree.py), while every process of an agent working in the workspace
on this worker is frozen (activities/sandbox/freeze.py). The worker keeps the store: it hashes
the bytes the helper hands it and stores them under that digest.

Symbolic links, FIFOs, sockets and empty folders are not kept: a workspace moves as its files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from activities.fsio import atomic_write
from activities.sandbox import freeze
from activities.storage import tree_helper
from activities.storage.workspace_tree import Stamp, refusal
from xsky.artifacts import run_folder, safe_component
from xsky.storage import ObjectStore

log = logging.getLogger("xsky.snapshots")

MANIFEST_VERSION = 1
DIGEST = re.compile(r"^[0-9a-f]{64}$")
# Blobs up to this size are fetched once per restore, however many files hold them.
SMALL = 64 * 1024


def workspace_key(run_id: str, workspace: str | None, workspace_of: str | None) -> str:
    """Where a workspace's snapshots are in the store: the run's own (or the run it follows up),
    or a named workspace, shared by the runs that name it."""
    if workspace:
        return f"_workspaces/{safe_component(workspace)}"
    return f"{run_folder(workspace_of or run_id)}/_workspace"


def mark_path(marks: Path, key: str) -> Path:
    """Where this machine notes what it last took or restored of the workspace ``key``
    (``marks``: ``$XSKY_HOME/snapshots``); gone, the next restore makes the workspace the
    store's newest snapshot whatever is there."""
    return marks / f"{key.replace('/', '__')}.json"


class SnapshotError(RuntimeError):
    """A snapshot cannot be restored as stored; the message says which file and why."""


@dataclass(frozen=True)
class Snapshots:
    store: ObjectStore
    key: str  # workspace_key(...)
    folder: Path  # the workspace on this machine
    marks: Path  # $XSKY_HOME/snapshots: what this machine last took or restored
    owner: tuple[int, int] | None = None  # the sandbox user: the helper runs as it
    # A fork's workspace (workspace_key of the run it forks): until the fork has a snapshot of
    # its own, it starts as that run's last one.
    seed: str | None = None

    @property
    def _mark(self) -> Path:
        return mark_path(self.marks, self.key)

    def _local(self) -> dict[str, Any]:
        try:
            value = json.loads(self._mark.read_text(encoding="utf-8"))
            return value if isinstance(value, dict) else {}
        except (OSError, ValueError):
            return {}

    def _known(self) -> dict[str, dict[str, Any]]:
        """What this machine noted of each file: digest, mode and stamp (size, mtime, ctime,
        inode) — a file with the same stamp is not read again."""
        noted = self._local().get("files")
        if not isinstance(noted, dict):
            return {}
        return {
            rel: info
            for rel, info in noted.items()
            if isinstance(info, dict)
            and isinstance(info.get("stamp"), list)
            and len(info["stamp"]) == 4
            and all(isinstance(n, int) for n in info["stamp"])
        }

    def head(self, key: str | None = None) -> str | None:
        try:
            return self.store.get(f"{key or self.key}/HEAD").decode("utf-8").strip() or None
        except FileNotFoundError:
            return None

    def restore(self) -> int | None:
        """Make the workspace the newest snapshot when this machine's copy is not it; the
        number of files fetched (None: it was already, or there is no snapshot yet)."""
        head, key = self.head(), self.key
        if head is None and self.seed is not None:
            head, key = self.head(self.seed), self.seed  # a fork's first: the run it forks
        if head is None or self._local().get("manifest") == head:
            return None
        files = _sound(json.loads(self.store.get(head)).get("files", {}), head)
        known = {
            rel: (*_stamp(info), str(info.get("sha256"))) for rel, info in self._known().items()
        }
        cache: dict[str, bytes] = {}

        def fetch(digest: str) -> Iterator[bytes]:
            if digest in cache:
                yield cache[digest]
                return
            got = bytearray()
            for piece in self.store.chunks(f"{key}/files/{digest}"):
                if len(got) <= SMALL:
                    got += piece
                yield piece
            if len(got) <= SMALL:
                cache[digest] = bytes(got)

        self._present()
        with freeze.frozen(self.folder):
            done = tree_helper.restore(
                self.folder,
                self.owner,
                {rel: (info["sha256"], info["mode"]) for rel, info in files.items()},
                known,
                fetch,
            )
        if done.damaged:
            raise SnapshotError(
                f"the snapshot {head} cannot be restored: the stored bytes of "
                f"{', '.join(done.damaged[:5])} are not the content its manifest names (a damaged "
                "or altered store); take a new snapshot from a host that holds the workspace"
            )
        self._note(
            head,
            {
                rel: {**files[rel], "stamp": list(stamp)}
                for rel, stamp in done.stamps.items()
                if rel in files
            }
            # restored from the run forked: none of these files is under this key yet, so the
            # fork's first snapshot reads and stores them all
            if key == self.key
            else {},
        )
        return len(done.fetched)

    def take(self) -> int:
        """Record the workspace as it is now; the number of files uploaded (changed ones)."""
        known = self._known()
        stored = {str(v.get("sha256")) for v in known.values()}
        files: dict[str, dict[str, Any]] = {}
        sent = 0

        def keep(f: tree_helper.Taken) -> None:
            nonlocal sent
            if f.data is None:  # the same as this machine noted
                digest = str(known[f.path]["sha256"])
            else:
                digest = hashlib.sha256(f.data).hexdigest()
                if digest not in stored:
                    blob = f"{self.key}/files/{digest}"
                    if not self.store.exists(blob):
                        # a large file's map is bytes-like: each store writes it as it does bytes
                        self.store.put(blob, cast(bytes, f.data))
                        sent += 1
                    stored.add(digest)
            files[f.path] = {"sha256": digest, "mode": f.mode, "stamp": list(f.stamp)}

        self._present()
        with freeze.frozen(self.folder):
            skipped = tree_helper.take(
                self.folder, self.owner, {rel: _stamp(info) for rel, info in known.items()}, keep
            )
        if skipped:
            log.info(
                "snapshot of %s: %d entries skipped (gone, links, unreadable)", self.key, skipped
            )
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

    def _present(self) -> None:
        """The workspace folder, made (for the sandbox user) when it is not there yet."""
        if not self.folder.is_dir():
            self.folder.mkdir(parents=True, exist_ok=True)
            if self.owner is not None:
                os.chown(self.folder, *self.owner)

    def _note(self, manifest: str, files: dict[str, dict[str, Any]]) -> None:
        atomic_write(self._mark, json.dumps({"manifest": manifest, "files": files}), sync=False)


def _stamp(info: dict[str, Any]) -> Stamp:
    size, mtime, ctime, inode = info["stamp"]
    return (int(size), int(mtime), int(ctime), int(inode))


def _sound(files: object, head: str) -> dict[str, dict[str, Any]]:
    """The manifest's files that may be written: a path that climbs out (``..``, absolute),
    has an empty or NUL component, or is a file and a folder at once is refused (logged)."""
    if not isinstance(files, dict):
        raise SnapshotError(f"the snapshot {head} holds no file list; take a new snapshot")
    out: dict[str, dict[str, Any]] = {}
    for rel, info in files.items():
        problem = refusal(rel)
        if problem is None and not (
            isinstance(info, dict)
            and DIGEST.match(str(info.get("sha256")))
            and isinstance(info.get("mode"), int)
        ):
            problem = "has no digest and mode"
        if problem is not None:
            log.warning("snapshot %s: the path %r %s; it is not restored", head, rel, problem)
            continue
        out[rel] = {"sha256": info["sha256"], "mode": info["mode"]}
    folders = {rel.rsplit("/", n)[0] for rel in out for n in range(1, rel.count("/") + 1)}
    for rel in sorted(out.keys() & folders):
        log.warning("snapshot %s: %r is a file and a folder; the file is not restored", head, rel)
        del out[rel]
    return out
