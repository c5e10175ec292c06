"""file_write on a workspace disk below the reserve waits for room and says so, as a command
does (activities/sandbox/disk.py ``room``): it failed "No space left on device", not retried,
and the run failed — and the file it replaced had been emptied first (chaos13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.artifacts import ArtifactStore
from activities.browser import BrowserPool
from activities.sandbox import disk
from activities.tools import ToolContext, ToolError
from activities.tools import files as files_tool
from activities.tools.files import file_write

MiB = 1024 * 1024


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    ws = tmp_path / "ws"
    ws.mkdir()
    said: list[str] = []
    c = ToolContext(
        "run-1", "a1", ws, ArtifactStore(tmp_path / "artifacts"), BrowserPool(), said.append
    )
    c.progress = said.append
    c.said = said  # type: ignore[attr-defined]
    return c


def disk_with(monkeypatch: pytest.MonkeyPatch, frees: list[int]) -> None:
    """The workspace's disk has ``frees[i]`` bytes free at the i-th look (the last one after)."""
    looks = iter(frees)
    last = [frees[-1]]

    def free_bytes(path: Path) -> tuple[int, int, int]:
        last[0] = next(looks, last[0])
        return 1, 0, last[0]

    monkeypatch.setattr(disk, "free_bytes", free_bytes)
    monkeypatch.setattr(disk, "ROOM_FIRST_PAUSE", 0.01)
    monkeypatch.setattr(disk, "BEAT_EVERY", 0.01)


async def test_a_write_on_a_disk_below_the_reserve_waits_for_room_and_says_so(ctx, monkeypatch):
    disk_with(monkeypatch, [10 * MiB, 10 * MiB, 10 * 1024 * MiB])
    out = await file_write(ctx, {"path": "a.txt", "content": "hello"})
    assert out.text == "wrote 5 bytes to a.txt"
    assert (ctx.workspace / "a.txt").read_text() == "hello"
    waits = [s for s in ctx.said if s.startswith("waiting")]
    assert (
        waits
        and "before writing a.txt: the disk holding the workspace has 10 MiB free" in (waits[0])
    ), ctx.said


async def test_a_disk_still_full_at_the_deadline_refuses_and_the_old_file_is_kept(ctx, monkeypatch):
    (ctx.workspace / "a.txt").write_text("the old content")
    disk_with(monkeypatch, [0])
    monkeypatch.setattr(files_tool, "ROOM_WAIT", 0.05)
    monkeypatch.setattr(files_tool, "ROOM_MARGIN", 0.0)
    with pytest.raises(
        ToolError, match="file_write a.txt: refused: the disk holding the workspace"
    ):
        await file_write(ctx, {"path": "a.txt", "content": "new"})
    assert (ctx.workspace / "a.txt").read_text() == "the old content"


async def test_with_the_sandbox_off_a_write_needs_only_its_own_room(ctx, monkeypatch):
    # (review17: no command keeps the reserve with the sandbox off — shell.py starts them on
    # any disk — yet a 5-byte write on a disk with 64 MiB free waited out the attempt, refused)
    disk_with(monkeypatch, [64 * MiB])
    monkeypatch.setattr(files_tool, "ROOM_WAIT", 0.05)
    monkeypatch.setattr(files_tool, "ROOM_MARGIN", 0.0)
    ctx.unconfined = True
    out = await file_write(ctx, {"path": "a.txt", "content": "hello"})
    assert out.text == "wrote 5 bytes to a.txt" and not ctx.said
    disk_with(monkeypatch, [0])  # a disk with no room for it still waits, then refuses
    with pytest.raises(ToolError, match="refused: the disk holding the workspace"):
        await file_write(ctx, {"path": "a.txt", "content": "new"})
    assert (ctx.workspace / "a.txt").read_text() == "hello"
