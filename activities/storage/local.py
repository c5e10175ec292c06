"""The local directory store: today's artifact folder (``XSKY_ARTIFACTS``), one file per key.

Writes are atomic (a temporary file in the same folder, renamed over the target) and
idempotent; appends are single writes to one file, so a reader never sees half a line but the
last. The files keep the layout they always had (``<run>/<agent>/<file>``), so one machine — or
workers sharing one disk — runs exactly as before.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from activities.fsio import atomic_write
from xsky.storage import ANY_VERSION

CHUNK = 1024 * 1024


class LocalStore:
    shared = False

    def __init__(self, root: str | Path, share_gid: int | None = None):
        self.root = Path(root).resolve()
        self.where = f"the artifact store at {self.root}"
        # The sandbox user's group, when it is not the worker's (a root worker): a run's
        # sandboxes may read that run's artifacts (bound read-only), nobody else may.
        self.share_gid = share_gid

    def _path(self, key: str) -> Path:
        if key.startswith("/") or any(p in ("", ".", "..") for p in key.split("/")):
            raise ValueError(f"{key!r} does not name a file inside {self.where}")
        return self.root / key

    def local(self, key: str) -> Path | None:
        return self._path(key)

    def put(self, key: str, data: bytes, *, sync: bool = False) -> None:
        target = self._path(key)
        share = None if self.share_gid is None else lambda fd: self._share(target.parent, fd)
        atomic_write(target, data, sync=sync, before=share)

    def get_tagged(self, key: str) -> tuple[bytes, str]:
        data = self._path(key).read_bytes()
        return data, _digest(data)

    def put_if(self, key: str, data: bytes, tag: str | None, *, sync: bool = False) -> str | None:
        # The version is the content's digest; checked and replaced under a lock on the folder
        # (flock: writers on this machine, or on a disk that shares its locks), so a write that
        # comes late sees the newer file and is refused.
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)
            if tag != ANY_VERSION:
                try:
                    now: str | None = _digest(target.read_bytes())
                except FileNotFoundError:
                    now = None
                if now != tag:
                    return None
            self.put(key, data, sync=sync)
            return _digest(data)
        finally:
            os.close(folder)  # (the lock goes with it)

    def put_new(self, key: str, data: bytes) -> bool:
        # Written whole under a temporary name, then linked to the key: link() fails when the
        # key exists, so the key never names a part, and of two writers one wins.
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".tmp-{secrets.token_hex(6)}"  # skipped by keys()
        # (the owner's alone, as put makes a file — the sandbox's group may read it where the
        # store shares with it; it was 0644 less the umask)
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        try:
            if self.share_gid is not None:
                self._share(target.parent, fd)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, target)
            except FileExistsError:
                return False
            return True
        finally:
            os.unlink(tmp)

    def _share(self, folder: Path, fd: int) -> None:
        """Group-readable by the sandbox's group: the file, its agent folder, its run folder."""
        assert self.share_gid is not None
        os.fchown(fd, -1, self.share_gid)
        os.fchmod(fd, 0o640)
        for place in (folder, folder.parent):
            if place == self.root or not place.is_relative_to(self.root):
                break
            info = place.stat()
            if info.st_gid != self.share_gid or info.st_mode & 0o050 != 0o050:
                os.chown(place, -1, self.share_gid)
                os.chmod(place, (info.st_mode & 0o7777) | 0o050)

    def get(self, key: str) -> bytes:
        return self._path(key).read_bytes()

    def chunks(self, key: str) -> Iterator[bytes]:
        with self._path(key).open("rb") as fh:
            while piece := fh.read(CHUNK):
                yield piece

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def keys(self, prefix: str) -> list[str]:
        folder, _, start = prefix.rpartition("/")
        base = self.root / folder if folder else self.root
        if not base.is_dir():
            return []
        found = []
        for dirpath, _dirs, files in os.walk(base):
            for name in files:
                if name.startswith(".tmp-"):  # a write in progress (atomic_write)
                    continue
                key = Path(dirpath, name).relative_to(self.root).as_posix()
                if key.startswith(prefix):
                    found.append(key)
        return sorted(found)

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def append(self, key: str, data: bytes, *, sync: bool = False) -> None:
        """Made as :meth:`put` makes a file — the owner's alone (the sandbox's group may read
        it where the store shares with it) — not 0644 less the umask: a transcript holds
        results, tool calls and their values, and a home a worker made itself is 0755 (any
        local user read every agent's transcript). One made so before is made private too."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
            if self.share_gid is not None:
                self._share(path.parent, fd)
        except FileExistsError:
            fd = os.open(path, flags)
            mode = os.fstat(fd).st_mode & 0o7777
            if mode & 0o007:
                os.fchmod(fd, mode & ~0o007)
        with os.fdopen(fd, "ab") as fh:
            fh.write(data)  # one write: a reader never sees half of it but the last
            fh.flush()
            if sync:
                os.fsync(fh.fileno())

    def appended(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return b""


def _digest(data: bytes) -> str:
    """A local object's version tag (put_if): its content's digest."""
    return hashlib.sha256(data).hexdigest()
