"""Following a run waits out the server's passing trouble: "Workflow is busy." (gRPC
RESOURCE_EXHAUSTED: the server could not take the run's lock in time, or a rate limit) is
said once and following goes on — `starter.py run` gave up on a run that went on and ended."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from temporalio.service import RPCError, RPCStatusCode

import client.run as run_module
from client.run import Run
from client.values import ConnectionLost
from xsky.config import load_settings
from xsky.errors import ConnectError
from xsky.leader.state import BoardPage

ENDED = SimpleNamespace(
    workflow_execution_info=SimpleNamespace(status=2),  # completed
    execution_config=SimpleNamespace(task_queue=SimpleNamespace(name="q")),
)


async def followed(monkeypatch: pytest.MonkeyPatch, status: RPCStatusCode) -> list[Any]:
    calls = {"describe": 0}

    async def describe_once(client: Any, run_id: str) -> Any:
        calls["describe"] += 1
        if calls["describe"] == 1:
            raise RPCError("Workflow is busy.", status, b"")
        return ENDED

    async def board_once(client: Any, run_id: str, page: Any, timeout: Any) -> BoardPage:
        return BoardPage(total=0, offset=0, state="completed")

    monkeypatch.setattr(run_module, "describe_once", describe_once)
    monkeypatch.setattr(run_module, "board_once", board_once)
    monkeypatch.setattr(run_module.asyncio, "sleep", _no_wait)
    run = Run(None, load_settings(), SimpleNamespace(id="xsky-busy"))  # type: ignore[arg-type]
    return [item async for item in run.follow()]


async def _no_wait(seconds: float) -> None:
    return None


async def test_a_busy_workflow_is_waited_out_and_following_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = await followed(monkeypatch, RPCStatusCode.RESOURCE_EXHAUSTED)
    assert isinstance(seen[0], ConnectionLost) and "busy" in seen[0].error
    assert isinstance(seen[-1], BoardPage) and seen[-1].state == "completed"


async def test_a_refusal_still_ends_following(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConnectError, match="lost xsky-busy"):
        await followed(monkeypatch, RPCStatusCode.PERMISSION_DENIED)
