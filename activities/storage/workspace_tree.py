"""The filesystem half of a workspace snapshot: read and rewrite a workspace through directory
descriptors, never following a link, as the sandbox's user.

A workspace is the one place agents write, so anything in it may be a trap: a link where a file
or a folder was, a folder swapped for a link while it is read (``renameat2`` from a process
that outlives the agent), a FIFO that blocks whoever opens it. So every name is opened on its
own, relative to its folder's descriptor, with ``O_NOFOLLOW`` (folders also ``O_DIRECTORY``,
files ``O_NONBLOCK`` and then ``fstat``-ed: only regular files are kept) — no path of more than
one component is ever resolved, so a link anywhere fails the open instead of leading out. And it
runs as its own small process (tree_helper.py starts it), as the sandbox's unprivileged user
when the worker is root: whatever it were tricked into, it could touch nothing that user cannot.

Stdlib only, and only modules that load in no time (it starts for every snapshot): it runs with
``python -I -S``, handed the workspace as an open descriptor (it needs no right on the folders
above it), and talks to the worker over stdin/stdout in frames (:func:`send`, :func:`receive`):
the worker's requests in ``marshal`` (the worker is trusted), the helper's answers in fixed
binary records and raw path bytes, which the worker reads without evaluating anything. The
worker keeps the store and hashes what it receives itself.

``take``: the worker sends what it knows (``{path: (size, mtime, ctime, inode)}``); for every
regular file the helper sends a record, then its bytes (chunks, then an end) unless it matches
what is known. A file that vanishes or turns into a link meanwhile is skipped.

``restore``: the worker sends the manifest (``{path: (sha256, mode)}``) and what it knows; the
helper first deletes every entry the manifest does not hold (links, FIFOs, a link or a file
where a folder is needed, a folder where a file is), keeps the files whose content is already
the manifest's, answers with the paths it needs, receives their bytes in that order and writes
each to a new name made ``O_CREAT|O_EXCL|O_NOFOLLOW`` in its folder, renamed over the old one.
"""

from __future__ import annotations

import errno
import marshal
import os
import resource
import stat
import struct
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing costs the helper's start milliseconds: annotations only)
    from collections.abc import Iterator
    from typing import IO, Any

CHUNK = 256 * 1024
HEADER = struct.Struct(">cI")  # kind, payload length
# worker → helper
REQUEST = b"M"  # the request, marshalled
DATA, END, DROPPED = b"C", b"E", b"X"  # a file's bytes, its end, or its bytes abandoned
# helper → worker
FILE = b"F"  # a regular file: FILE_RECORD, then its path
NEED = b"N"  # a path whose bytes a restore needs
STAMP = b"S"  # a restored file: STAMP_RECORD, then its path
DONE = b"D"  # the end: DONE_RECORD (entries skipped or removed)
ERROR = b"!"  # the helper's error, UTF-8
FILE_RECORD = struct.Struct(">IQqqQ?")  # mode, size, mtime ns, ctime ns, inode, same as known
STAMP_RECORD = struct.Struct(">QqqQ")  # size, mtime ns, ctime ns, inode
DONE_RECORD = struct.Struct(">q")

FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# What a name that changed under the walk gives: gone, a link now, a folder or a file no more,
# a socket, a file its user may not read. The entry is skipped, the snapshot goes on.
MOVED = frozenset(
    {
        errno.ENOENT,
        errno.ELOOP,
        errno.ENOTDIR,
        errno.ENXIO,
        errno.EACCES,
        errno.EPERM,
        errno.ESTALE,
        errno.EISDIR,
    }
)
TEMP = ".xsky-restore-"

Stamp = tuple[int, int, int, int]  # size, mtime ns, ctime ns, inode


# -- frames ---------------------------------------------------------------------------------------


def send(out: IO[bytes], kind: bytes, payload: bytes = b"") -> None:
    out.write(HEADER.pack(kind, len(payload)))
    if payload:
        out.write(payload)


def receive(inp: IO[bytes]) -> tuple[bytes, bytes]:
    """The next frame; EOFError when the other side is gone."""
    head = _exactly(inp, HEADER.size)
    kind, size = HEADER.unpack(head)
    return kind, _exactly(inp, size)


def _exactly(inp: IO[bytes], size: int) -> bytes:
    data = inp.read(size) if size else b""
    if len(data) != size:
        raise EOFError("the other side of the snapshot helper's pipe closed")
    return data


def path_bytes(rel: str) -> bytes:
    """A path as the bytes of its name on disk (and back with :func:`path_text`)."""
    return rel.encode("utf-8", "surrogateescape")


