"""The live run page (`starter.py ui`) in headless Chromium, on one run of a diamond plan:
the graph is drawn and changes colour as agents finish, without a reload; a pause from the
page pauses the run; a refused answer shows the validator's reason; the page goes on after
the Temporal dev server restarts, and after its own server restarts it is sent what it
missed. Screenshots land in test-artifacts/live-page/ (ignored by git)."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import uvicorn
from playwright.async_api import expect
from temporalio.client import Client

from cli.devserver import DevServer, free_port
from cli.hints import cli_message
from cli.ui.guard import page_key
from cli.ui.server import make_app
from client import XSky
from client.connect import DATA_CONVERTER
from tests.conftest import ROOT, Env
from tests.integration.eventually import eventually
from tests.integration.helpers import ask, noop, plan
from tests.integration.static_page import chromium
from xsky.agent_log import UNLOGGED_SAID
from xsky.config import load_settings
from xsky.errors import RefusedError

pytestmark = [pytest.mark.integration, pytest.mark.browser]

SHOTS = ROOT / "test-artifacts" / "live-page"


@pytest.fixture
def temporal(tmp_path: Path) -> Iterator[DevServer]:
    """A dev server of the test's own: the test restarts it."""
    srv = DevServer(
        db_path=tmp_path / "temporal.db",
        port=free_port(),
        headless=True,
        log_path=tmp_path / "server.log",
    )
    srv.start(timeout=90)
    yield srv
    srv.stop(kill=True)  # its database is thrown away: no graceful stop (~3 s)


@pytest_asyncio.fixture
async def live_env(
    temporal: DevServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Env]:
    home = tmp_path / "xsky"
    monkeypatch.setenv("XSKY_HOME", str(home))
    monkeypatch.setenv("XSKY_TASK_QUEUE", f"t{uuid.uuid4().hex[:8]}")
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal.address)
    for var in ("XSKY_ARTIFACTS", "XSKY_RUNS"):
        monkeypatch.delenv(var, raising=False)
    client = await Client.connect(temporal.address, data_converter=DATA_CONVERTER)
    e = Env(client=client, settings=load_settings(), address=temporal.address, home=home)
    await e.start_worker()
    yield e
    await e.stop_workers()


class PageServer:
    """The page's server, in this process, stopped and started again on the same port."""

    def __init__(self, settings: Any, port: int):
        self.settings, self.port = settings, port
        self.server: uvicorn.Server | None = None
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.key = page_key(self.settings.home)  # the same after a restart: tabs keep it
        app = make_app(
            lambda: XSky.connect(self.settings),
            self.settings.home / "ui-events",
            key=self.key,
            port=self.port,
        )
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            timeout_graceful_shutdown=0.5,
        )
        self.server = uvicorn.Server(config)
        self.task = asyncio.create_task(self.server.serve())
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "the page's server did not start"
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        assert self.server is not None and self.task is not None
        self.server.should_exit = True
        await self.task


@pytest_asyncio.fixture
async def browser_page() -> AsyncIterator[Any]:
    async with chromium() as browser:
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(20_000)
        expect.set_options(timeout=20_000)
        yield await context.new_page()


def node(page: Any, task: str) -> Any:
    return page.locator(f'#dag .node[data-task="{task}"]')


async def paused(x: XSky, run_id: str) -> None:
    assert (await (await x.get(run_id)).board()).state == "paused"


