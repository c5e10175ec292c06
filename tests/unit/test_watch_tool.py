"""The watch tool's file look, without Temporal: what an agent may leave where a watch looks."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path

import pytest

from activities.artifacts import ArtifactStore
from activities.browser import BrowserPool
from activities.tools import ToolContext, ToolError
from activities.tools.watch import READ_CHARS, _fingerprint, watch
from xsky.plan.watches import TEXT_CHARS


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    ws = tmp_path / "ws"
    ws.mkdir()
    notes: list[str] = []
    c = ToolContext(
        "run-1",
        "a1",
        ws,
        ArtifactStore(tmp_path / "artifacts"),
        BrowserPool(),
        lambda note: None,
        progress=notes.append,
    )
    c.notes = notes  # type: ignore[attr-defined]
    return c


@pytest.mark.timeout(30)
async def test_a_fifo_where_a_file_watch_looks_is_refused_at_once_not_waited_on(ctx):
    # A read of a FIFO nobody writes to would wait for ever — on the worker's event loop.
    os.mkfifo(ctx.workspace / "status.txt")
    with pytest.raises(ToolError, match="not a regular file"):
        await asyncio.wait_for(watch(ctx, {"event": "file", "path": "status.txt"}), 5)


async def test_a_large_file_fires_with_its_tail_and_the_fingerprint_of_its_whole_text(ctx):
    log = ctx.workspace / "build.log"
    # Past one read's worth, with Windows line ends: the fingerprint is of the text as Python
    # reads it whole (a watch that began before the reader changed must see no change).
    body = "".join(f"line {i}\r\n" for i in range(READ_CHARS // 6))
    log.write_bytes(body.encode())
    before = _fingerprint(log.read_text(encoding="utf-8", errors="replace"))
    unchanged = await watch(
        ctx, {"event": "file", "path": "build.log", "since": before, "every": 0.2, "wait": 0.5}
    )
    assert json.loads(unchanged.text)["fired"] is False
    with log.open("ab") as fh:
        fh.write(b"done\r\n")
    fired = json.loads(
        (
            await watch(
                ctx,
                {"event": "file", "path": "build.log", "since": before, "every": 0.2, "wait": 5},
            )
        ).text
    )
    assert fired["fired"] is True
    assert fired["hash"] == _fingerprint(log.read_text(encoding="utf-8", errors="replace"))
    assert fired["text"] == log.read_text()[-TEXT_CHARS:] and fired["text"].endswith("done\n")


async def test_the_first_look_says_so_rather_than_no_change_for_0s(ctx):
    (ctx.workspace / "a.txt").write_text("x")
    await watch(ctx, {"event": "file", "path": "a.txt", "every": 0.6, "wait": 1.5})
    notes = ctx.notes
    assert notes and "first look taken" in notes[0] and "looking every 0.6s" in notes[0]
    assert not any("no change for 0s" in n for n in notes), notes
    assert any(re.search(r"no change for \d\.\ds", n) for n in notes[1:]), notes


async def test_a_file_watch_reads_nothing_out_of_the_workspace_even_through_a_swapped_folder(
    ctx, tmp_path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("CANARY-HOST-FILE")
    (ctx.workspace / "d").symlink_to(outside)
    with pytest.raises(ToolError, match="outside the run's workspace"):
        await watch(ctx, {"event": "file", "path": "d/f.txt", "wait": 0.5})
    # The check passed while d was a folder; a command beside it swapped d for a link before
    # the read: the read goes a folder at a time with no link followed, and fails.
    from activities.tools.watch import _read_file

    with pytest.raises(ToolError, match="symbolic link"):
        _read_file(ctx.workspace, ctx.workspace.resolve() / "d" / "f.txt", "d/f.txt")


@pytest.mark.timeout(30)
async def test_a_first_poll_retried_after_its_worker_was_lost_measures_from_its_first_look(ctx):
    """A chaos run: the first poll took its first look, its worker was killed, the file changed
    meanwhile, and the retry took the changed file as its own first look: the watch never
    fired. The first look is kept (one write) where the retry reads it."""
    ctx.file_prefix = "v1-d1-"  # (one dispatch of the poll: its attempts share the first look)
    trigger = ctx.workspace / "trigger.txt"
    trigger.write_text("before")
    quiet = json.loads(
        (await watch(ctx, {"event": "file", "path": "trigger.txt", "every": 0.2, "wait": 0.3})).text
    )
    assert quiet["fired"] is False  # (the lost attempt's first look: "before")
    trigger.write_text("changed while the worker was down")
    retried = json.loads(
        (await watch(ctx, {"event": "file", "path": "trigger.txt", "every": 0.2, "wait": 2})).text
    )
    assert retried["fired"] is True and retried["text"].startswith("changed while")
    # another dispatch of the poll has a first look of its own
    ctx.file_prefix = "v1-d2-"
    fresh = json.loads(
        (await watch(ctx, {"event": "file", "path": "trigger.txt", "every": 0.2, "wait": 0.3})).text
    )
    assert fresh["fired"] is False
