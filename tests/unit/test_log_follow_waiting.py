"""`log RUN T-3 --follow` of a task that waits on a person says so once, with the command that
answers it (walk7: it followed silently, with no hint of Q-1 or of `answer`)."""

from __future__ import annotations

import argparse
import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from cli import log_cmd


class FollowedRun:
    """A run whose task waits on Q-1 for two looks, then completes."""

    def __init__(self) -> None:
        self.looks = 0

    async def transcript_key(self, task: str) -> str:
        return "k"

    async def transcript_bytes(self, key: str) -> bytes:
        return b""

    async def temporal_status(self) -> str:
        return "running"

    async def task(self, task: str) -> Any:
        self.looks += 1
        if self.looks <= 3:
            return SimpleNamespace(status="blocked", waiting_on="Q-1")
        return SimpleNamespace(status="completed", waiting_on=None)


def test_a_followed_task_waiting_on_a_person_names_the_request_and_its_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = FollowedRun()

    async def connect(settings: Any) -> Any:
        async def get(run_id: str) -> Any:
            return run

        return SimpleNamespace(get=get)

    async def no_wait(seconds: float) -> None:
        return None

    monkeypatch.setattr(log_cmd.XSky, "connect", connect)
    monkeypatch.setattr(log_cmd.asyncio, "sleep", no_wait)
    args = argparse.Namespace(id="r1", task="T-3", follow=True, json=False)
    assert asyncio.run(log_cmd.cmd_log(args)) == 0
    said = capsys.readouterr().out
    assert said.count("T-3 waits for a person (Q-1)") == 1  # once, not every half second
    assert 'starter.py answer r1 Q-1 "…"' in said


def test_the_hint_names_the_command_of_each_kind_of_request() -> None:
    assert "approve r A-2" in log_cmd.waiting_hint("r", "T-1", "A-2")
    assert "starter.py requests r" in log_cmd.waiting_hint("r", "T-1", "E-1")