@pytest.mark.timeout(180)
async def test_the_live_page_follows_and_steers_a_run_through_restarts(
    live_env: Env, temporal: DevServer, browser_page: Any
):
    page = browser_page
    SHOTS.mkdir(parents=True, exist_ok=True)
    diamond = plan(
        noop("1", 1.0),
        noop("2", 2.0, depends="1"),
        # T-3 runs long enough for the page's pause to land before T-4 may start: with 2 s, on
        # a loaded machine the answer and budget steps before the pause took longer and T-4
        # was dispatched before the run was paused (a fresh clone's suite, four helpers busy).
        noop("3", 6.0, depends="1"),
        noop("4", 1.0, depends="2,3"),
        # a shell agent keeps a transcript (a no-op keeps none: the page says so)
        '<agent name="shell" id="5" depends="4"><task>step 5</task>'
        '<config>{"tool": "shell", "command": "sleep 1.5; echo r5"}</config></agent>',
        name="live",
    )
    handle = await live_env.start(diamond)
    x = await XSky.connect(live_env.settings)
    run = await x.get(handle.id)
    ui = PageServer(live_env.settings, free_port())
    await ui.start()
    try:
        # The link `starter.py ui` prints: its key becomes the page's cookie, and leaves the URL.
        await page.goto(f"http://127.0.0.1:{ui.port}/?key={ui.key}&run={handle.id}")
        assert page.url == f"http://127.0.0.1:{ui.port}/?run={handle.id}"
        await page.evaluate("window.sameDocument = true")  # gone if the page ever reloads

        # The plan as a graph: five agents, edges from each dependency.
        await expect(page.locator("#dag .node")).to_have_count(5)
        await expect(page.locator("#dag .edge")).to_have_count(5)
        await expect(page.locator('#dag .edge[data-from="T-1"][data-to="T-2"]')).to_have_count(1)
        await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
        await page.screenshot(path=str(SHOTS / "1-graph.png"))

        # It changes as agents finish, streamed.
        await expect(node(page, "T-1")).to_have_attribute("data-status", "completed")
        await expect(page.locator('#events li[data-type="agent.completed"]')).to_have_count(1)

        # An answer to a request that does not exist: the validator's reason, as the CLI says it.
        await page.fill("#answer-request", "Q-9")
        await page.fill("#answer-text", "yes")
        await page.click("#answer")
        with pytest.raises(RefusedError) as refused:
            await run.answer("Q-9", "yes")
        await expect(page.locator("#notice.error")).to_have_text(cli_message(refused.value))

        # A budget set from the toolbar, as `starter.py budget ID LIMITS` sets it.
        await page.fill("#budget-limits", "tokens=500000")
        await page.click("#set-budget")
        await expect(page.locator("#notice.ok")).to_contain_text("500,000")

        # A pause from the page pauses the run (the run says so), and the page shows it.
        await page.click("#pause")
        await expect(page.locator("#notice.ok")).to_contain_text("pause")
        await eventually(lambda: paused(x, handle.id), 20)
        await expect(page.locator("#banner")).to_have_attribute("data-state", "paused")
        # What can be asked follows the run: a paused run is resumed, not paused again.
        await expect(page.locator("#pause")).to_be_disabled()
        await expect(page.locator("#pause")).to_have_attribute(
            "title", re.compile("paused already")
        )
        await expect(page.locator("#resume")).to_be_enabled()
        # Running agents finish; nothing new starts while paused.
        await expect(node(page, "T-2")).to_have_attribute("data-status", "completed")
        await expect(node(page, "T-3")).to_have_attribute("data-status", "completed")
        await expect(node(page, "T-4")).to_have_attribute("data-status", "pending")
        await page.screenshot(path=str(SHOTS / "2-paused.png"))

        # The Temporal dev server restarts: the page's server watches on.
        temporal.stop()
        temporal.start(timeout=90)
        await (await x.get(handle.id)).resume()
        await expect(node(page, "T-4")).to_have_attribute(
            "data-status", "completed", timeout=60_000
        )
        await expect(page.locator("#banner")).not_to_have_attribute("data-state", "paused")

        # The page's own server restarts while the run finishes: the page reconnects and is
        # sent what it missed, in order, with nothing told twice.
        await ui.stop()
        await expect(page.locator("#conn")).to_have_attribute("data-state", "reconnecting")
        result = await asyncio.wait_for(run.result(), 60)
        assert result.status == "completed"
        seen = await page.locator("#events li").count()
        await ui.start()
        await expect(node(page, "T-5")).to_have_attribute("data-status", "completed")
        await expect(page.locator("#banner")).to_have_attribute("data-state", "completed")
        await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
        # and the list of runs says so beside it, not the "running" it read when it loaded
        row = page.locator(f'#runs li[data-run="{handle.id}"] .st')
        await expect(row).to_have_text(re.compile(r"^completed\b"))
        ids = [
            int(v)
            for v in await page.locator("#events li").evaluate_all("l => l.map(e => e.value)")
        ]
        assert ids == list(range(1, len(ids) + 1)) and len(ids) > seen
        completed = await page.locator(
            '#events li[data-type="agent.completed"]'
        ).all_text_contents()
        assert sorted(t.split()[2] for t in completed) == ["T-1", "T-2", "T-3", "T-4", "T-5"]
        assert await page.evaluate("window.sameDocument") is True
        await page.screenshot(path=str(SHOTS / "3-after-restarts.png"))
        # An ended run takes no steering (each button says why); a fork goes on from it.
        for button in ("#pause", "#resume", "#cancel-run", "#replan", "#answer", "#set-budget"):
            await expect(page.locator(button)).to_be_disabled()
        await expect(page.locator("#cancel-run")).to_have_attribute("title", re.compile("ended"))

        # The transcript of an agent, live from the store.
        await node(page, "T-5").click()
        await expect(page.locator("#transcript")).to_contain_text("attempt 1 of T-5")
        await expect(page.locator("#transcript")).to_contain_text("→ shell")
        for act in ("skip", "nudge"):
            await expect(page.locator(f'#agent-actions button[data-act="{act}"]')).to_be_disabled()
        for act in ("retry", "fork"):  # a follow-up run, a fork: both go on from an ended run
            await expect(page.locator(f'#agent-actions button[data-act="{act}"]')).to_be_enabled()
        await node(page, "T-1").click()
        await expect(page.locator("#transcript")).to_have_text(
            f"T-1: {UNLOGGED_SAID}\n", use_inner_text=True
        )
    finally:
        if ui.server is not None and not ui.task.done():  # type: ignore[union-attr]
            await ui.stop()


