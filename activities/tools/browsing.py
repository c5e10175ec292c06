"""Browser tools for the agent loop: one page per agent attempt, kept across its tool calls.

The page belongs to this agent alone (its own browser context), so parallel browser
agents never share cookies, tabs or navigation state. An agent that depends on one that used a
page continues where that one left it — its cookies and storage, and its address once the agent
does anything but open an address of its own — as Eko's Browser agents share one page ("log
in", then "read the dashboard"): each agent that opened a page leaves it in the store as its
attempt ends (``xsky.artifacts.page_key``, one write), on whatever worker the next one runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from activities.browser import BrowserUnavailable
from activities.sandbox import egress
from activities.tools import ToolContext, ToolError, cap_text, require_str
from activities.tools.store_writes import store_write
from xsky.artifacts import item_pages, page_key
from xsky.outcomes import Verdict, navigation_error_verdict, navigation_verdict
from xsky.plan.loops import MAX_ITEMS

log = logging.getLogger("xsky.browser")

MAX_TEXT = 20_000
MAX_LINKS = 60
TIMEOUT_MS = 20_000
LEAVE_TIMEOUT = 30.0  # seconds the page's state may take to be read and stored as it closes
# The most a page's state may take in the store: a page can fill its origins' storage (5 MiB
# each in Chromium); past this it is not kept, and the agent after it starts on a page of its own.
PAGE_LIMIT = 4 * 1024 * 1024


# How long a selector is waited for: a page's scripts may add the element after it loaded.
APPEAR_MS = 3_000
# How many times a read is made of a page that goes away as it is read (it reloads itself,
# a script sends it elsewhere) before the tool says so.
READ_TRIES = 4

T = TypeVar("T")


# Playwright's words for a document that went away as it was read (Chromium's, as it says them).
_GONE = (
    "Execution context was destroyed",
    "because of a navigation",
    "from a different document",
    "not attached to the DOM",
    "Node is detached",
    "Frame was detached",
    "Cannot find context with specified id",
)


# Playwright's words for a page whose browser (or context) went away under it: replaced when
# taken for hung, or crashed. Every later read of the page fails alike.
_CLOSED = ("Target page, context or browser has been closed", "Target closed", "Browser closed")


def _navigated(e: Exception) -> bool:
    """Is this Playwright's word for a page (or frame) that went away as it was read?"""
    text = str(e)
    return any(words in text for words in _GONE)


async def steadily(page: Any, what: str, read: Callable[[], Awaitable[T]]) -> T:
    """``read()`` of ``page``, made again once the page has loaded when the page went away
    as it was read — the page's own doing (a reload, a script's redirect), not the agent's.
    Any other error of the browser's is the tool's error, in words: never a raw Playwright
    error, which would end the agent's attempt rather than tell its model — but for a page
    whose browser went away: the model could only call again on a dead page (and a direct
    agent failed for good), where the attempt's retry opens one in a live browser."""
    for _ in range(READ_TRIES):
        try:
            return await read()
        except ToolError:
            raise
        except Exception as e:  # (Playwright raises its own error types)
            if any(words in str(e) for words in _CLOSED):
                raise
            if not _navigated(e):
                first = str(e).splitlines()[0] if str(e) else type(e).__name__
                raise ToolError(f"could not {what}: {first}") from None
            with contextlib.suppress(Exception):  # (still going: the next read says so)
                await page.wait_for_load_state("load", timeout=TIMEOUT_MS)
    raise ToolError(
        f"could not {what}: the page kept navigating away as it was read ({READ_TRIES} "
        "tries) — wait, or open the address it settles at with browser_navigate"
    )


async def page_text(page: Any, selector: str | None = None) -> str:
    """The visible text of the page, or of the first element matching ``selector``."""
    if selector:
        el = await page.query_selector(selector)
        if el is None:
            # A page that loads itself again while the element is waited for may never hold
            # it long enough to be seen (a reload every few ms on a loaded machine): counted,
            # so the answer says the page kept moving rather than that it lacks the element.
            moves = 0

            def moved(frame: Any) -> None:
                nonlocal moves
                moves += frame == page.main_frame

            page.on("framenavigated", moved)
            try:
                el = await page.wait_for_selector(selector, state="attached", timeout=APPEAR_MS)
            except Exception as e:  # noqa: BLE001 (absent still: said below)
                moves += _navigated(e)
            finally:
                page.remove_listener("framenavigated", moved)
            if el is None and moves:
                raise ToolError(
                    f"no element matches {selector!r} on {page.url}: the page navigated "
                    f"{moves} time{'s' * (moves != 1)} while it was waited for — wait, or open the "
                    "address it settles at with browser_navigate"
                )
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


