"""`status` of a run whose stored objects gc removed: its tasks tried more than once said
"(why is not recorded)" each — two lines a task, a hundred for a loop of 50 that waited for an
approval — while `result` and `log` say gc removed them. Said once, with when and how many."""

from __future__ import annotations

import json
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

import cli.runs_cmd
from activities.storage.local import LocalStore
from cli.main import main
from xsky.artifacts import gc_mark_key
from xsky.leader.state import BoardPage
from xsky.leader.tasks import TaskView

RUN = "xsky-r-1"


def _task(n: int) -> TaskView:
    return TaskView(
        id=f"T-each[{n}]",
        agent_id=f"each[{n}]",
        session_id=RUN,
        subject="s",
        description="d",
        assigned_agent="shell",
        status="completed",
        attempt=2,
        activity_attempt=1,
        tries=2,
    )


class _Run:
    async def temporal_status(self) -> str:
        return "completed"

    async def board(self, offset: int, limit: int, only: str | None) -> BoardPage:
        tasks = [_task(n) for n in range(1, 11)]
        return BoardPage(total=10, offset=0, counts={"completed": 10}, tasks=tasks)

    async def first_run_id(self) -> str | None:
        return None

    async def follow_up_kinds(self) -> list[tuple[str, str]]:
        return []


class _Connection:
    async def __aenter__(self) -> _Connection:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    async def get(self, run_id: str) -> Any:
        return _Run()


def test_status_says_once_that_gc_removed_why_attempts_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XSKY_HOME", str(tmp_path))
    mark = {"removedAt": "2026-12-07T11:24:00", "objects": 257}
    LocalStore(tmp_path / "artifacts").put(gc_mark_key(RUN), json.dumps(mark).encode())
    monkeypatch.setattr(cli.runs_cmd.XSky, "connect", lambda *_: _Connection())
    assert main(["status", RUN]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "(why is not recorded)" not in said, said
    assert (
        "10 task(s) tried more than once (T-each[1], T-each[2], T-each[3], T-each[4], T-each[5], "
        "T-each[6], T-each[7], T-each[8] …): why each attempt ended is not known now — the run's "
        "stored objects were removed by `starter.py gc` on 2026-12-07 11:24 (257 objects)"
    ) in said, said
    assert main(["status", RUN, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["attemptsRemoved"].startswith("removed by `starter.py gc` on 2026-12-07 11:24")