def path_text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _request(inp: IO[bytes]) -> Any:
    kind, payload = receive(inp)
    if kind != REQUEST:
        raise ValueError(f"expected a request, got {kind!r}")
    return marshal.loads(payload)


# -- paths ----------------------------------------------------------------------------------------


def refusal(rel: object) -> str | None:
    """Why a manifest path may not be written (None: it may): only plain relative paths."""
    if not isinstance(rel, str) or rel == "":
        return "is empty"
    if rel.startswith("/"):
        return "is absolute"
    if "\x00" in rel:
        return "holds a NUL character"
    if any(part in ("", ".", "..") for part in rel.split("/")):
        return "has an empty, '.' or '..' component"
    return None


class Folders:
    """Descriptors of the folders on the way to one folder of the workspace, kept while the next
    path shares them (paths come sorted: siblings reuse their folder's descriptor)."""

    def __init__(self, root: int):
        self.root = root
        self.chain: list[tuple[str, int]] = []

    def open(self, parts: list[str], make: bool) -> int | None:
        """The descriptor of the folder ``parts`` (made when ``make``; None when it is not a
        folder and ``make`` is false)."""
        keep = 0
        while keep < min(len(parts), len(self.chain)) and self.chain[keep][0] == parts[keep]:
            keep += 1
        for _, stale in self.chain[keep:]:
            os.close(stale)
        del self.chain[keep:]
        for part in parts[keep:]:
            parent = self.chain[-1][1] if self.chain else self.root
            fd = _folder(parent, part, make)
            if fd is None:
                return None
            self.chain.append((part, fd))
        return self.chain[-1][1] if self.chain else self.root

    def close(self) -> None:
        self.open([], False)


def _folder(parent: int, name: str, make: bool) -> int | None:
    """``name`` in ``parent`` as a folder, never through a link; with ``make``, whatever else is
    there is removed and a folder made."""
    for _ in range(3):
        try:
            fd = _enter(parent, name)
        except OSError as e:
            if make and e.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                if e.errno != errno.ENOENT:
                    _remove(parent, name)
                try:
                    os.mkdir(name, 0o755, dir_fd=parent)
                except FileExistsError:
                    pass
                continue
            if not make and e.errno in MOVED:
                return None
            raise
        if make:
            _writable(fd)
        return fd
    raise OSError(errno.EAGAIN, f"{name!r} kept changing while it was made a folder")


def _enter(parent: int, name: str) -> int:
    """``name`` in ``parent`` opened as a folder, never through a link. A folder of the helper's
    own user that it may not read (``chmod 000`` by an agent) gets its owner's rights back
    first: a restore must be able to empty or fill it."""
    try:
        return os.open(name, FOLDER, dir_fd=parent)
    except PermissionError as refused:
        pinned = os.open(
            name, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=parent
        )
        try:
            info = os.fstat(pinned)
            if info.st_uid != os.geteuid():
                raise refused from None
            # chmod through the descriptor (an O_PATH one: fchmod() refuses it), never the name
            os.chmod(f"/proc/self/fd/{pinned}", stat.S_IMODE(info.st_mode) | 0o700)
        finally:
            os.close(pinned)
        return os.open(name, FOLDER, dir_fd=parent)


def _writable(fd: int) -> None:
    """A folder of the workspace whose owner took its own write right away gets it back: the
    snapshot, as that owner, must be able to change what is in it."""
    info = os.fstat(fd)
    if info.st_mode & 0o700 != 0o700 and info.st_uid == os.geteuid():
        os.fchmod(fd, stat.S_IMODE(info.st_mode) | 0o700)


def _remove(parent: int, name: str) -> None:
    """``name`` gone from ``parent``, whatever it is (a folder with everything in it)."""
    try:
        os.unlink(name, dir_fd=parent)
        return
    except FileNotFoundError:
        return
    except IsADirectoryError:
        pass
    except PermissionError:
        # Linux says EPERM (not EISDIR) for unlink() of a folder in some filesystems.
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode):
            raise
    try:
        fd = _enter(parent, name)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):  # a folder no more
            _remove(parent, name)
            return
        if e.errno == errno.ENOENT:
            return
        raise
    try:
        _writable(fd)
        for entry in _names(fd):
            _remove(fd, entry)
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=parent)
    except FileNotFoundError:
        pass


def _names(fd: int) -> list[str]:
    with os.scandir(fd) as entries:
        return sorted(e.name for e in entries)


