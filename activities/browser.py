"""Chromium for browser agents: one browser process per worker, a fresh context per agent.

Each agent gets its own browser context and page (its own cookies, storage and tab), so
parallel browser agents never share a page — unlike Eko, where they share one; an agent after
another continues the page that one left (activities/tools/browsing.py). The browser
runs inside the OS sandbox (:class:`BrowserPool`), and every page reaches the network only
through the egress proxy, with credentials that tie it to its run's rules and log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from activities.sandbox import bwrap, egress
from activities.sandbox.egress_policy import Policy
from activities.sandbox.limits import AttemptCgroup, Limits, attempt_cgroup
from xsky.config import load_settings

if TYPE_CHECKING:
    from activities.tools import ToolContext

log = logging.getLogger("xsky.browser")

# Opening a page (its context, then the page) has no timeout of its own in Playwright, and can
# wait forever on a browser that stopped answering (microsoft/playwright-python#2987; a watch's
# poll once waited so a minute, "opening" its page, on a loaded machine): past this many
# seconds the browser is taken for hung and replaced. Closing one is bounded the same way.
OPEN_TIMEOUT = 30.0
CLOSE_TIMEOUT = 10.0

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


def _guard(blocked: Callable[[str], bool], hops: bool = True) -> Callable[[Any], Any]:
    """A route handler enforcing the deny list, redirects included.

    Playwright does not route the hops of a redirect, so navigations are fetched without
    following redirects: a hop to a denied host is aborted, any other response is passed on
    (the browser then requests the next hop, which comes through here again). A confined
    browser's proxy is inside its sandbox, out of Playwright's reach (``hops=False``): there
    the egress proxy, which sees every hop as a request of its own, refuses denied hosts.
    """

    async def route(r: Any) -> None:
        request = r.request
        if blocked(request.url):
            await r.abort("blockedbyclient")
            return
        if not hops or not request.is_navigation_request():
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
    """No browser to open a page in. ``retryable``: it may be there later (it hung)."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


@dataclass(frozen=True)
class BrowserSandbox:
    """How a confined browser is started: the worker's sandbox settings and the egress
    proxy's shared socket, the only way out of the browser's network namespace."""

    proxy_socket: Path
    limits: Limits
    sandbox_user: int | str | None = None
    read_only_paths: tuple[Path, ...] = ()


# Inside the browser's sandbox the relay listens here (its own loopback), for every context.
INSIDE_PROXY = f"http://127.0.0.1:{bwrap.PROXY_PORT}"


def browser_limits(limits: Limits) -> Limits:
    """A browser's own limits: its memory cap, and room for Chromium's many threads (which the
    pids controller counts) and its profile in the private /tmp."""
    return replace(
        limits,
        memory=limits.browser_memory,
        processes=max(limits.processes, 4096),
        open_files=max(limits.open_files, 8192),
        tmp=max(limits.tmp, 1024 * 1024 * 1024),
    )