# A page is empty when it has no title, no visible text and no element in its body.
_EMPTY = """() => !document.title && !(document.body && (document.body.innerText.trim() || document.body.querySelector('*')))"""


class Refusals:
    """The egress proxy's refusals while a page lives: an https tunnel's refusal never reaches
    the page (Chromium shows only ERR_TUNNEL_CONNECTION_FAILED), the proxy's record does."""

    def __init__(self, ctx: ToolContext):
        self.denied: list[str] = []
        self._next = ctx.record
        self._seen = asyncio.Event()

    def record(self, destination: str, effect: str, reason: str) -> None:
        if effect == "deny":
            self.denied.append(f"{destination}: {reason}")
            self._seen.set()
        if self._next is not None:
            self._next(destination, effect, reason)

    def context(self, ctx: ToolContext) -> ToolContext:
        """``ctx`` whose proxy decisions pass through here (and on to the permission log)."""
        return dataclasses.replace(ctx, record=self.record)

    async def since(self, mark: int, error: str) -> str | None:
        """A refusal recorded after ``mark``; for a failed tunnel, waited for a moment (the
        record travels apart from the browser's answer)."""
        if len(self.denied) <= mark and "ERR_TUNNEL_CONNECTION_FAILED" in error:
            self._seen.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._seen.wait(), 1.0)
        return self.denied[-1] if len(self.denied) > mark else None


def failed(verdict: Verdict, url: str, status: int | None = None) -> ToolError:
    return ToolError(
        verdict.message, retryable=verdict.retryable, details={"url": url, "status": status}
    )


async def judge(page: Any, response: Any, url: str) -> int | None:
    """The loaded page's status; raises ToolError when it is not a page worth reading: refused
    by the egress proxy, HTTP status 400 or more, the browser's error page, an empty document."""
    status = response.status if response is not None else None
    headers = response.headers if response is not None else {}
    # the proxy's mark, on a plain-HTTP answer only (it takes it out of servers' answers; an
    # https answer comes through a tunnel, from the server)
    mark = (
        headers.get("x-xsky-egress")
        if str(getattr(response, "url", "")).startswith("http:")
        else None
    )
    body = ""
    if mark and response is not None:
        with contextlib.suppress(Exception):  # the proxy's explanation, if it can be read
            body = (await response.text())[:4096]
    empty = False
    if status is None or status < 400:
        with contextlib.suppress(Exception):  # a page navigating away as we look is not empty
            empty = bool(await page.evaluate(_EMPTY))
        if empty:  # …nor is the next one, caught before its first byte (a script's redirect
            # at load, on a loaded machine): looked at again once it has loaded
            with contextlib.suppress(Exception):
                await page.wait_for_load_state("load", timeout=TIMEOUT_MS)
                empty = bool(await page.evaluate(_EMPTY))
    verdict = navigation_verdict(
        url, status=status, egress=mark, body=body, final_url=page.url, empty=empty
    )
    if verdict is not None:
        raise failed(verdict, url, status)
    return status


async def not_opened(url: str, e: Exception, refusals: Refusals, mark: int) -> ToolError:
    """The ToolError for a navigation the browser could not complete."""
    first = str(e).splitlines()[0] if str(e) else type(e).__name__
    return failed(navigation_error_verdict(url, first, await refusals.since(mark, first)), url)


def _last_item(ctx: ToolContext, agent: str, left: set[str]) -> str | None:
    """The last item of ``agent``'s loop or watch (``agent[N]``, N highest) that left a page
    (``left``: the keys of the run's pages), when ``agent`` is the agent that gathers them (it
    opens no page itself)."""
    for n in range(MAX_ITEMS, 0, -1):
        if page_key(ctx.run_id, f"{agent}[{n}]") in left:
            return f"{agent}[{n}]"
    return None


