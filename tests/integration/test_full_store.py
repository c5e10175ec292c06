"""A full artifact store is a fault with its cause, waited out: on a small tmpfs filled to the
last byte, an attempt says "no space left on the artifact store at …" on the board, waits,
and completes once space is freed 10 s later — no lost worker, no failed attempt, no replan."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import board
from tests.integration.test_recovery import shell_plan
from xsky.config import load_settings
from xsky.runs import RunOptions

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root"),
]

FREED_AFTER = 10.0  # seconds the store stays full


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str = "4m") -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)], check=True
    )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path) -> Path:
    """Write a file until the disk is full; returns it."""
    filler = folder / "filler"
    with open(filler, "wb") as fh:
        chunk = b"\0" * 65536
        with contextlib.suppress(OSError):
            while True:
                fh.write(chunk)
                fh.flush()
    with contextlib.suppress(OSError), open(folder / "crumbs", "wb") as fh:
        while True:  # the last few bytes too
            fh.write(b"\0")
            fh.flush()
    return filler


async def test_a_full_store_is_said_waited_out_and_the_attempt_completes(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    with small_tmpfs(tmp_path / "store") as store:
        monkeypatch.setenv("XSKY_ARTIFACTS", str(store))
        env.settings = load_settings()
        await env.start_worker()
        filler = await asyncio.to_thread(fill, store)
        filled = time.monotonic()
        handle = await env.start(
            shell_plan("echo done", {"heartbeatTimeout": 4}), options=RunOptions(max_auto_replans=0)
        )

        async def says_no_space() -> str:
            note = (await board(handle))["1"].last_progress or ""
            assert f"no space left on the artifact store at {store}" in note, note
            return note

        note = await eventually(says_no_space, 60)
        assert "waiting" in note, note
        await asyncio.sleep(max(0.0, FREED_AFTER - (time.monotonic() - filled)))
        filler.unlink()
        (store / "crumbs").unlink()
        result = await asyncio.wait_for(run_outcome(handle), 90)
        assert result.status == "completed", result.summary
        (agent,) = result.agents
        assert agent.result == "done" and agent.attempts == 1
        row = (await board(handle))["1"]
        assert row.tries == 1, f"the full store cost attempts: {row.retries}"
        await env.stop_workers()
