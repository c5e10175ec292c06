"""The run's watch (client/events.py ``watch``, behind the live page and `starter.py events`)
misses nothing that happens between its first look at the run and its long-poll on the run's
history.

live12: the watch looked at the run (its board, requests, plans, ledger: several queries), then
asked the server how long the history was and passed over every event up to there. A question
raised in between was in neither: the page never listed it, and a run waiting only for that
answer never moved again to be looked at — the live page's browser test, on a loaded machine
(a full suite), waited 20 s for two questions that never came."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import client.events as events_module
from client import XSky
from client.events import EventLog, watch
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import ask, plan

pytestmark = pytest.mark.integration


@pytest.mark.timeout(120)
async def test_a_question_raised_during_the_first_look_is_told(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The leader and no llm worker: the agent that asks cannot start until one comes.
    await env.start_worker(kinds=["shell"], leader=True)
    handle = await env.start(plan(ask("1", "Which region?"), name="gap"))
    x = await XSky.connect(env.settings)
    run = await x.get(handle.id)
    real = events_module.take_picture
    slowed = False

    async def asked() -> None:
        assert await run.requests()

    async def slow_first_look(r: Any, before: Any) -> Any:
        """The first look sees no question; before it returns, the question is raised (as a
        loaded machine lets it be, between the look's queries and what comes after)."""
        nonlocal slowed
        got = await real(r, before)
        if not slowed:
            slowed = True
            assert got[0].requests == [], "the question came before the first look"
            await env.start_worker(kinds=["llm"], leader=False)
            await eventually(asked, 60)
        return got

    monkeypatch.setattr(events_module, "take_picture", slow_first_look)
    log = EventLog(handle.id)
    watching = asyncio.create_task(watch(run, log))
    try:

        def told() -> None:
            if watching.done():  # (the first look's own assertion failed: say so)
                watching.result()
            assert [e.data["id"] for e in log.events if e.type == "request.raised"] == ["Q-1"]

        await eventually(told, 15)
        (request,) = await run.requests()
        await run.answer(request.id, "eu-west-1")
        await asyncio.wait_for(watching, 60)  # the run ends: the watch with it
        assert [e.type for e in log.events][-1] == "run.ended"
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