def left_page(ctx: ToolContext) -> tuple[str, dict[str, Any]] | None:
    """The page the agents ``ctx`` continues (its dependencies, and itself when it resumes)
    left, the newest of them: (whose, {"url", "storage", "at"}); None: none of them used a
    page. A dependency that gathers a loop's (or a watch's) items stands for the last of its
    items that used a page. A read per agent, made only when the agent opens its first page."""
    found: list[tuple[float, str, dict[str, Any]]] = []
    for agent in ctx.page_from:
        try:
            try:
                left = json.loads(ctx.store.objects.get(page_key(ctx.run_id, agent)))
            except FileNotFoundError:
                if agent == ctx.agent_id:
                    continue
                # (the pages of its items only: a loop's pages grow with its items, and every
                # browser agent after a dependency that left none asks)
                listed = set(ctx.store.objects.keys(item_pages(ctx.run_id, agent)))
                item = _last_item(ctx, agent, listed) if listed else None
                if item is None:
                    continue
                left = json.loads(ctx.store.objects.get(page_key(ctx.run_id, item)))
                agent = item
        except FileNotFoundError:
            continue
        # best effort, whatever the store or the file (an object store's own errors are no
        # OSError): the agent starts on a page of its own
        except Exception as e:  # noqa: BLE001
            log.warning("could not read the page %s left in run %s: %s", agent, ctx.run_id, e)
            continue
        if not isinstance(left, dict) or not isinstance(left.get("storage"), dict):
            continue
        try:  # (a number where it was written by _leave; read here, not trusted)
            at = float(left.get("at") or 0)
        except (TypeError, ValueError):
            log.warning("the page %s left in run %s has no readable time", agent, ctx.run_id)
            continue
        found.append((at, agent, left))
    if not found:
        return None
    found.sort(key=lambda f: f[0])
    _, agent, left = found[-1]
    if len(found) > 1:  # the newest page, with the others' cookies it does not hold
        gone = set().union(*(dropped(f[2]) for f in found))
        left = {**left, "storage": {**left["storage"], "cookies": _cookies(found, gone)}}
        left.pop("given", None)  # (positions in the newest page's own cookies, not these)
        if gone:
            left["dropped"] = [list(t) for t in sorted(gone, key=repr)[-MAX_COOKIES:]]
    return agent, left


Cookie = tuple[Any, Any, Any, Any]  # name, domain, path, value


def _cookie(cookie: dict[str, Any]) -> Cookie:
    return (cookie.get("name"), cookie.get("domain"), cookie.get("path"), cookie.get("value"))


def cookies_of(storage: dict[str, Any] | None) -> set[Cookie]:
    cookies = (storage or {}).get("cookies")
    return {
        _cookie(c) for c in (cookies if isinstance(cookies, list) else []) if isinstance(c, dict)
    }


def dropped(left: dict[str, Any]) -> set[Cookie]:
    """The cookies a page's agents had and let go (a logout), as ``_leave`` wrote them."""
    listed = left.get("dropped")
    return {
        (t[0], t[1], t[2], t[3])
        for t in (listed if isinstance(listed, list) else [])
        if isinstance(t, list) and len(t) == 4 and all(isinstance(x, str | None) for x in t)
    }


def _cookies(found: list[tuple[float, str, dict[str, Any]]], gone: set[Cookie]) -> list[Any]:
    """The cookies of pages left by agents ending at once (``found``, oldest first): each
    cookie as the newest page that holds it has it (a login one agent made is not lost because
    another, a plain look elsewhere, ended after it), at most MAX_COOKIES — but not one an
    agent let go (``gone``: a logout in a page continued from the login's) that the newest
    page does not hold itself: another page holding it from before is no new login, nor is the
    newest page holding it only because it was given it (a branch parallel to the logout's,
    continued from the same login)."""
    kept: dict[tuple[Any, Any, Any], Any] = {}
    for _, _, left in found:
        cookies = left["storage"].get("cookies")
        for cookie in cookies if isinstance(cookies, list) else []:
            if isinstance(cookie, dict):
                key = (cookie.get("name"), cookie.get("domain"), cookie.get("path"))
                # (moved to the end: past MAX_COOKIES the older pages' are cut, not the newest's)
                kept.pop(key, None)
                kept[key] = cookie
    newest = cookies_of(found[-1][2]["storage"]) - given(found[-1][2])
    return [c for c in kept.values() if _cookie(c) in newest or _cookie(c) not in gone][
        -MAX_COOKIES:
    ]


def given(left: dict[str, Any]) -> set[Cookie]:
    """The cookies a page holds only because it was given them, as ``_leave`` wrote them."""
    cookies, listed = left["storage"].get("cookies"), left.get("given")
    if not isinstance(cookies, list) or not isinstance(listed, list):
        return set()
    return {
        _cookie(cookies[i])
        for i in listed
        if type(i) is int and 0 <= i < len(cookies) and isinstance(cookies[i], dict)
    }