def _kind(parent: int, name: str) -> int | None:
    """The type bits of ``name`` itself (a link is a link), None when it is gone."""
    try:
        return stat.S_IFMT(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return None


def _opened(parent: int, name: str) -> tuple[int, os.stat_result] | None:
    """``name`` opened for reading when it is a regular file (None: anything else, or gone)."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=parent)
    except OSError as e:
        if e.errno in MOVED:
            return None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None
    return fd, info


def _stamp(info: os.stat_result) -> Stamp:
    """What says a file is unchanged since it was last read (ctime: not settable by its owner)."""
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


# -- take -----------------------------------------------------------------------------------------


def regular_files(root: int) -> Iterator[tuple[int, str, str]]:
    """(folder descriptor, name, path) of every entry that looks like a regular file, folders
    walked one descriptor at a time, depth first, sorted; a folder that is a link (or gone) by
    the time it is opened is not entered."""
    stack: list[tuple[int, str, Iterator[str]]] = []
    fd, prefix = os.dup(root), ""
    try:
        while True:
            files, folders = _listed(fd)
            stack.append((fd, prefix, iter(folders)))
            for name in files:
                yield fd, name, prefix + name
            fd = -1
            while stack:
                top, top_prefix, rest = stack[-1]
                folder = next(rest, None)
                if folder is None:
                    os.close(top)
                    stack.pop()
                    continue
                try:
                    fd = os.open(folder, FOLDER, dir_fd=top)
                except OSError as e:
                    if e.errno in MOVED:
                        continue
                    raise
                prefix = f"{top_prefix}{folder}/"
                break
            if fd == -1:
                return
    finally:
        for top, _, _ in stack:
            os.close(top)


def _listed(fd: int) -> tuple[list[str], list[str]]:
    files: list[str] = []
    folders: list[str] = []
    try:
        with os.scandir(fd) as entries:
            for e in entries:
                try:
                    if e.is_dir(follow_symlinks=False):
                        folders.append(e.name)
                    elif e.is_file(follow_symlinks=False):
                        files.append(e.name)
                except OSError:
                    continue
    except OSError as e:
        if e.errno not in MOVED:
            raise
    return sorted(files), sorted(folders)


def take(root: int, inp: IO[bytes], out: IO[bytes]) -> None:
    known: dict[str, Stamp] = _request(inp)["known"]
    skipped = 0
    for parent, name, rel in regular_files(root):
        opened = _opened(parent, name)
        if opened is None:
            skipped += 1
            continue
        fd, info = opened
        try:
            stamp = _stamp(info)
            same = known.get(rel) == stamp
            record = FILE_RECORD.pack(stat.S_IMODE(info.st_mode), *stamp, same)
            send(out, FILE, record + path_bytes(rel))
            if same:
                continue
            try:
                while piece := os.read(fd, CHUNK):
                    send(out, DATA, piece)
            except OSError:
                send(out, DROPPED)  # unreadable midway: not in this snapshot
                skipped += 1
                continue
            send(out, END)
        finally:
            os.close(fd)
    send(out, DONE, DONE_RECORD.pack(skipped))
    out.flush()


# -- restore --------------------------------------------------------------------------------------

Tree = dict[str, "Tree | str"]


def _tree(files: dict[str, Any]) -> Tree:
    """The manifest's folders as nested dicts, its files as their paths."""
    tree: Tree = {}
    for rel in sorted(files):
        problem = refusal(rel)
        if problem is not None:
            raise ValueError(f"the manifest path {rel!r} {problem}: refused")
        *folders, name = rel.split("/")
        node = tree
        for part in folders:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(f"the manifest holds {part!r} as a file and as a folder: refused")
            node = child
        if name in node:
            raise ValueError(f"the manifest holds {rel!r} as a file and as a folder: refused")
        node[name] = rel
    return tree


def prune(fd: int, tree: Tree) -> int:
    """Delete from the folder ``fd`` every entry ``tree`` does not hold as what it is; the number
    of entries removed. Links go whatever they point to; folders the manifest needs are entered
    through descriptors."""
    removed = 0
    for name in _names(fd):
        want = tree.get(name)
        kind = _kind(fd, name)
        if kind is None:
            continue
        if isinstance(want, dict) and kind == stat.S_IFDIR:
            try:
                sub = _enter(fd, name)
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                    raise
                _remove(fd, name)
                removed += 1
                continue
            try:
                _writable(sub)
                removed += prune(sub, want)
            finally:
                os.close(sub)
        elif isinstance(want, str) and kind == stat.S_IFREG:
            continue
        else:
            _remove(fd, name)
            removed += 1
    return removed


def _digest(fd: int) -> str:
    import hashlib  # only when a file's stamp is not known: most restores never load it

    h = hashlib.sha256()
    while piece := os.read(fd, CHUNK):
        h.update(piece)
    return h.hexdigest()


def restore(root: int, inp: IO[bytes], out: IO[bytes]) -> None:
    request = _request(inp)
    files: dict[str, tuple[str, int]] = request["files"]  # path → (sha256, mode)
    known: dict[str, tuple[int, int, int, int, str]] = request["known"]  # stamp and sha256
    tree = _tree(files)
    _writable(root)
    removed = prune(root, tree)
    folders = Folders(root)
    stamps: dict[str, Stamp] = {}
    need: list[str] = []
    try:
        for rel in sorted(files):
            digest, mode = files[rel][0], files[rel][1] & 0o777
            *parts, name = rel.split("/")
            parent = folders.open(parts, make=False)
            opened = None if parent is None else _opened(parent, name)
            if opened is None:
                need.append(rel)
                continue
            fd, info = opened
            try:
                stamp = _stamp(info)
                seen = known.get(rel)
                here = seen[4] if seen is not None and seen[:4] == stamp else _digest(fd)
                if here != digest:
                    need.append(rel)
                    continue
                if stat.S_IMODE(info.st_mode) != mode:
                    os.fchmod(fd, mode)
                    stamp = _stamp(os.fstat(fd))
                stamps[rel] = stamp
            finally:
                os.close(fd)
        for rel in need:
            send(out, NEED, path_bytes(rel))
        send(out, DONE, DONE_RECORD.pack(len(need)))
        out.flush()
        for rel in need:
            *parts, name = rel.split("/")
            parent = folders.open(parts, make=True)
            if parent is None:
                raise OSError(errno.ENOTDIR, f"{rel!r}: its folder cannot be made")
            written = _write(parent, name, files[rel][1] & 0o777, inp)
            if written is not None:
                stamps[rel] = written
    finally:
        folders.close()
    for rel, stamp in stamps.items():
        send(out, STAMP, STAMP_RECORD.pack(*stamp) + path_bytes(rel))
    send(out, DONE, DONE_RECORD.pack(removed))
    out.flush()


def _write(parent: int, name: str, mode: int, inp: IO[bytes]) -> Stamp | None:
    """The bytes that come next on ``inp`` as ``name`` in ``parent``: a new file of the helper's
    own (``O_EXCL``: nothing that was there is opened), renamed over the name — a link there is
    replaced, never followed. None when the worker dropped it midway."""
    while True:
        temp = TEMP + os.urandom(8).hex()
        try:
            fd = os.open(temp, NEW, 0o600, dir_fd=parent)
            break
        except FileExistsError:
            continue
    try:
        try:
            length = 0
            while True:
                kind, payload = receive(inp)
                if kind == DATA:
                    length += len(payload)
                    if payload.count(0) == len(payload):
                        # a piece of zeros stays a hole, as it was where the snapshot was
                        # taken: a sparse file of gigabytes is not written out in full here
                        os.lseek(fd, len(payload), os.SEEK_CUR)
                        continue
                    view = memoryview(payload)
                    while view:
                        view = view[os.write(fd, view) :]
                elif kind == END:
                    os.ftruncate(fd, length)  # (a hole at the end makes the file no longer)
                    break
                else:  # DROPPED: the worker found the bytes damaged
                    os.unlink(temp, dir_fd=parent)
                    return None
            os.fchmod(fd, mode)
            stamp = _stamp(os.fstat(fd))
        finally:
            os.close(fd)
        for _ in range(3):
            try:
                os.rename(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
                return stamp
            except (IsADirectoryError, OSError) as e:
                if isinstance(e, IsADirectoryError) or e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    _remove(parent, name)  # a folder appeared where the file goes
                    continue
                raise
        raise OSError(errno.EAGAIN, f"{name!r} kept changing while it was restored")
    except BaseException:
        try:
            os.unlink(temp, dir_fd=parent)
        except OSError:
            pass
        raise


# -- the helper process ---------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    """``<op> <fd>``: take or restore the workspace open as descriptor ``fd``."""
    op, root = argv[0], int(argv[1]) if len(argv) > 1 else -1
    if op == "probe":  # the worker checks that this interpreter runs this code as this user
        return 0
    os.umask(0o022)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:  # one descriptor per folder level
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    try:
        if op == "take":
            take(root, inp, out)
        elif op == "restore":
            restore(root, inp, out)
        else:
            raise ValueError(f"unknown operation {op!r}")
    except (OSError, ValueError, EOFError) as e:
        try:
            send(out, ERROR, f"{type(e).__name__}: {e}".encode("utf-8", "replace"))
            out.flush()
        except OSError:
            pass
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
