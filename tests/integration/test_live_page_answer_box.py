"""The live page's answer box (cli/ui/static/app.js ``fillRequest``), driven in Chromium with the
page's own script and no run behind it: requests come and go as their events would bring them.

review19: an approval's id the page filled (the only one waiting), an answer being written
beside it; that request answered elsewhere (or expired) and another coming next — the box took
the new one's id, so Approve (or Answer) sent what was written for the first to the second."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Route, async_playwright

from activities.browser import CHROMIUM_ARGS, chromium_executable
from tests.conftest import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.browser]

STATIC = ROOT / "cli" / "ui" / "static"


@pytest_asyncio.fixture
async def live_page() -> AsyncIterator[Any]:
    async with async_playwright() as pw:
        default = pw.chromium.executable_path
        executable = chromium_executable(default) or (default if Path(default).exists() else None)
        if executable is None:
            pytest.skip("no Chromium: run scripts/install_browser.py or set XSKY_CHROMIUM")
        args = CHROMIUM_ARGS + (["--no-sandbox"] if os.geteuid() == 0 else [])
        browser = await pw.chromium.launch(executable_path=executable, args=args, headless=True)
        try:
            page = await browser.new_page()
            html = (STATIC / "index.html").read_text()

            async def served(route: Route) -> None:
                url = route.request.url
                if "/api/" in url:  # (the page lists the runs as it opens: none)
                    await route.fulfill(body="[]", content_type="application/json")
                elif "/static/" in url:
                    await route.fulfill(path=STATIC / url.rsplit("/", 1)[-1])
                else:
                    await route.fulfill(body=html, content_type="text/html")

            await page.route("**/*", served)
            await page.goto("http://page.test/")
            await page.wait_for_function("typeof fillRequest === 'function'")
            yield page
        finally:
            await browser.close()


async def raised(page: Any, request_id: str, task: str) -> None:
    await page.evaluate(
        "([id, task]) => { page.requests.set(id, {id, kind: 'approval', taskId: task, "
        "text: 'a tool call'}); drawRequests(); }",
        [request_id, task],
    )


async def answered(page: Any, request_id: str) -> None:
    await page.evaluate("(id) => { page.requests.delete(id); drawRequests(); }", request_id)


async def value(page: Any, box: str) -> str:
    return await page.eval_on_selector(box, "e => e.value")


async def test_an_answer_being_written_never_gets_another_requests_id(live_page: Any) -> None:
    page = live_page
    await raised(page, "A-1", "T-1")
    assert await value(page, "#answer-request") == "A-1"  # the only one: filled in
    await page.evaluate("() => { document.getElementById('answer-text').value = 'only tmp/'; }")
    await answered(page, "A-1")  # answered elsewhere (the CLI, the leader), or expired
    await raised(page, "A-2", "T-2")
    # what was written for A-1 is not sent to A-2: the person says which request it is for
    assert await value(page, "#answer-request") == ""
    assert await value(page, "#answer-text") == "only tmp/"


async def test_the_only_request_fills_the_box_when_nothing_is_written(live_page: Any) -> None:
    page = live_page
    await raised(page, "A-1", "T-1")
    await raised(page, "Q-2", "T-2")
    assert await value(page, "#answer-request") == ""  # two wait: the person's to say
    await answered(page, "A-1")
    assert await value(page, "#answer-request") == "Q-2"
    await answered(page, "Q-2")
    await raised(page, "Q-3", "T-3")
    assert await value(page, "#answer-request") == "Q-3"
