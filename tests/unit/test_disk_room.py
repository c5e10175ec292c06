"""activities/sandbox/disk.py ``room``: a command (or a file write) waiting for a disk below its
reserve goes on as soon as the disk has room again, not at the end of its pause."""

from __future__ import annotations

import time
from pathlib import Path

from activities.sandbox import disk


async def test_room_that_comes_back_mid_pause_is_used_at_once(monkeypatch):
    start = time.monotonic()
    # full for 0.3 s, then room: the pause (doubling up to 15 s) was waited out whole (chaos14:
    # a disk freed 15.5 s into the wait was used at 30.1 s)
    monkeypatch.setattr(
        disk,
        "free_bytes",
        lambda path: (1, 0, 10**12 if time.monotonic() - start >= 0.3 else 0),
    )
    monkeypatch.setattr(disk, "ROOM_FIRST_PAUSE", 5.0)
    monkeypatch.setattr(disk, "LOOK_EVERY", 0.05, raising=False)
    said: list[str] = []
    full = await disk.room(Path("/"), 1, time.monotonic() + 60, said.append, lambda note: None)
    took = time.monotonic() - start
    assert full is None
    assert took < 2.0, took
    assert len(said) == 1 and said[0].startswith("waiting 5s before starting the command"), said


async def test_a_disk_still_full_is_waited_for_until_the_deadline(monkeypatch):
    monkeypatch.setattr(disk, "free_bytes", lambda path: (1, 0, 0))
    monkeypatch.setattr(disk, "ROOM_FIRST_PAUSE", 0.2)
    monkeypatch.setattr(disk, "LOOK_EVERY", 0.05, raising=False)
    start = time.monotonic()
    full = await disk.room(Path("/"), 1, start + 1.0, lambda note: None, lambda note: None)
    took = time.monotonic() - start
    assert full is not None and "free" in full
    # to the deadline (it gave up a whole next pause early: up to 15 s before it)
    assert 0.95 <= took < 1.5, took
