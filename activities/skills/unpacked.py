"""Codex's compressed rollouts made readable: each ``rollout-….jsonl.zst`` is decompressed once
into the skill home, and that copy is scanned as the rollout.

Codex compresses a rollout in place once it has been cold a week (codex-rs/rollout/src/
compression.rs) and reads either form; it writes a plain one again if the session goes on.
A compressed rollout does not change, so its copy is made once (again only if the file is
replaced) and followed like any transcript: its cursors count the copy's bytes. If Codex
writes the plain rollout back, the scan finds it beside no compressed one and the copy gone,
with the same first bytes: a move, and what was read stays read. A copy whose compressed
rollout the scan no longer finds (deleted, or read as its plain file again) is removed
(:func:`sweep`): copies would otherwise fill the skill home with every rollout ever read.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import zstandard

from activities.fsio import atomic_write

FOLDER = "unpacked"  # under the skill home
# A rollout larger than this once decompressed is said and not read (a file that inflates
# without end must not fill the disk).
MAX_BYTES = 1 << 30
CHUNK = 1 << 20


class Copy:
    """A decompressed rollout, in the shape the scan reads a found file in (``os.DirEntry``)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def stat(self, follow_symlinks: bool = False) -> os.stat_result:
        return os.stat(self.path, follow_symlinks=follow_symlinks)


class TooLarge(Exception):
    pass


def unpack(home: Path, packed: list[str]) -> tuple[list[Copy], list[str]]:
    """(the readable copies of the compressed rollouts ``packed``, a problem for each that could
    not be read) — each copy made when missing or older than its compressed file."""
    folder = home / FOLDER
    copies: list[Copy] = []
    problems: list[str] = []
    for path in packed:
        source = Path(path)
        try:
            st = source.stat()
        except OSError:
            continue  # gone since it was listed
        digest = _digest(path)
        copy = folder / _name(path)
        # A rollout that could not be read is not read again until it changes (sec11: a
        # corrupt or too large one was decompressed again at every scan, up to 1 GiB each)
        failed = folder / f".failed-{digest}"
        problem = _failed_before(failed, st.st_mtime_ns)
        try:
            if problem is None and (not copy.exists() or copy.stat().st_mtime_ns != st.st_mtime_ns):
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                _decompress(source, copy, st.st_mtime_ns)
        except TooLarge:
            problem = f"a compressed Codex rollout over {MAX_BYTES >> 30} GiB once decompressed is not read"
            _remember(failed, st.st_mtime_ns, problem)
        except zstandard.ZstdError as e:
            problem = f"the compressed Codex rollout could not be read: {e}"
            _remember(failed, st.st_mtime_ns, problem)
        except OSError as e:  # the machine's (a full disk, EIO): tried again at the next scan
            problem = f"the compressed Codex rollout could not be read: {e}"
        if problem is not None:
            problems.append(f"{path}: {problem}")
            continue
        copies.append(Copy(copy))
    return copies, problems


def _remember(marker: Path, mtime_ns: int, problem: str) -> None:
    """A rollout's content cannot be read (it is no zstd, or inflates past MAX_BYTES): said
    again at each scan without reading it, until the file changes. (Not a failure of the
    machine's — a full disk, a permission — which the next scan tries again: review14.)"""
    with suppress(OSError):
        atomic_write(marker, f"{mtime_ns}\n{problem}".encode(), sync=False)


def _failed_before(marker: Path, mtime_ns: int) -> str | None:
    """What the last try said of a rollout, if it failed and the file has not changed since."""
    try:
        when, _, problem = marker.read_text().partition("\n")
    except (OSError, UnicodeDecodeError):
        return None
    return problem if when == str(mtime_ns) and problem else None


def _decompress(source: Path, copy: Path, mtime_ns: int) -> None:
    """``source`` decompressed into ``copy`` (written whole, then put in place; private: a
    transcript is its person's), dated as ``source`` so a replaced one is seen."""
    with open(source, "rb") as raw:
        reader = zstandard.ZstdDecompressor().stream_reader(raw)

        def chunks() -> Iterator[bytes]:
            total = 0
            while chunk := reader.read(CHUNK):
                total += len(chunk)
                if total > MAX_BYTES:
                    raise TooLarge
                yield chunk

        atomic_write(copy, chunks(), sync=False)
    os.utime(copy, ns=(mtime_ns, mtime_ns))


def sweep(home: Path, packed: list[str]) -> int:
    """Remove the copies (and the failure marks) of compressed rollouts a scan of every Codex
    source no longer finds (``packed``: every compressed rollout it found, read before or not);
    how many. A copy whose rollout is found stays, whatever became of its reading this time
    (review14: a copy made again is a new file, read again whole). A temporary file still
    being written (``.tmp-…``) is left to its writer."""
    keep = {_name(path) for path in packed}
    keep |= {f".failed-{_digest(path)}" for path in packed}
    gone = 0
    with suppress(FileNotFoundError), os.scandir(home / FOLDER) as entries:
        for entry in entries:
            if entry.name not in keep and not entry.name.startswith(".tmp-"):
                with suppress(FileNotFoundError):
                    os.unlink(entry.path)
                    gone += 1
    return gone


def _digest(path: str) -> str:
    return hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _name(path: str) -> str:
    """The copy's name of the compressed rollout at ``path``."""
    return f"{_digest(path)}-{Path(path).name.removesuffix('.zst')}"
