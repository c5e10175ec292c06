"""The live page (cli/ui/static) in headless Chromium with its own script and no server or run
behind it: a test sets what events would have brought and calls the page's functions."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Route, async_playwright

from activities.browser import CHROMIUM_ARGS, chromium_executable
from tests.conftest import ROOT

STATIC = ROOT / "cli" / "ui" / "static"


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """Headless Chromium as the worker finds it (skipped where there is none), closed after."""
    async with async_playwright() as pw:
        default = pw.chromium.executable_path
        executable = chromium_executable(default) or (default if Path(default).exists() else None)
        if executable is None:
            pytest.skip("no Chromium: run scripts/install_browser.py or set XSKY_CHROMIUM")
        args = CHROMIUM_ARGS + (["--no-sandbox"] if os.geteuid() == 0 else [])
        browser = await pw.chromium.launch(executable_path=executable, args=args, headless=True)
        try:
            yield browser
        finally:
            await browser.close()


@contextlib.asynccontextmanager
async def static_page() -> AsyncIterator[Any]:
    async with chromium() as browser:
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
        await page.wait_for_function("typeof drawGraph === 'function'")  # (its script ran)
        yield page
