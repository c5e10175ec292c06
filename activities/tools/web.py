"""browser_navigate in direct mode: open a URL; return its title, text and links; screenshot it.

Its page is the agent's own and goes on as a model's browser agent's does: it continues the
cookies and storage of the page the agent it depends on left, and leaves its own for the next.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from activities.browser import BrowserUnavailable
from activities.sandbox import egress
from activities.tools import (
    ToolContext,
    ToolError,
    ToolResult,
    cap_text,
    optional_number,
    require_str,
)
from activities.tools.browsing import (
    BrowserSession,
    Refusals,
    judge,
    not_opened,
    page_links,
    page_text,
    steadily,
)
from activities.tools.store_writes import store_write

MAX_TEXT = 200_000
MAX_LINKS = 200


async def browser_navigate(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return await navigate(ctx, args)


async def navigate(ctx: ToolContext, args: dict[str, Any], carry: bool = True) -> ToolResult:
    """Open ``args["url"]``; with ``carry``, on the agent's own page (continued, and left)."""
    url = require_str(
        args,
        "url",
        "browser_navigate",
        '{"tool": "browser_navigate", "url": "https://example.com"}',
    )
    if not url.startswith(("http://", "https://")):
        raise ToolError(f"browser_navigate needs an http(s) URL, not {url!r}")
    timeout = optional_number(args, "timeout", 30, 1, 600, "browser_navigate")
    fmt = args.get("format", "text")
    if fmt not in ("text", "json"):
        raise ToolError('browser_navigate: format must be "text" or "json"')
    want_screenshot = bool(args.get("screenshot", True))
    selector = args.get("selector")

    ctx.heartbeat(f"opening {url}")
    # The page of the agent it depends on goes on (its cookies and storage: a login), at this
    # address; and this one's is left for the agent after it, as a model's browser agent does.
    # A watch's look (carry False) opens a fresh page each time and keeps none.
    session = BrowserSession(ctx) if carry else None
    refusals = session.refusals if session is not None else Refusals(ctx)
    try:
        async with contextlib.AsyncExitStack() as stack:
            if session is not None:
                stack.push_async_callback(session.close)
                page = await session.page(where_left=False)
            else:
                page = await stack.enter_async_context(ctx.browsers.page_for(refusals.context(ctx)))
            try:
                response = await page.goto(url, timeout=timeout * 1000, wait_until="load")
            except Exception as e:  # noqa: BLE001 - Playwright raises its own error types
                first = str(e).splitlines()[0] if str(e) else type(e).__name__
                if "crash" in first.lower():
                    limit = ctx.browsers.limit_reached()
                    raise ToolError(
                        f"the page {url} crashed while loading"
                        + (
                            f": {limit}"
                            if limit
                            else " (it ran out of memory, or Chromium stopped it)"
                        ),
                        details={"limit": limit} if limit else {},
                    ) from None
                raise await not_opened(url, e, refusals, 0) from None
            # Refused, missing, an error page or empty: not a page to read (nor to screenshot).
            status = await steadily(page, f"read {url}", lambda: judge(page, response, url))

            async def read() -> tuple[str, str, list[dict[str, str]]]:
                # (a script may have sent it on since it loaded: the document it is at, loaded)
                await page.wait_for_load_state("load", timeout=timeout * 1000)
                return await page.title(), await page_text(page, selector), await page_links(page)

            title, text, links = await steadily(page, f"read {url}", read)
            artifacts = []
            if want_screenshot:
                ctx.heartbeat("taking a screenshot")
                png = await steadily(
                    page, "take a screenshot", lambda: page.screenshot(full_page=False)
                )
                artifacts.append(
                    await store_write(
                        ctx,
                        "the screenshot",
                        lambda: ctx.store.put_bytes(
                            ctx.run_id,
                            ctx.agent_id,
                            f"{ctx.file_prefix}screenshot.png",
                            png,
                            "image/png",
                            f"screenshot of {url}",
                        ),
                    )
                )
            final_url = page.url
            if session is not None:
                # left before the outcome is kept, and waited for: the agent after it goes on
                # from it (given up after a while at its close, it started logged out)
                await session.keep()
    except (BrowserUnavailable, egress.EgressUnavailable) as e:
        raise ToolError(str(e), retryable=getattr(e, "retryable", False)) from None

    text, _ = cap_text(text, MAX_TEXT, "page text")
    links = links[:MAX_LINKS]
    details = {"url": final_url, "status": status, "title": title, "links": len(links)}
    if fmt == "json":
        body = json.dumps(
            {"url": final_url, "title": title, "text": text, "links": links},
            ensure_ascii=False,
            indent=2,
        )
    else:
        link_lines = "\n".join(
            f"- {link['text'] or '(no text)'} → {link['href']}" for link in links
        )
        body = f"# {title}\nURL: {final_url}\n\n{text}\n\n## Links\n{link_lines or '(none)'}"
    return ToolResult(body, details, artifacts)