@pytest.mark.timeout(120)
async def test_the_banner_says_how_far_a_running_run_is(live_env: Env, browser_page: Any):
    """walk11: a 200-agent run's banner said only "RUNNING · plan v1" until it ended."""
    page = browser_page
    handle = await live_env.start(
        plan(noop("1", 0.5), noop("2", 0.5), noop("3", 60.0, depends="1"), name="tally")
    )
    ui = PageServer(live_env.settings, free_port())
    await ui.start()
    try:
        await page.goto(f"http://127.0.0.1:{ui.port}/?key={ui.key}&run={handle.id}")
        await expect(node(page, "T-3")).to_have_attribute("data-status", "in_progress")
        await expect(page.locator("#banner")).to_have_text("RUNNING · plan v1 · 2 of 3 done")
        await handle.terminate("test over")
    finally:
        await ui.stop()


@pytest.mark.timeout(60)
async def test_the_list_without_a_run_open_does_not_say_not_connected(
    live_env: Env, browser_page: Any
):
    """walk11: `starter.py ui`'s first page showed "not connected" in its corner, though nothing
    was wrong: no run was open yet."""
    page = browser_page
    ui = PageServer(live_env.settings, free_port())
    await ui.start()
    try:
        await page.goto(f"http://127.0.0.1:{ui.port}/?key={ui.key}")
        await expect(page.locator("#conn")).to_have_attribute("data-state", "idle")
        await expect(page.locator("#conn")).to_have_text("pick a run")
    finally:
        await ui.stop()


@pytest.mark.timeout(120)
async def test_the_one_request_waiting_is_filled_in_and_an_ended_run_takes_no_limits(
    live_env: Env, browser_page: Any
):
    """walk11: with one request waiting its id still had to be typed into the answer box; and
    on an ended run the budget's box stayed editable beside a greyed "Set budget"."""
    page = browser_page
    handle = await live_env.start(
        plan(ask("1", "Which region?"), ask("2", "Which size?"), noop("3", 0, depends="1,2"))
    )
    x = await XSky.connect(live_env.settings)
    run = await x.get(handle.id)
    ui = PageServer(live_env.settings, free_port())
    await ui.start()
    try:
        await page.goto(f"http://127.0.0.1:{ui.port}/?key={ui.key}&run={handle.id}")
        # two wait: which one is meant is the person's to say
        await expect(page.locator("#requests li[data-request]")).to_have_count(2)
        await expect(page.locator("#answer-request")).to_have_value("")
        first, second = sorted(r.id for r in await run.requests())
        await run.answer(first, "eu-west-1")  # (from elsewhere: the CLI)
        # one waits: its id is in the box, and an answer from the page goes to it
        await expect(page.locator("#requests li[data-request]")).to_have_count(1)
        await expect(page.locator("#answer-request")).to_have_value(second)
        await page.fill("#answer-text", "large")
        await page.click("#answer")
        await expect(page.locator("#notice.ok")).to_be_visible()
        await expect(page.locator("#banner")).to_have_attribute("data-state", "completed")
        await expect(page.locator("#answer-request")).to_have_value("")
        # an ended run: the boxes that feed the steering are greyed with its buttons, saying why
        for box in ("#budget-limits", "#replan-text", "#answer-request", "#answer-text"):
            await expect(page.locator(box)).to_be_disabled()
        await expect(page.locator("#budget-limits")).to_have_attribute(
            "title", re.compile("has ended")
        )
        assert (await asyncio.wait_for(run.result(), 30)).status == "completed"
    finally:
        await ui.stop()
