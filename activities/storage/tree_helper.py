"""The worker's side of workspace_tree.py: start it as its own process — as the sandbox's user
when the worker is root — handed the workspace as an open descriptor, and talk to it in frames.

Why a process, not a thread: the walk and the writes then run with the sandbox user's rights,
not root's, so even a mistake in them could reach nothing that user cannot (a root worker's
``~/.ssh``, the system). It starts with ``python -I -S`` (no environment, no site-packages, no
script folder on the path) from the source of workspace_tree.py, passed on the command line:
the sandbox user needs no right on the worker's code or folders, only an interpreter it may
run (the worker's own when it can reach it, else the system's ``python3``; checked once).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import marshal
import mmap
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from activities.storage import workspace_tree as tree
from activities.storage.workspace_tree import Stamp

Owner = tuple[int, int] | None  # (uid, gid) to run as; None: the worker's own user
SYSTEM_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3")


class TreeHelperError(RuntimeError):
    """The helper could not start or stopped with an error; the message says which and why."""


@functools.cache
def _source() -> str:
    return Path(tree.__file__).read_text(encoding="utf-8")


def _command(python: str, op: str, *args: str) -> list[str]:
    return [python, "-I", "-S", "-X", "utf8", "-c", _source(), op, *args]


def _as(owner: Owner) -> dict[str, Any]:
    """subprocess options that drop to ``owner`` (no supplementary groups: root's are not kept)."""
    if owner is None:
        return {}
    return {"user": owner[0], "group": owner[1], "extra_groups": []}


@functools.cache
def interpreter(owner: Owner) -> str:
    """A Python that ``owner`` may run and that runs the helper (tried once per worker)."""
    candidates = [
        getattr(sys, "_base_executable", "") or "",
        sys.executable,
        *SYSTEM_PYTHONS,
        shutil.which("python3") or "",
    ]
    seen: list[str] = []
    for candidate in candidates:
        if not candidate:
            continue
        path = os.path.realpath(candidate)
        if path in seen:
            continue
        seen.append(path)
        try:
            done = subprocess.run(
                _command(path, "probe"),
                env={},
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=60,
                **_as(owner),
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return path
    who = "the worker's user" if owner is None else f"the sandbox user (uid {owner[0]})"
    raise TreeHelperError(
        f"no Python interpreter that {who} may run was found to snapshot workspaces with (tried "
        f"{', '.join(seen)}); install python3 (3.9 or newer) in /usr/bin, or make the worker's "
        "interpreter readable and executable by that user"
    )


@dataclass(frozen=True)
class Taken:
    """One regular file as the helper read it: its bytes, or None when ``same`` as known."""

    path: str
    mode: int
    stamp: Stamp
    # A file over SPOOL_BYTES comes as a read-only map of a temporary copy (bytes-like, valid
    # while ``each`` runs): its pages are the disk's, which the kernel takes back at will, so a
    # file as large as the quota costs the worker no memory it could run out of.
    data: bytes | mmap.mmap | None


# Files larger than this are spooled to a temporary file rather than held in memory.
SPOOL_BYTES = 8 * 1024 * 1024


class Helper:
    """One running helper: frames out on its stdin, frames in from its stdout."""

    def __init__(self, op: str, folder: Path, owner: Owner):
        python = interpreter(owner)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        self._errors = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(
                _command(python, op, str(fd)),
                env={},
                cwd="/",
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                pass_fds=(fd,),
                **_as(owner),
            )
        except BaseException:
            self._errors.close()
            raise
        finally:
            os.close(fd)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in, self._out = self.proc.stdin, self.proc.stdout

    def request(self, value: dict[str, Any]) -> None:
        """The request (the worker's own data: marshal, which the helper loads without cost)."""
        payload = marshal.dumps(value, 4)
        self._sent(lambda: tree.send(self._in, tree.REQUEST, payload))
        self._sent(self._in.flush)

    def send_piece(self, piece: bytes) -> None:
        if piece:
            self._sent(lambda: tree.send(self._in, tree.DATA, piece))

    def end_file(self) -> None:
        self._sent(lambda: tree.send(self._in, tree.END))

    def drop_file(self) -> None:
        self._sent(lambda: tree.send(self._in, tree.DROPPED))

    def finish_sending(self) -> None:
        """Nothing more for the helper: its stdin ends."""
        self._sent(self._in.close)

    def _sent(self, write: Callable[[], object]) -> None:
        try:
            write()
        except BrokenPipeError:
            raise self._failure() from None

    def receive(self, *kinds: bytes) -> tuple[bytes, bytes]:
        """The next frame, which must be of one of ``kinds`` (the helper's error is raised)."""
        try:
            kind, payload = tree.receive(self._out)
        except EOFError:
            raise self._failure() from None
        if kind == tree.ERROR:
            raise TreeHelperError(f"the workspace helper failed: {_said(payload)}")
        if kind not in kinds:
            raise TreeHelperError(f"the workspace helper sent {kind!r} where {kinds} was due")
        return kind, payload

    def _failure(self) -> TreeHelperError:
        """Why the helper stopped talking: its last word on stdout, else its stderr."""
        with contextlib.suppress(OSError, EOFError, ValueError):
            while True:
                kind, payload = tree.receive(self._out)
                if kind == tree.ERROR:
                    return TreeHelperError(f"the workspace helper failed: {_said(payload)}")
        code = self.proc.wait()
        self._errors.seek(0)
        said = self._errors.read()[-2000:].decode("utf-8", "replace").strip()
        last = said.splitlines()[-1] if said else "no message"
        return TreeHelperError(f"the workspace helper stopped (exit status {code}): {last}")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._in.close()
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        with contextlib.suppress(OSError):
            self._out.close()
        self._errors.close()

    def abort(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.close()


def _said(payload: bytes) -> str:
    return payload[:2000].decode("utf-8", "replace")


@contextlib.contextmanager
def running(op: str, folder: Path, owner: Owner) -> Iterator[Helper]:
    helper = Helper(op, folder, owner)
    try:
        yield helper
    except BaseException:
        helper.abort()
        raise
    helper.close()
    if helper.proc.returncode:
        raise TreeHelperError(
            f"the workspace helper ended with exit status {helper.proc.returncode}"
        )


def take(folder: Path, owner: Owner, known: dict[str, Stamp], each: Callable[[Taken], None]) -> int:
    """Every regular file of the workspace, read by the helper, handed to ``each`` — with its
    bytes when its stamp is not the one ``known`` has; the number of entries skipped (gone,
    links now, unreadable by the sandbox user)."""
    with running("take", folder, owner) as helper:
        helper.request({"known": {rel: tuple(stamp) for rel, stamp in known.items()}})
        helper.finish_sending()
        while True:
            kind, payload = helper.receive(tree.FILE, tree.DONE)
            if kind == tree.DONE:
                return int(tree.DONE_RECORD.unpack(payload)[0])
            mode, size, mtime, ctime, ino, same = tree.FILE_RECORD.unpack_from(payload)
            path = tree.path_text(payload[tree.FILE_RECORD.size :])
            stamp = (size, mtime, ctime, ino)
            if same:
                each(Taken(path, mode, stamp, None))
                continue
            with contextlib.ExitStack() as held:
                sink: Any = (
                    held.enter_context(_spool(folder)) if size > SPOOL_BYTES else bytearray()
                )
                whole = True
                while True:
                    kind, piece = helper.receive(tree.DATA, tree.END, tree.DROPPED)
                    if kind == tree.DATA:
                        if isinstance(sink, bytearray):
                            sink += piece
                        else:
                            sink.write(piece)
                    elif kind == tree.END:
                        break
                    else:  # unreadable midway: left out of this snapshot
                        whole = False
                        break
                if not whole:
                    continue
                if isinstance(sink, bytearray):
                    data: bytes | mmap.mmap = bytes(sink)
                else:
                    sink.flush()
                    if sink.tell() == 0:
                        data = b""
                    else:
                        data = held.enter_context(
                            mmap.mmap(sink.fileno(), 0, access=mmap.ACCESS_READ)
                        )
                each(Taken(path, mode, stamp, data))


def _spool(folder: Path) -> IO[bytes]:
    """A nameless temporary file beside the workspace — on the workspaces' disk, not in /tmp,
    which may be a tmpfs whose pages are memory — else in the system's temporary folder."""
    try:
        return tempfile.TemporaryFile(dir=folder.parent)
    except OSError:
        return tempfile.TemporaryFile()


@dataclass(frozen=True)
class Restored:
    stamps: dict[str, Stamp]  # every file of the manifest now in place: its stamp
    fetched: list[str]  # the paths written
    removed: int  # entries deleted that the manifest does not hold
    damaged: list[str]  # paths whose stored bytes were not their digest (not written)


def restore(
    folder: Path,
    owner: Owner,
    files: dict[str, tuple[str, int]],
    known: dict[str, tuple[int, int, int, int, str]],
    fetch: Callable[[str], Iterable[bytes]],
) -> Restored:
    """Make the workspace ``files`` (``{path: (sha256, mode)}``, paths checked by the caller):
    the helper removes what the manifest does not hold and says which files it needs; their
    bytes (``fetch(digest)``) are checked against their digest as they are passed on."""
    damaged: list[str] = []
    stamps: dict[str, Stamp] = {}
    with running("restore", folder, owner) as helper:
        helper.request({"files": files, "known": known})
        need = []
        while True:
            kind, payload = helper.receive(tree.NEED, tree.DONE)
            if kind == tree.DONE:
                break
            need.append(tree.path_text(payload))
        for rel in need:
            if rel not in files:
                raise TreeHelperError(
                    f"the workspace helper asked for {rel!r}, not in the manifest"
                )
            digest = files[rel][0]
            h = hashlib.sha256()
            for piece in fetch(digest):
                h.update(piece)
                helper.send_piece(piece)
            if h.hexdigest() == digest:
                helper.end_file()
            else:
                helper.drop_file()
                damaged.append(rel)
        helper.finish_sending()
        while True:
            kind, payload = helper.receive(tree.STAMP, tree.DONE)
            if kind == tree.DONE:
                removed = int(tree.DONE_RECORD.unpack(payload)[0])
                break
            size, mtime, ctime, ino = tree.STAMP_RECORD.unpack_from(payload)
            stamps[tree.path_text(payload[tree.STAMP_RECORD.size :])] = (size, mtime, ctime, ino)
    return Restored(stamps, [r for r in need if r not in damaged], removed, damaged)
