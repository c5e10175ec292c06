"""Chromium for browser agents: one browser process per worker, a fresh context per agent.

Each agent gets its own browser context and page (its own cookies, storage and tab), so
parallel browser agents never share a page — unlike Eko, where they share one.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from xsky.config import load_settings

# Without these, Chromium's background calls are refused by closed networks, one by one.
CHROMIUM_ARGS = [
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-dev-shm-usage",
    # WebRTC's UDP does not go through the egress proxy: a page could reach any address
    # with it. Only proxied traffic is left (and the pages' WebRTC objects are removed).
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
]
# Run before any page script: no peer connections, so no UDP past the proxy.
NO_WEBRTC = """
for (const name of ["RTCPeerConnection", "webkitRTCPeerConnection", "RTCDataChannel", "RTCIceCandidate"]) {
  try { Object.defineProperty(window, name, {value: undefined, writable: false, configurable: false}); } catch (e) {}
}
"""
SYSTEM_CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def chromium_executable(playwright_default: str | None) -> str | None:
    """XSKY_CHROMIUM, else Playwright's own Chromium if installed, else a system Chromium."""
    explicit = load_settings().chromium
    if explicit:
        return explicit
    if playwright_default and Path(playwright_default).exists():
        return None  # let Playwright use its own
    for path in SYSTEM_CHROMIUM:
        if os.access(path, os.X_OK):
            return path
    return None


def _guard(blocked: Callable[[str], bool]) -> Callable[[Any], Any]:
    """A route handler enforcing the deny list, redirects included.

    Playwright does not route the hops of a redirect, so navigations are fetched without
    following redirects: a hop to a denied host is aborted, any other response is passed on
    (the browser then requests the next hop, which comes through here again).
    """

    async def route(r: Any) -> None:
        request = r.request
        if blocked(request.url):
            await r.abort("blockedbyclient")
            return
        if not request.is_navigation_request():
            await r.continue_()
            return
        try:
            response = await r.fetch(max_redirects=0)
        except Exception:  # noqa: BLE001 - let the browser report the network error itself
            await r.continue_()
            return
        location = response.headers.get("location")
        if 300 <= response.status < 400 and location and blocked(urljoin(request.url, location)):
            await r.abort("blockedbyclient")
            return
        await r.fulfill(response=response)

    return route


class BrowserUnavailable(RuntimeError):
    pass


class BrowserPool:
    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._pw: Any = None
        self._browser: Any = None

    async def _ensure(self) -> Any:
        async with self._lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            from playwright.async_api import async_playwright

            if self._pw is None:
                self._pw = await async_playwright().start()
            default = None
            try:
                default = self._pw.chromium.executable_path
            except Exception:  # noqa: BLE001 - older Playwright versions may raise here
                default = None
            executable = chromium_executable(default)
            if executable is None and not (default and Path(default).exists()):
                raise BrowserUnavailable(
                    "no Chromium found: install Debian's 'chromium' package, run `python -m playwright install chromium`, "
                    "or set XSKY_CHROMIUM to a Chromium executable"
                )
            args = list(CHROMIUM_ARGS)
            if os.geteuid() == 0:
                args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
            self._browser = await self._pw.chromium.launch(
                executable_path=executable, args=args, headless=True
            )
            return self._browser

    @asynccontextmanager
    async def page(
        self, blocked: Callable[[str], bool] | None = None, proxy: str | None = None
    ) -> AsyncIterator[Any]:
        """A new page in a new context, closed afterwards whatever happens.

        ``blocked(url)`` True aborts that request, whatever asked for it (a link, a
        redirect, a script): the domain deny list holds for the whole page. ``proxy`` is the
        egress proxy every request of the page goes through (it checks resolved addresses).
        """
        browser = await self._ensure()
        context = await browser.new_context(
            viewport={"width": 1280, "height": 900},
            proxy={"server": proxy, "bypass": ""} if proxy else None,
        )
        await context.add_init_script(NO_WEBRTC)
        if blocked is not None:
            await context.route("**/*", _guard(blocked))
        try:
            yield await context.new_page()
        finally:
            try:
                await context.close()
            except Exception:  # noqa: BLE001 - the browser may already be gone
                pass

    async def close(self) -> None:
        async with self._lock:
            if self._browser is not None:
                try:
                    await self._browser.close()
                except Exception:  # noqa: BLE001
                    pass
                self._browser = None
            if self._pw is not None:
                await self._pw.stop()
                self._pw = None
