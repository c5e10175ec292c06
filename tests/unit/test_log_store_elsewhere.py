"""`log RUN T-1` of an agent whose transcript this machine's store does not hold says why it
may be elsewhere and what to set (walk12: a worker started on a second machine without
XSKY_STORE ran the agent, and `log` said only "… is not the workers' store: XSKY_STORE")."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cli import log_cmd


class EndedRun:
    async def transcript_key(self, task: str) -> str:
        return "r1/1/transcript.jsonl"

    async def transcript_bytes(self, key: str) -> bytes:
        return b""

    async def task_ended(self, task: str) -> bool:
        return True


def test_a_transcript_this_store_lacks_says_where_it_may_be_and_what_to_set(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("XSKY_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XSKY_STORE", raising=False)
    monkeypatch.delenv("XSKY_ARTIFACTS", raising=False)

    async def connect(settings: Any) -> Any:
        async def get(run_id: str) -> Any:
            return EndedRun()

        return SimpleNamespace(get=get)

    monkeypatch.setattr(log_cmd.XSky, "connect", connect)
    args = argparse.Namespace(id="r1", task="T-1", follow=False, json=False)
    assert asyncio.run(log_cmd.cmd_log(args)) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "no transcript for T-1 in r1" in said
    assert "is not the store the workers that ran it wrote to" in said
    assert "a worker on another machine, or with another XSKY_HOME, keeps its own" in said
    assert "the same XSKY_STORE=s3://… everywhere" in said
    assert not said.endswith("XSKY_STORE")
