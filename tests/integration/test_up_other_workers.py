"""`starter.py up` notes a worker it did not start on its queue: with a local store each
worker keeps what it runs, and runs would be split between two homes."""

from __future__ import annotations

import asyncio

import pytest

from cli.server_cmd import _other_workers
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
