"""Steering a run whose worker has stopped: told at once, never a silent wait."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from client import XSky
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import board_shows, plan
from tests.integration.test_cli_runs import starter
from xsky.errors import NoWorkerError

pytestmark = pytest.mark.integration

WORKER_WAIT = 2  # seconds (XSKY_WORKER_WAIT)

SLOW = (
    '<agent name="shell" id="1"><task>wait</task>'
    '<config>{"tool": "shell", "command": "sleep 120"}</config></agent>'
)


async def test_a_change_to_a_run_no_worker_serves_is_answered_with_why_not_a_silent_wait(
    env: Env, monkeypatch: pytest.MonkeyPatch
):
    """With the worker down, `answer`, `pause`, `budget` … printed nothing for 13 minutes, and
    whatever was typed applied when a worker came back, unannounced."""
    # The waits this test would otherwise sit out, shortened (what is said does not depend on
    # them): for a worker before a change is refused (10 s by default), and for a query's
    # answer (5 s: half the sticky wait, here 1 s), asked three times below.
    monkeypatch.setenv("XSKY_WORKER_WAIT", str(WORKER_WAIT))
    monkeypatch.setenv("XSKY_STICKY_TIMEOUT", "2")
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(plan(SLOW, name="steer-down"), id=f"steer-down-{uuid.uuid4().hex[:6]}")
        await eventually(lambda: board_shows(run.handle, {"1": "in_progress"}), 30)
        await env.stop_workers()
        t0 = time.monotonic()
        with pytest.raises(NoWorkerError) as e:
            await asyncio.wait_for(run.pause(reason="down"), 60)
        said = str(e.value)
        # within the wait for a worker (one reconnecting would be waited for), nothing sent
        assert time.monotonic() - t0 < WORKER_WAIT + 5, said
        assert "no worker serves" in said and "nothing was sent" in said, said
        # and a read names the same reason, not busy workers
        with pytest.raises(NoWorkerError) as e2:
            await run.board()
        assert "no worker serves" in str(e2.value), str(e2.value)
        # and `starter.py status` shows what the server knows, as docs/cli.md says, instead of
        # one error line and exit 2 (it did so only for a stopped or busy worker)
        code, out, err = await starter(env, "status", run.id)
        said = " ".join(out.split())
        assert code == 0, out + err
        assert "the board is not available now" in said and "no worker serves" in said, said
        assert "XskyStatus:" in said and "starter.py up" in said, said
        code, out, err = await starter(env, "status", run.id, "--json")
        assert code == 0 and '"boardUnavailable"' in out, out + err
        # nothing was sent: a worker back, the run goes on unpaused
        await env.start_worker()

        async def going() -> None:
            status = await run.status()
            assert status.state == "running", status.state

        await eventually(going, 30)
        await run.handle.terminate("test over")
