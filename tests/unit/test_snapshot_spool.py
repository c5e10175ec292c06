"""A workspace snapshot takes a large file without holding it in the worker's memory
(activities/storage/tree_helper.py): a file over SPOOL_BYTES comes through a temporary copy,
mapped read-only — an agent that writes a file as large as its disk quota once cost the
worker twice that in memory, and every agent of that worker with it (a security review)."""

from __future__ import annotations

import hashlib
import mmap
from pathlib import Path

from activities.storage import tree_helper


def _anon_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError("no RssAnon in /proc/self/status")


def test_a_large_file_is_taken_through_a_map_and_a_small_one_as_bytes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    big = b"0123456789abcdef" * (5 * 1024 * 1024)  # 80 MiB, written once
    (ws / "big.bin").write_bytes(big)
    (ws / "small.txt").write_bytes(b"hello")
    want = hashlib.sha256(big).hexdigest()
    del big
    seen: dict[str, tuple[type, str, int]] = {}
    start = _anon_kib()
    grew = 0

    def each(taken: tree_helper.Taken) -> None:
        nonlocal grew
        assert taken.data is not None
        digest = hashlib.sha256(taken.data).hexdigest()  # what the snapshot does with it
        grew = max(grew, _anon_kib() - start)
        seen[taken.path] = (type(taken.data), digest, len(taken.data))

    tree_helper.take(ws, None, {}, each)
    assert seen["small.txt"] == (bytes, hashlib.sha256(b"hello").hexdigest(), 5)
    assert seen["big.bin"] == (mmap.mmap, want, 80 * 1024 * 1024)
    assert grew < 16 * 1024, f"the worker's own memory grew by {grew} KiB for an 80 MiB file"
