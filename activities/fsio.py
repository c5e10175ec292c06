"""Writing files so that a reader never sees half of one, and reading JSON back.

:func:`atomic_write` writes a temporary file in the target's folder and renames it over the
target: a reader (the transcript watcher, a restarted activity, a person) sees the old file
or the new one, never a part. With ``sync`` (the default) the data is on disk before the
rename, so a crash cannot leave an empty file under the final name; what can be rebuilt
(staging files, settings a person can write again) passes ``sync=False``.
:func:`append_at` is the append-only counterpart for files that grow by deltas.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def atomic_write(
    path: Path,
    data: str | bytes | Iterable[bytes],
    *,
    sync: bool = True,
    mode: int = 0o600,
    before: Callable[[int], None] | None = None,
) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8; chunks as they come, for a
    file too large to hold at once), creating its folder.

    The file gets ``mode`` less the umask, as a new file from ``open()`` would: owner-only
    by default (as :func:`tempfile.mkstemp` makes one), ``0o666`` for the usual. ``before``
    is called with the temporary file's descriptor before anything is written, to give it
    another group or mode. On any failure, interruptions included, the temporary file goes.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temporary(path.parent, mode)
    try:
        if before is not None:
            before(fd)
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, str | bytes):
                fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            else:
                for chunk in data:
                    fh.write(chunk)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _temporary(folder: Path, mode: int) -> tuple[int, Path]:
    """A new file in ``folder`` that nobody else has open (made as mkstemp makes one)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        tmp = folder / f".tmp-{secrets.token_hex(6)}"
        try:
            return os.open(tmp, flags, mode), tmp
        except FileExistsError:
            continue


def write_json(path: Path, value: Any, sync: bool = True) -> None:
    """:func:`atomic_write` of ``value`` as JSON (UTF-8 kept as is, indented by one)."""
    atomic_write(path, json.dumps(value, ensure_ascii=False, indent=1), sync=sync)


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def append_at(path: Path, at: int, data: bytes) -> None:
    """Cut ``path`` to ``at`` bytes (what a crashed attempt appended goes) and append ``data``, durably."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.ftruncate(fd, at)
        os.lseek(fd, at, os.SEEK_SET)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(folder: Path) -> None:
    """Make the names in ``folder`` durable (the files' own data is synced when written)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


Stamp = tuple[int, int, int, int]

# A file's modification time is the clock's at a coarse tick (milliseconds): a file changed
# this recently may change again under the same stamp, so what is read from it is not kept.
RECENT_NS = 2_000_000_000


def stamp(path: Path, *, follow: bool = True) -> Stamp | None:
    """What changes when a file (or folder) is written or replaced: its device and inode, size
    and modification time (None: no such file). For caches of what is read from it."""
    try:
        info = os.stat(path, follow_symlinks=follow)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def settled(found: Stamp | None) -> bool:
    """May what was read under this stamp be kept (no file, or one not changed just now)?"""
    return found is None or time.time_ns() - found[3] > RECENT_NS
