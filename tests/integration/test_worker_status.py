"""What a person is told when a run's worker does not answer: a worker that stopped answering
is not "no worker" (start one), and once it answers again the board is there."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import pytest

from client import XSky
from client.workers import workers_on
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import board_shows, noop, plan
from tests.integration.test_cli_runs import starter
from tests.integration.test_durability import start_worker_process, stop_worker_process
from xsky.errors import WorkerStoppedError

pytestmark = pytest.mark.integration


async def test_a_stopped_worker_is_said_to_have_stopped_answering_not_to_be_missing(
    env: Env, tmp_path: Path
):
    worker = start_worker_process(env, tmp_path / "worker.log", "--no-skills")
    try:
        handle = await env.start(plan(noop("1", 120)))
        await eventually(lambda: board_shows(handle, {"1": ("dispatched", "in_progress")}), 60)

        async def listed() -> None:  # the server has the worker's first heartbeat
            assert await workers_on(env.client, "default", env.settings.task_queue)

        await eventually(listed, 30)
        async with XSky.connect(env.settings) as x:
            run = await x.get(handle.id)

            async def searchable() -> None:  # its search attributes are set (a loaded machine)
                assert (await run.server_view()).search.get("XskyStatus") == "running"

            await eventually(searchable, 30)
            worker.send_signal(signal.SIGSTOP)
            asked = time.monotonic()
            try:
                with pytest.raises(WorkerStoppedError) as told:
                    await run.board()
                said = str(told.value)
                assert "stopped answering" in said and "start one" not in said, said
                assert time.monotonic() - asked < 40, "the answer took too long"
                # starter.py status answers all the same: what the server knows of the run
                code, out, err = await starter(env, "status", handle.id)
                said = " ".join(out.split())
                assert code == 0, out + err
                assert "the board is not available now" in said and "stopped answering" in said
                assert "XskyStatus: running" in said and "agents in flight: T-1" in said, said
            finally:
                worker.send_signal(signal.SIGCONT)
            page = await asyncio.wait_for(run.board(), 60)  # it answers again
            assert page.tasks[0].agent_id == "1"
    finally:
        worker.send_signal(signal.SIGCONT)
        stop_worker_process(worker)
