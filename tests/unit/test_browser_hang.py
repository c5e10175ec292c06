"""A browser that stops answering is replaced, not waited on: opening a page has no timeout of
its own in Playwright, and a watch's poll once stood "opening" its page for a minute."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from activities import browser as browser_module
from activities.browser import BrowserPool, BrowserUnavailable
from tests.integration.eventually import eventually

pytestmark = pytest.mark.browser

PAGE = "data:text/html,<title>t</title><p>answered</p>"


def chromium_processes() -> list[int]:
    """This process's Chromium browsers (the main process of each: its helpers have a --type)."""
    tree = browser_module._descendants(os.getpid(), browser_module._is_driver)
    return [pid for pid in tree if "chromium" in _argv(pid) and "--type=" not in _argv(pid)]


def _argv(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"  # dead, its parent not yet told


async def read(pool: BrowserPool) -> str:
    async with pool.page() as page:
        await page.goto(PAGE)
        text: str = await page.inner_text("p")
        return text


async def test_a_stopped_browser_is_killed_and_a_new_one_opens_the_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(browser_module, "OPEN_TIMEOUT", 3.0)
    monkeypatch.setattr(browser_module, "CLOSE_TIMEOUT", 2.0)
    pool = BrowserPool()
    others = set(chromium_processes())  # another test's browser, if one lives on in this process
    try:
        assert await read(pool) == "answered"
        (stopped,) = set(chromium_processes()) - others
        os.kill(stopped, signal.SIGSTOP)  # answers nothing, and is not gone: as a hung browser
        try:
            assert await asyncio.wait_for(read(pool), 60) == "answered"

            def killed() -> None:
                assert gone(stopped), _argv(stopped)

            await eventually(killed, 10)
            assert stopped not in chromium_processes()
        finally:
            if not gone(stopped):
                os.kill(stopped, signal.SIGKILL)
    finally:
        await pool.close()


async def test_a_browser_that_never_opens_a_page_is_a_clear_error_after_one_restart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(browser_module, "OPEN_TIMEOUT", 1.0)
    launched: list[Any] = []
    pool = BrowserPool()
    ensure = pool._ensure

    async def counted(sandbox: Any) -> Any:
        browser = await ensure(sandbox)
        if not launched or launched[-1] is not browser:
            launched.append(browser)
        return browser

    async def never(*_: Any) -> Any:
        await asyncio.Event().wait()

    monkeypatch.setattr(pool, "_ensure", counted)
    monkeypatch.setattr(pool, "_new_page", never)
    try:
        with pytest.raises(BrowserUnavailable, match="opened no page within 1s, twice") as info:
            async with pool.page():
                pass
        assert info.value.retryable  # the agent's attempt is tried again, not failed for good
        assert len(launched) == 2  # replaced once, not again and again
        assert not launched[0].is_connected()
    finally:
        await pool.close()


async def test_one_agents_stuck_open_does_not_replace_a_browser_that_opens_others_pages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(browser_module, "OPEN_TIMEOUT", 3.0)
    pool = BrowserPool()
    new_page = pool._new_page
    calls: list[int] = []

    async def first_hangs(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            await asyncio.Event().wait()  # this open alone is stuck
        return await new_page(*args)

    monkeypatch.setattr(pool, "_new_page", first_hangs)
    try:
        stuck = asyncio.create_task(read(pool))
        await asyncio.sleep(0.5)
        async with pool.page() as other:  # another agent's page, while the first waits
            await other.goto(PAGE)
            browser = pool._browser
            assert await asyncio.wait_for(stuck, 30) == "answered"  # tried again, same browser
            assert pool._browser is browser and browser.is_connected()
            assert await other.inner_text("p") == "answered"  # the other's page lives on
        assert len(calls) == 3
    finally:
        await pool.close()
