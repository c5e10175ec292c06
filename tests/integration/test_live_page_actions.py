"""The live page's interventions that need no browser to prove: approve-plan, replan, set
budget and cancel go through the same client calls as the CLI, so what the page is told —
accepted, or refused — is the CLI's sentence. (The page itself, in Chromium:
test_live_page.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from cli.hints import cli_message
from cli.steer_cmd import no_version_given
from cli.ui.guard import cookie_name, page_key
from cli.ui.server import make_app
from client import Run, XSky
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import noop, plan
from xsky.errors import RefusedError, UsageError

pytestmark = pytest.mark.integration


@pytest.fixture
async def page(env: Env) -> AsyncIterator[httpx.AsyncClient]:
    key = page_key(env.settings.home)
    app = make_app(lambda: XSky.connect(env.settings), None, key=key, port=8765)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://127.0.0.1:8765",
        cookies={cookie_name(8765): key},  # as the page's link leaves it (cli/ui/guard.py)
    ) as http:
        yield http


async def act(http: httpx.AsyncClient, run: Run, **body: Any) -> dict[str, Any]:
    said: dict[str, Any] = (await http.post(f"/api/runs/{run.id}/act", json=body)).json()
    return said


async def test_a_plan_under_review_is_approved_replanned_budgeted_and_cancelled_from_the_page(
    env: Env, page: httpx.AsyncClient
):
    await env.start_worker()
    x = await XSky.connect(env.settings)
    run = await x.run(plan(noop("1", 30.0), name="reviewed"), review=True)
    assert await eventually(run.review_version, 20) == 1

    # approve-plan without the version read: the CLI's sentence, which names the one waiting
    said = await act(page, run, action="approve-plan")
    assert said == {"ok": False, "error": cli_message(await no_version_given(run))}
    assert "v1 waits for review" in said["error"]
    # a version that does not wait: the validator's refusal, word for word as the CLI has it
    with pytest.raises(RefusedError) as refused:
        await run.approve_plan(7)
    said = await act(page, run, action="approve-plan", version="7")
    assert said == {"ok": False, "error": cli_message(refused.value)}
    assert (await act(page, run, action="approve-plan", version="seven"))["error"].startswith(
        "plan version 'seven'"
    )

    # replan with an empty prompt: refused as `starter.py replan ID '  '` is
    with pytest.raises(UsageError) as empty:
        await run.replan("  ")
    assert await act(page, run, action="replan", text="  ") == {
        "ok": False,
        "error": cli_message(empty.value),
    }

    # budget: limits as `starter.py budget` takes them, and its refusals
    said = await act(page, run, action="budget", limits="tokens=0")
    assert not said["ok"] and "tokens must be more than 0" in said["error"], said
    said = await act(page, run, action="budget", limits="tokens=200000,usd=2")
    assert said["ok"] and "200,000" in said["message"], said
    assert (await run.board()).budget is not None

    said = await act(page, run, action="approve-plan", version="1", text="looks right")
    assert said["ok"], said
    assert await run.review_version() is None

    # cancel from the toolbar: the whole run
    said = await act(page, run, action="cancel")
    assert said["ok"] and "cancellation of" in said["message"], said
    result = await asyncio.wait_for(run.result(), 30)
    assert result.status == "cancelled"

    # a retry of the ended run's task: a follow-up run does it, and the page is told which
    said = await act(page, run, action="retry", task="T-1")
    assert said["ok"] and said["open"] != run.id and said["open"] in said["message"], said
    follow = await x.get(said["open"])
    await follow.cancel()
