"""`status` and `list` start quickly (issue 37, item 7: under 0.5 s): neither imports the
plan's or the leader's models to parse its arguments and connect, and `status` of an id the
server does not know answers without the run's code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import get_args

from cli.status_cmd import TASK_STATUSES
from xsky.leader.tasks import TaskStatus

ROOT = Path(__file__).resolve().parents[2]

# What costs a command a tenth of a second or more to import, and `list` or `status` of an
# unknown id does not use.
HEAVY = ("xsky.leader.state", "xsky.plan.models", "xsky.runs", "client.run", "cli.runs_cmd")


def _modules_after(code: str) -> set[str]:
    said = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(said.split())


def test_the_status_choices_are_the_boards_statuses() -> None:
    assert TASK_STATUSES == get_args(TaskStatus)


def test_list_and_status_parse_and_connect_without_the_models() -> None:
    loaded = _modules_after(
        "from cli.main import _parse\n"
        "a = _parse(['list', '--failed']); b = _parse(['status', 'xsky-x', '--status', 'failed'])\n"
        "assert a.command == 'list' and b.only == 'failed'\n"
        "import client.connect, client.handle, cli.render, cli.list_cmd, cli.status_cmd"
    )
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_status_of_an_unknown_id_is_answered_without_the_runs_code() -> None:
    code = """
import asyncio
from temporalio.service import RPCError, RPCStatusCode
from client.handle import XSky
from xsky.config import load_settings
from xsky.errors import RunNotFoundError

class Handle:
    id = "xsky-nosuch"
    async def describe(self):
        raise RPCError("workflow not found", RPCStatusCode.NOT_FOUND, b"")

class Listing:
    def __aiter__(self):
        return self
    async def __anext__(self):
        raise StopAsyncIteration

class Client:
    def get_workflow_handle(self, run_id, **kw):
        return Handle()
    def list_workflows(self, *a, **kw):
        return Listing()

async def main():
    try:
        await XSky(Client(), load_settings()).get("xsky-nosuch")
    except RunNotFoundError as e:
        assert "no run with id xsky-nosuch" in str(e), e
    else:
        raise AssertionError("found")

asyncio.run(main())
"""
    loaded = _modules_after(code)
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))
