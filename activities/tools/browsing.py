"""Browser tools for the agent loop: one page per agent attempt, kept across its tool calls.

The page belongs to this agent alone (its own browser context), so parallel browser
agents never share cookies, tabs or navigation state.
"""

from __future__ import annotations

import contextlib
from typing import Any

from activities.browser import BrowserUnavailable
from activities.sandbox import egress
from activities.tools import ToolContext, ToolError, cap_text, require_str

MAX_TEXT = 20_000
MAX_LINKS = 60
TIMEOUT_MS = 20_000


async def page_text(page: Any, selector: str | None = None) -> str:
    """The visible text of the page, or of the first element matching ``selector``."""
    if selector:
        el = await page.query_selector(selector)
        if el is None:
            raise ToolError(f"no element matches {selector!r} on {page.url}")
        return (await el.inner_text()).strip()
    return (await page.inner_text("body")).strip() if await page.query_selector("body") else ""


async def page_links(page: Any) -> list[dict[str, str]]:
    links = await page.eval_on_selector_all(
        "a[href]",
        "els => els.slice(0, 500).map(a => ({text: (a.innerText || a.title || '').trim(), href: a.href}))",
    )
    return [{"text": " ".join(link["text"].split())[:120], "href": link["href"]} for link in links]


class BrowserSession:
    def __init__(self, ctx: ToolContext):
        self.ctx = ctx
        self._stack = contextlib.AsyncExitStack()
        self._page: Any = None
        self.shots = 0

    async def page(self) -> Any:
        if self._page is None:
            try:
                self._page = await self._stack.enter_async_context(
                    self.ctx.browsers.page_for(self.ctx)
                )
            except (BrowserUnavailable, egress.EgressUnavailable) as e:
                raise ToolError(str(e)) from None
        return self._page

    async def close(self) -> None:
        await self._stack.aclose()
        self._page = None

    async def _where(self) -> str:
        page = await self.page()
        return f"now at {page.url} — {await page.title()!r}"

    async def navigate(self, args: dict[str, Any]) -> str:
        url = require_str(args, "url", "browser_navigate", '{"url": "https://example.com"}')
        if not url.startswith(("http://", "https://")):
            raise ToolError(f"browser_navigate needs an http(s) URL, not {url!r}")
        page = await self.page()
        self.ctx.progress(f"opening {url}")
        try:
            await page.goto(url, timeout=TIMEOUT_MS, wait_until="load")
        except Exception as e:  # noqa: BLE001 - Playwright raises its own error types
            raise ToolError(f"could not open {url}: {str(e).splitlines()[0]}") from None
        text, _ = cap_text(await page_text(page), MAX_TEXT, "page text")
        link_lines = "\n".join(
            f"- {link['text'] or '(no text)'} → {link['href']}"
            for link in (await page_links(page))[:MAX_LINKS]
        )
        return f"# {await page.title()}\nURL: {page.url}\n\n{text}\n\n## Links\n{link_lines or '(none)'}"

    async def click(self, args: dict[str, Any]) -> str:
        selector = require_str(args, "selector", "browser_click", '{"selector": "text=Next"}')
        page = await self.page()
        try:
            await page.click(selector, timeout=TIMEOUT_MS)
            await page.wait_for_load_state("load", timeout=TIMEOUT_MS)
        except Exception as e:  # noqa: BLE001
            raise ToolError(f"could not click {selector!r}: {str(e).splitlines()[0]}") from None
        return f"clicked {selector!r}; {await self._where()}"

    async def type(self, args: dict[str, Any]) -> str:
        selector = require_str(
            args, "selector", "browser_type", '{"selector": "#q", "text": "hello"}'
        )
        text = args.get("text")
        if not isinstance(text, str):
            raise ToolError("browser_type needs a 'text' string")
        page = await self.page()
        try:
            await page.fill(selector, text, timeout=TIMEOUT_MS)
            if args.get("submit"):
                await page.press(selector, "Enter", timeout=TIMEOUT_MS)
                await page.wait_for_load_state("load", timeout=TIMEOUT_MS)
        except Exception as e:  # noqa: BLE001
            raise ToolError(f"could not type into {selector!r}: {str(e).splitlines()[0]}") from None
        return f"typed {len(text)} characters into {selector!r}" + (
            f"; submitted; {await self._where()}" if args.get("submit") else ""
        )

    async def extract(self, args: dict[str, Any]) -> str:
        return cap_text(await page_text(await self.page(), args.get("selector")), MAX_TEXT, "text")[
            0
        ]

    async def screenshot(self, args: dict[str, Any]) -> str:
        page = await self.page()
        self.shots += 1
        png = await page.screenshot(full_page=bool(args.get("full_page")))
        ref = self.ctx.store.put_bytes(
            self.ctx.run_id,
            self.ctx.agent_id,
            f"{self.ctx.file_prefix}shot-{self.shots}.png",
            png,
            "image/png",
            f"screenshot of {page.url}",
        )
        self.ctx.artifacts.append(ref)
        return f"saved a screenshot of {page.url} as {ref.uri} ({ref.size:,} bytes)"