# Kept of a page for the agent after it: the cookies (at most this many) and the storage of the
# origin it was at. Not Playwright's whole storage_state: it visits every origin the context
# touched, ~50 ms each, and a page that touched hundreds (iframes of many subdomains) took
# minutes to read and to restore — restoring runs in the browser's open, whose 30 s bound then
# took the shared browser for hung and replaced it, under every other agent's page.
MAX_COOKIES = 300
_ORIGIN_STORAGE = """() => { const localStorage_ = [];
  for (let i = 0; i < localStorage.length && i < 1000; i++) {
    const name = localStorage.key(i); localStorage_.push({name, value: localStorage.getItem(name)}); }
  return {origin: location.origin, localStorage: localStorage_}; }"""


def _said(e: BaseException) -> str:
    """An error for the log: a wait that ran out says so (its own text is empty)."""
    if isinstance(e, TimeoutError):
        return f"no answer within {LEAVE_TIMEOUT:g}s"
    return str(e) or type(e).__name__


class BrowserSession:
    def __init__(self, ctx: ToolContext):
        self.ctx = ctx
        self._stack = contextlib.AsyncExitStack()
        self._page: Any = None
        self.shots = 0
        self.refusals = Refusals(ctx)
        self._left_at: str | None = None  # the address the page it continues was left at
        self._kept = False  # left in the store since its last use (keep): not left again
        # the cookies it was given, and those let go before it: what it lets go is said as it
        # leaves the page, so a merge after it does not bring a logout's cookie back (_cookies)
        self._given: set[Cookie] = set()

    async def page(self, where_left: bool = True) -> Any:
        """The agent's page, opened on first use: continuing the one a dependency left, and
        at its address unless ``where_left`` is False (the agent opens an address itself)."""
        self._kept = False  # (used again: what was kept may be behind it)
        if self._page is None:
            left = await asyncio.to_thread(left_page, self.ctx) if self.ctx.page_from else None
            state = left[1]["storage"] if left else None
            try:
                try:
                    self._page = await self._open(state)
                except (BrowserUnavailable, egress.EgressUnavailable):
                    raise
                except Exception as e:  # Playwright's own: a state Chromium does not take
                    if state is None:
                        raise
                    log.warning("could not continue the page %s left: %s", left and left[0], e)
                    left, self._page = None, await self._open(None)
            except (BrowserUnavailable, egress.EgressUnavailable) as e:
                raise ToolError(str(e), retryable=getattr(e, "retryable", False)) from None
            if left is not None:
                self._given = cookies_of(state) | dropped(left[1])
                url = left[1].get("url")
                self._left_at = url if isinstance(url, str) and url.startswith("http") else None
                # (its address is not said: a token in a query string would be on the board)
                self.ctx.progress(f"continuing the page {left[0]} left")
        if not where_left:
            self._left_at = None  # it opens an address of its own: the one left is not gone to
        elif self._left_at is not None:
            url, self._left_at = self._left_at, None
            with contextlib.suppress(Exception):  # gone or refused now: the page says so
                await self._page.goto(url, timeout=TIMEOUT_MS, wait_until="load")
        return self._page

    async def _open(self, state: dict[str, Any] | None) -> Any:
        return await self._stack.enter_async_context(
            self.ctx.browsers.page_for(self.refusals.context(self.ctx), state)
        )

    async def keep(self) -> None:
        """The page left now, as it is, and waited for: the agent's final answer is about to be
        saved (or a direct navigate's outcome kept), and a worker lost after that is not asked
        again — its retry completes with the saved answer and never opens the page
        (activities/agents/loop.py ``_answered``) — so the page must be in the store before
        the answer, or the agent after it starts logged out. A store that is slow, paused or
        failing is waited for as the answer's own save is (activities/agents/storage.py:
        heartbeating, said on the board, until the attempt's deadline, then a StorageError
        that is retried): given up after LEAVE_TIMEOUT, the answer was saved without it."""
        if self._page is None or self._kept:
            return
        left = await self._state()
        if left is None:
            return
        key = page_key(self.ctx.run_id, self.ctx.agent_id)
        await store_write(
            self.ctx,
            "the page it leaves the agents after it",
            lambda: self.ctx.store.objects.put(key, left),
        )
        self._kept = True

    async def close(self) -> None:
        try:
            if self._page is not None and not self._kept:
                await self._leave()
        finally:
            await self._stack.aclose()
            self._page = None

    async def _state(self) -> bytes | None:
        """The page's cookies, its origin's storage and its address, for an agent that
        continues it; None when they cannot be read or are too large to keep."""
        page = self._page
        try:
            cookies = await asyncio.wait_for(page.context.cookies(), LEAVE_TIMEOUT)
        except Exception as e:  # noqa: BLE001 - Playwright's errors, a browser that went away
            log.warning("could not read the page agent %s left: %s", self.ctx.agent_id, _said(e))
            return None
        url = str(page.url)
        origins = []
        if url.startswith("http"):
            with contextlib.suppress(Exception):  # a page navigating away as it is read
                kept = await asyncio.wait_for(page.evaluate(_ORIGIN_STORAGE), LEAVE_TIMEOUT)
                if kept["localStorage"]:
                    origins = [kept]
        storage = {"cookies": cookies[:MAX_COOKIES], "origins": origins}
        page_left: dict[str, Any] = {"url": url, "storage": storage, "at": time.time()}
        if gone := self._given - cookies_of(storage):
            page_left["dropped"] = [list(t) for t in sorted(gone, key=repr)[-MAX_COOKIES:]]
        # which of its cookies it was merely given (by position: a few bytes, not the cookies
        # again): a page that only held a login it was given does not undo a logout made in
        # a parallel branch from the same login (_cookies)
        if given := [i for i, c in enumerate(storage["cookies"]) if _cookie(c) in self._given]:
            page_left["given"] = given
        left = json.dumps(page_left)
        if len(left) > PAGE_LIMIT:
            log.warning(
                "the page agent %s left holds %d bytes of cookies and storage, more than %d: "
                "not kept (an agent after it starts on a page of its own)",
                self.ctx.agent_id,
                len(left),
                PAGE_LIMIT,
            )
            return None
        return left.encode()

    async def _leave(self) -> bool:
        """The page left as the attempt ends any other way (failed, stopped, asking a person):
        best effort — the agent's own end is not held up, or replaced, by it. True when it
        was stored."""
        left = await self._state()
        if left is None:
            return False
        key = page_key(self.ctx.run_id, self.ctx.agent_id)
        try:
            await asyncio.wait_for(
                asyncio.to_thread(self.ctx.store.objects.put, key, left), LEAVE_TIMEOUT
            )
            return True
        except Exception as e:  # noqa: BLE001 - any store's errors, its wait running out
            log.warning("could not keep the page agent %s left: %s", self.ctx.agent_id, _said(e))
            return False

    async def _where(self) -> str:
        page = await self.page()

        async def where() -> str:
            return f"now at {page.url} — {await page.title()!r}"

        return await steadily(page, "read where the page is", where)

    async def navigate(self, args: dict[str, Any]) -> str:
        url = require_str(args, "url", "browser_navigate", '{"url": "https://example.com"}')
        if not url.startswith(("http://", "https://")):
            raise ToolError(f"browser_navigate needs an http(s) URL, not {url!r}")
        page = await self.page(where_left=False)
        self.ctx.progress(f"opening {url}")
        mark = len(self.refusals.denied)
        try:
            response = await page.goto(url, timeout=TIMEOUT_MS, wait_until="load")
        except Exception as e:  # noqa: BLE001 - Playwright raises its own error types
            raise await not_opened(url, e, self.refusals, mark) from None
        await steadily(page, f"read {url}", lambda: judge(page, response, url))

        async def read() -> str:
            # (a script may have sent it on since it loaded: read the document it is at, loaded)
            await page.wait_for_load_state("load", timeout=TIMEOUT_MS)
            text, _ = cap_text(await page_text(page), MAX_TEXT, "page text")
            link_lines = "\n".join(
                f"- {link['text'] or '(no text)'} → {link['href']}"
                for link in (await page_links(page))[:MAX_LINKS]
            )
            return f"# {await page.title()}\nURL: {page.url}\n\n{text}\n\n## Links\n{link_lines or '(none)'}"

        return await steadily(page, f"read {url}", read)

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
        page = await self.page()

        async def read() -> str:
            await page.wait_for_load_state("load", timeout=TIMEOUT_MS)
            return await page_text(page, args.get("selector"))

        text = await steadily(page, "read the page", read)
        return cap_text(text, MAX_TEXT, "text")[0]

    async def screenshot(self, args: dict[str, Any]) -> str:
        page = await self.page()
        self.shots += 1
        png = await steadily(
            page,
            "take a screenshot",
            lambda: page.screenshot(full_page=bool(args.get("full_page"))),
        )
        name, shown = f"{self.ctx.file_prefix}shot-{self.shots}.png", f"screenshot of {page.url}"
        ref = await store_write(
            self.ctx,
            "the screenshot",
            lambda: self.ctx.store.put_bytes(
                self.ctx.run_id, self.ctx.agent_id, name, png, "image/png", shown
            ),
        )
        self.ctx.artifacts.append(ref)
        return f"saved a screenshot of {page.url} as {ref.uri} ({ref.size:,} bytes)"