class BrowserPool:
    """One Chromium per worker (started on first use), a fresh context per agent.

    Confined (the default): Chromium runs inside the OS sandbox (activities/sandbox/bwrap.py)
    as the sandbox user, in a cgroup with the browser's memory cap, with no network but a
    relay to the egress proxy, and downloads refused — a page can write nothing outside the
    browser's private /tmp. A page that eats memory is the one the kernel stops (Chromium
    gives its renderers the highest OOM score), so only that page fails.
    """

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._pw: Any = None
        self._browser: Any = None
        self._launched_for: BrowserSandbox | None | bool = False  # False: nothing launched
        self._cgroup: AttemptCgroup | None = None
        self._scratch: Path | None = None
        self._opened_at = 0.0  # monotonic time of the last page opened

    async def _ensure(self, sandbox: BrowserSandbox | None) -> Any:
        async with self._lock:
            if (
                self._browser is not None
                and self._browser.is_connected()
                and self._launched_for == sandbox
            ):
                return self._browser
            await self._close_browser()
            from playwright.async_api import async_playwright

            if self._pw is None:
                self._pw = await async_playwright().start()
            default = None
            try:
                default = self._pw.chromium.executable_path
            except Exception:  # noqa: BLE001 - older Playwright versions may raise here
                default = None
            executable = chromium_executable(default)
            if executable is None and default and Path(default).exists():
                executable = default
            if executable is None:
                raise BrowserUnavailable(
                    "no Chromium found: install Debian's 'chromium' package, run `python -m playwright install chromium`, "
                    "or set XSKY_CHROMIUM to a Chromium executable"
                )
            args = list(CHROMIUM_ARGS)
            if sandbox is None:
                if os.geteuid() == 0:
                    args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
                self._browser = await self._pw.chromium.launch(
                    executable_path=executable, args=args, headless=True
                )
            else:
                # Playwright adds --no-sandbox: Chromium's own sandbox needs user namespaces,
                # which the OS sandbox around it does not give; that sandbox is the boundary.
                launcher = await asyncio.to_thread(self._launcher, executable, sandbox)
                self._browser = await self._pw.chromium.launch(
                    executable_path=str(launcher),
                    args=args,
                    headless=True,
                    proxy={"server": INSIDE_PROXY},
                )
            self._launched_for = sandbox
            return self._browser

    def _launcher(self, executable: str, sandbox: BrowserSandbox) -> Path:
        """A script Playwright starts as "the browser": Chromium inside the OS sandbox."""
        problem = bwrap.ready(sandbox.sandbox_user)
        if problem is not None:
            raise BrowserUnavailable(f"the OS sandbox the browser runs in cannot start: {problem}")
        scratch = Path(tempfile.mkdtemp(prefix="xsky-browser-"))
        who = bwrap.identity(sandbox.sandbox_user)
        workspace = scratch / "home"
        workspace.mkdir()
        if who.drop:
            os.chown(workspace, who.uid, who.gid)
        limits = browser_limits(sandbox.limits)
        c = bwrap.Confinement(
            workspace=workspace,
            proxy_socket=sandbox.proxy_socket,
            limits=limits,
            sandbox_user=sandbox.sandbox_user,
            read_only_paths=sandbox.read_only_paths,
            browser=True,
        )
        self._cgroup = attempt_cgroup(limits)
        argv = bwrap.command([executable, _ARGS], c, self._cgroup)
        words = " ".join('"$@"' if a == _ARGS else shlex.quote(a) for a in argv)
        script = scratch / "chromium"
        script.write_text(f"#!/bin/sh\nexec {words}\n")
        script.chmod(0o700)
        self._scratch = scratch
        return script

    def limit_reached(self) -> str | None:
        """The browser sandbox's memory limit, if its cgroup ran into it."""
        return self._cgroup.verdict() if self._cgroup is not None else None

    @asynccontextmanager
    async def page(
        self,
        blocked: Callable[[str], bool] | None = None,
        proxy: dict[str, str] | None = None,
        sandbox: BrowserSandbox | None = None,
        state: dict[str, Any] | None = None,
    ) -> AsyncIterator[Any]:
        """A new page in a new context, closed afterwards whatever happens.

        ``blocked(url)`` True aborts that request, whatever asked for it (a link, a
        redirect, a script): the domain deny list holds for the whole page. ``proxy`` is the
        egress proxy every request of the page goes through (it checks resolved addresses),
        with the credentials that tie the page to its run's policy. ``sandbox`` None starts
        Chromium unconfined, as the worker (``"security": {"sandbox": "off"}``). ``state``:
        the cookies and storage the context starts with (Playwright's ``storage_state``).
        """
        context, page = await self._open(blocked, proxy, sandbox, state)
        try:
            yield page
        finally:
            # The browser may be gone already, or hung: the agent's work is not held by it.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(context.close(), CLOSE_TIMEOUT)

    async def _open(
        self,
        blocked: Callable[[str], bool] | None,
        proxy: dict[str, str] | None,
        sandbox: BrowserSandbox | None,
        state: dict[str, Any] | None = None,
    ) -> tuple[Any, Any]:
        """A context and its page; a browser that gives none within ``OPEN_TIMEOUT`` (and no
        other agent one since this open began) is replaced, once — the pages other agents
        had in it fail, and their attempts retry. An open that the replacement cut short is
        tried again on the new browser."""
        for tries in (1, 2):
            browser = await self._ensure(sandbox)
            began = time.monotonic()
            try:
                opened = await asyncio.wait_for(
                    self._new_page(browser, blocked, proxy, sandbox, state), OPEN_TIMEOUT
                )
            except TimeoutError:
                if self._opened_at > began:
                    continue  # the browser opened another's page meanwhile: it answers
                log.warning(
                    "Chromium opened no page within %gs (try %d of 2): it is hung, and replaced",
                    OPEN_TIMEOUT,
                    tries,
                )
                async with self._lock:
                    if self._browser is browser:
                        await self._close_browser()
                continue
            except Exception:  # Playwright's own error types, for a browser closed under it
                if browser is self._browser and browser.is_connected():
                    raise
                continue  # another open replaced it under this one
            self._opened_at = time.monotonic()
            return opened
        raise BrowserUnavailable(
            f"Chromium opened no page within {OPEN_TIMEOUT:g}s, twice (a hung browser is "
            "restarted in between): the machine may be overloaded, or its Chromium broken (see "
            "the worker's log)",
            retryable=True,
        )

    @staticmethod
    async def _new_page(
        browser: Any,
        blocked: Callable[[str], bool] | None,
        proxy: dict[str, str] | None,
        sandbox: BrowserSandbox | None,
        state: dict[str, Any] | None = None,
    ) -> tuple[Any, Any]:
        context = await browser.new_context(
            viewport={"width": 1280, "height": 900},
            storage_state=state,
            proxy={**proxy, "bypass": ""} if proxy else None,
            accept_downloads=False,  # a page's downloads would land outside every workspace
        )
        try:
            await context.add_init_script(NO_WEBRTC)
            if blocked is not None:
                await context.route("**/*", _guard(blocked, hops=sandbox is None))
            return context, await context.new_page()
        except BaseException:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(context.close(), CLOSE_TIMEOUT)
            raise

    @asynccontextmanager
    async def page_for(
        self, ctx: ToolContext, state: dict[str, Any] | None = None
    ) -> AsyncIterator[Any]:
        """A page for one agent's tool call or attempt: confined unless the worker's settings
        turned the sandbox off, every request through the egress proxy with the run's policy
        and recorder."""
        async with AsyncExitStack() as stack:
            proxy: dict[str, str] | None = None
            sandbox: BrowserSandbox | None = None
            if not ctx.unconfined:
                base = ctx.confinement or bwrap.Confinement(workspace=ctx.workspace)
                sandbox = BrowserSandbox(
                    await egress.browser_socket(),
                    base.limits,
                    base.sandbox_user,
                    base.read_only_paths,
                )
                # No policy given (a tool called outside an agent): public hosts only.
                user, password = await stack.enter_async_context(
                    egress.browser_session(ctx.egress or Policy(), ctx.record)
                )
                proxy = {"server": INSIDE_PROXY, "username": user, "password": password}
            elif ctx.egress is not None:
                url = await stack.enter_async_context(
                    egress.serving(ctx.egress, ctx.record, credentials=False)
                )
                proxy = {"server": url}
            yield await stack.enter_async_context(self.page(ctx.blocked_url, proxy, sandbox, state))

    async def _close_browser(self) -> None:
        if self._browser is not None:
            try:
                await asyncio.wait_for(self._browser.close(), CLOSE_TIMEOUT)
            except TimeoutError:
                log.warning("Chromium did not close within %gs: it is killed", CLOSE_TIMEOUT)
                await self._stop_driver()
            except Exception:  # noqa: BLE001 - already gone
                pass
            self._browser = None
        if self._cgroup is not None:
            await asyncio.to_thread(self._cgroup.remove)  # kills what is left of a confined one
            self._cgroup = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
        self._launched_for = False

    async def _stop_driver(self) -> None:
        """Kill Playwright's driver and every process under it (the browsers it started), then
        let go of it: a browser that answers nothing is not asked to close."""
        for pid in reversed(_descendants(os.getpid(), _is_driver)):  # the deepest first
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if self._pw is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._pw.stop(), CLOSE_TIMEOUT)
            self._pw = None

    async def close(self) -> None:
        async with self._lock:
            await self._close_browser()
            if self._pw is not None:
                await self._pw.stop()
                self._pw = None


def _is_driver(argv: list[str]) -> bool:
    """Is this Playwright's driver (its node running its cli.js, as Playwright starts it)?"""
    try:
        from playwright._impl._driver import compute_driver_executable

        node, cli = compute_driver_executable()
    except Exception:  # noqa: BLE001 - a release without it: nothing is taken for the driver
        return False
    return argv[:2] == [str(node), str(cli)] and "run-driver" in argv


def _descendants(root: int, chosen: Callable[[list[str]], bool]) -> list[int]:
    """The children of ``root`` whose argv ``chosen`` takes, and everything under them, each
    after its parent."""
    children: dict[int, list[int]] = {}
    argv: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            parent = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
            raw = (entry / "cmdline").read_bytes()
            argv[int(entry.name)] = raw.decode(errors="replace").split("\0")[:-1]
    found = [pid for pid in children.get(root, []) if chosen(argv.get(pid, []))]
    for pid in found:  # grows as it goes: every level below
        found += [c for c in children.get(pid, []) if c not in found]
    return found


_ARGS = "\x00args"  # where Playwright's arguments go in the launcher script
