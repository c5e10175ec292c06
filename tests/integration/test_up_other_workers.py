"""`starter.py up` notes a worker it did not start on its queue: with a local store each
worker keeps what it runs, and runs would be split between two homes."""

from __future__ import annotations

import asyncio
import os
import socket

import pytest

from cli.server_cmd import _gone_here, _other_workers
from tests.conftest import Env

pytestmark = pytest.mark.integration


async def test_up_sees_a_worker_another_home_started_on_its_queue(env: Env):
    assert await asyncio.to_thread(_other_workers, env.settings) == []
    await env.start_worker()  # started by this test, not by this home's `up`

    async def seen() -> list[str]:
        while not (found := await asyncio.to_thread(_other_workers, env.settings)):
            await asyncio.sleep(0.2)
        return found

    found = await asyncio.wait_for(seen(), 30)
    assert all("@" in identity for identity in found), found  # pid@host, as the server lists
    # asked from inside an event loop too, as `demo` asks it (asyncio.run would refuse there)
    assert _other_workers(env.settings) == found


def test_a_process_of_this_machine_that_has_ended_is_no_other_worker():
    here = socket.gethostname()
    assert _gone_here(f"{2**22 + 12345}@{here}")  # above Linux's largest pid: ended
    assert not _gone_here(f"{os.getpid()}@{here}")  # alive
    assert not _gone_here("1@another-host") and not _gone_here("worker-7")
