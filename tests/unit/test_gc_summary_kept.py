"""gc's last line counts the runs it kept as well as those it removed (walk12: `gc
--older-than 1` listed a run as 'kept 5 objects', then said only '0 objects of 0 runs
removed')."""

from __future__ import annotations

import argparse
import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from cli import gc_cmd
from client.gc import Collected


def _said(done: list[Collected], monkeypatch: pytest.MonkeyPatch, capsys: Any) -> str:
    async def connect(settings: Any) -> Any:
        return SimpleNamespace(client=None, settings=None)

    async def collect(*_: Any) -> list[Collected]:
        return done

    monkeypatch.setattr(gc_cmd.XSky, "connect", connect)
    monkeypatch.setattr(gc_cmd, "collect", collect)
    monkeypatch.setattr(gc_cmd, "load_settings", lambda: None)
    args = argparse.Namespace(older_than=1.0, run=None, json=False)
    assert asyncio.run(gc_cmd.cmd_gc(args)) == 0
    return capsys.readouterr().out.strip().splitlines()[-1]


def test_the_runs_kept_are_counted_in_the_last_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    done = [
        Collected("r1", 5, "ended 2026-12-08 00:51", False),
        Collected("r2", 3, "ended 2026-12-01 00:51", True),
    ]
    assert _said(done, monkeypatch, capsys) == "3 objects of 1 run removed; 1 run kept"


def test_nothing_kept_is_said_as_before(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    done = [Collected("r2", 1, "ended 2026-12-01 00:51", True)]
    assert _said(done, monkeypatch, capsys) == "1 object of 1 run removed"
