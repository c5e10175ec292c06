"""The live page's answer box (cli/ui/static/app.js ``fillRequest``), driven in Chromium with the
page's own script and no run behind it: requests come and go as their events would bring them.

review19: an approval's id the page filled (the only one waiting), an answer being written
beside it; that request answered elsewhere (or expired) and another coming next — the box took
the new one's id, so Approve (or Answer) sent what was written for the first to the second."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.integration.static_page import static_page

pytestmark = [pytest.mark.integration, pytest.mark.browser]


@pytest_asyncio.fixture
async def live_page() -> AsyncIterator[Any]:
    async with static_page() as page:
        yield page


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
