"""The worker's egress proxy: the one way out for agents' network traffic.

Agents reach the network three ways, and each goes through here:

- the browser (its contexts are started with a proxy endpoint as their only route),
- ``http_get`` (httpx with a proxy endpoint),
- commands in the OS sandbox, when the settings allow domains for them
  (``"permissions": {"allow": ["network(domain:pypi.org)"]}``): an endpoint on a Unix
  socket bound into the sandbox (its own network namespace has no other way out).

The proxy runs in a process of its own (:mod:`.egress_server`), started on first use,
started again if it died, killed with the worker, with its own descriptor and memory
limits, so no flood of connections from a sandbox can use up the worker's. Each tool call
opens an endpoint with its :class:`Policy` and closes it afterwards; every endpoint has
a cap on concurrent connections and idle timeouts, so one flooding sandbox cannot starve
the others.

For every request — each redirect hop is a new request — the proxy checks the host against
the domain rules, **resolves it and checks every resolved address** (:mod:`.egress_policy`):
link-local and metadata addresses and the Temporal server's endpoints (discovered, not
assumed: :mod:`.temporal_ports`) never; loopback, private and this machine's addresses only
for an exact ``host:port`` rule. It connects to an address it checked (a second lookup
could answer differently). Plain HTTP is one request per connection; HTTPS is tunnelled
with CONNECT, and a TLS ClientHello must name the CONNECT host. Each decision is streamed
back and recorded for the run's permission log before the tool call's endpoint is gone.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from activities.sandbox import temporal_ports
from activities.sandbox.egress_policy import WEB_PORTS, Policy
from xsky.security.permissions import PermissionSettings, domain_rules

log = logging.getLogger("xsky.egress")

Record = Callable[[str, str, str], None]  # (destination, effect, reason)
REQUEST_TIMEOUT = 30.0
ROOT = Path(__file__).resolve().parents[2]  # where `activities` can be imported from
# The proxy process needs none of the worker's keys and tokens.
CHILD_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "HOME")

__all__ = [
    "WEB_PORTS",
    "EgressProcess",
    "EgressUnavailable",
    "Policy",
    "Record",
    "browser_session",
    "browser_socket",
    "policies",
    "serving",
]


class EgressUnavailable(RuntimeError):
    """The egress proxy process could not be started or reached."""


def policies(settings: PermissionSettings, settings_file: str = "") -> tuple[Policy, Policy | None]:
    """(the browser's and http_get's policy, sandboxed commands' policy or None for no network).

    Any public host for the first (minus denied domains); for commands only the domains a
    ``network(domain:…)`` allow rule names. Private addresses only for exact ``host:port``
    rules (``network(domain:127.0.0.1:8080)``), whatever rules say about the host alone.

    Only the worker's own settings, people's approvals and the hosts the run's starter opened
    (``host_rules``, from ``--allow-host``) open the network: rules that came with a run's
    input rules give no command a way out and no private address. ``settings_file`` is the
    file the worker reads its rules from, named in every refusal's fix.
    """
    settings = settings.model_copy(update={"run_rules": []})
    web_allow, web_deny = domain_rules(settings, ("browser_navigate", "http_get", "network"))
    net_allow, net_deny = domain_rules(settings, ("network",))
    web = Policy.from_rules(
        web_allow, web_deny, any_host=True, ports=None, settings_file=settings_file
    )
    commands = (
        Policy.from_rules(
            net_allow, net_deny, any_host=False, ports=WEB_PORTS, settings_file=settings_file
        )
        if net_allow
        else None
    )
    return web, commands


@dataclass(eq=False)
class _Run:
    """One proxy process and what waits on it."""

    proc: subprocess.Popen[bytes]
    pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Record | None]] = (
        field(default_factory=dict)
    )
    listeners: dict[str, tuple[asyncio.AbstractEventLoop, Record | None]] = field(
        default_factory=dict
    )
    alive: bool = True
    stopping: bool = False  # asked to end: its exit is no news
    folders: set[str] = field(default_factory=set)  # of its sockets: removed if it was killed
    write_lock: threading.Lock = field(default_factory=threading.Lock)


def _call(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> None:
    with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits any more
        loop.call_soon_threadsafe(fn, *args)


def _settle(future: asyncio.Future[Any], reply: dict[str, Any] | BaseException) -> None:
    if future.done():
        return
    if isinstance(reply, BaseException):
        future.set_exception(reply)
    elif "error" in reply:
        future.set_exception(EgressUnavailable(reply["error"]))
    else:
        future.set_result(reply)


class EgressProcess:
    """The worker's handle on its egress proxy process.

    A thread of its own starts the process and reads what it says, so any event loop (and
    any number of them) can use it; replies and decisions are handed to the loop that asked,
    in the order the proxy wrote them. ``target`` is the Temporal server whose endpoints
    the proxy refuses (default: the settings'); ``command`` how to start the process.
    """

    def __init__(
        self,
        target: tuple[str, str, tuple[int, ...]] | None = None,
        command: Sequence[str] | None = None,
    ):
        self.target = target
        self.command = list(command or [sys.executable, "-m", "activities.sandbox.egress_server"])
        self._lock = threading.Lock()
        self._run: _Run | None = None
        self._ids = itertools.count(1)

    @property
    def pid(self) -> int | None:
        return self._run.proc.pid if self._run is not None and self._run.alive else None

    def _ensure(self) -> _Run:
        with self._lock:
            if self._run is not None and self._run.alive:
                return self._run
            address, ui_url, layout = self.target or temporal_ports.settings_target()
            config = json.dumps({"address": address, "ui_url": ui_url, "layout": list(layout)})
            started: list[_Run | BaseException] = []
            ready = threading.Event()
            # Started from a thread that lives as long as the process: PR_SET_PDEATHSIG fires
            # when the thread that started a child ends, not only the whole worker.
            threading.Thread(
                target=self._serve,
                args=([*self.command, config], started, ready),
                name="xsky-egress",
                daemon=True,
            ).start()
            ready.wait(REQUEST_TIMEOUT)
            if not started or isinstance(started[0], BaseException):
                raise EgressUnavailable(
                    f"the egress proxy process could not be started: {started[0] if started else 'timed out'}"
                )
            self._run = started[0]
            return self._run

    def _serve(
        self, argv: list[str], started: list[_Run | BaseException], ready: threading.Event
    ) -> None:
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                cwd=ROOT,
                env={k: v for k, v in os.environ.items() if k in CHILD_ENV}
                | {"MALLOC_ARENA_MAX": "2"},  # few malloc arenas: the memory cap is for data
                start_new_session=True,  # the terminal's Ctrl-C is the worker's to handle
            )
        except OSError as e:
            started.append(e)
            ready.set()
            return
        run = _Run(proc)
        started.append(run)
        ready.set()
        assert proc.stdout is not None
        self._read(run, proc.stdout)

    def _read(self, run: _Run, out: IO[bytes]) -> None:
        for line in out:
            try:
                msg = json.loads(line)
            except ValueError:
                log.warning("the egress proxy wrote a line that is not JSON: %r", line[:200])
                continue
            if "event" in msg:
                loop, record = run.listeners.get(msg["endpoint"], (None, None))
                if loop is not None and record is not None:
                    _call(loop, record, msg["destination"], msg["effect"], msg["reason"])
                continue
            entry = run.pending.pop(msg.get("reply"), None)
            if entry is None:
                continue
            loop, future, record = entry
            if "endpoint" in msg and "error" not in msg:  # before any of its decisions arrive
                run.listeners[msg["endpoint"]] = (loop, record)
            if "path" in msg:
                run.folders.add(os.path.dirname(msg["path"]))
            if "closed" in msg:
                run.listeners.pop(msg["closed"], None)
            _call(loop, _settle, future, msg)
        run.alive = False
        code = run.proc.wait()
        for folder in run.folders:  # a killed proxy could not remove its sockets itself
            shutil.rmtree(folder, ignore_errors=True)
        (log.info if run.stopping else log.warning)(
            "the egress proxy process exited with status %s", code
        )
        gone = EgressUnavailable(
            f"the egress proxy process exited (status {code}); the next tool call starts a new one"
        )
        for loop, future, _ in list(run.pending.values()):
            _call(loop, _settle, future, gone)
        run.pending.clear()

    async def _request(
        self, msg: dict[str, Any], record: Record | None = None, run: _Run | None = None
    ) -> tuple[_Run, dict[str, Any]]:
        run = run or self._ensure()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        rid = next(self._ids)
        run.pending[rid] = (loop, future, record)
        line = json.dumps({"id": rid, **msg}).encode() + b"\n"
        try:
            with run.write_lock:
                assert run.proc.stdin is not None
                run.proc.stdin.write(line)
                run.proc.stdin.flush()
        except OSError as e:
            run.pending.pop(rid, None)
            run.alive = False
            raise EgressUnavailable(f"the egress proxy process is gone ({e})") from None
        try:
            return run, await asyncio.wait_for(future, REQUEST_TIMEOUT)
        except TimeoutError:
            run.pending.pop(rid, None)
            raise EgressUnavailable(
                f"the egress proxy did not answer {msg['op']} within {REQUEST_TIMEOUT:g}s"
            ) from None

    async def _open(
        self, msg: dict[str, Any], record: Record | None
    ) -> tuple[_Run, dict[str, Any]]:
        try:
            return await self._request(msg, record)
        except EgressUnavailable:
            if self._run is not None and self._run.alive:
                raise
            return await self._request(msg, record)  # it had died: once more, with a new one

    @contextlib.asynccontextmanager
    async def endpoint(
        self, policy: Policy, record: Record | None, kind: str
    ) -> AsyncIterator[dict[str, Any]]:
        """An endpoint for one tool call: the open reply (``url``, ``path`` or credentials).
        When the block ends, every decision it made has been handed to ``record``."""
        run, opened = await self._open(
            {"op": "open", "kind": kind, "policy": policy.wire()}, record
        )
        try:
            yield opened
        finally:
            if run.alive:
                close = self._request({"op": "close", "endpoint": opened["endpoint"]}, run=run)
                with contextlib.suppress(EgressUnavailable):
                    await asyncio.shield(close)

    async def sync(self) -> None:
        """Once this returns, every decision the running proxy made before it has been handed
        to its recorder (a shared endpoint's connections outlive any one call's block)."""
        run = self._run
        if run is None or not run.alive:
            return
        with contextlib.suppress(EgressUnavailable):
            await self._request({"op": "sync"}, run=run)

    async def browser_socket(self) -> Path:
        _, reply = await self._open({"op": "browser_socket"}, None)
        return Path(reply["path"])

    def stop(self) -> None:
        """End the process (it also ends by itself when the worker does)."""
        run = self._run
        if run is not None and run.alive and run.proc.stdin is not None:
            run.stopping = True
            with contextlib.suppress(OSError):
                run.proc.stdin.close()  # end of the control pipe: the proxy exits
            try:
                run.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                run.proc.kill()


_process: EgressProcess | None = None
_process_lock = threading.Lock()


def process() -> EgressProcess:
    """This worker's egress proxy process (one for all tool calls)."""
    global _process
    with _process_lock:
        if _process is None:
            _process = EgressProcess()
            atexit.register(_process.stop)
        return _process


@contextlib.asynccontextmanager
async def serving(
    policy: Policy, record: Record | None, unix: bool = False, *, credentials: bool = True
) -> AsyncIterator[str]:
    """A proxy endpoint for the length of one tool call: a Unix socket path (``unix``, for a
    sandbox's relay) or an ``http://user:token@127.0.0.1:port`` URL whose token it requires.

    ``credentials=False``: a URL without them, for a client that cannot send them (the
    browser until it answers proxy challenges); only this user's processes may use it.
    Every decision has reached ``record`` when the block ends.
    """
    kind = "unix" if unix else "tcp" if credentials else "tcp-user"
    async with process().endpoint(policy, record, kind) as opened:
        yield opened["path"] if unix else opened["url"]


async def browser_socket() -> Path:
    """The shared Unix socket browsers reach the proxy through (a relay in their sandbox);
    requests on it need the credentials of a :func:`browser_session`. Ask again after a
    restart of the proxy: a new process has a new socket."""
    return await process().browser_socket()


@contextlib.asynccontextmanager
async def browser_session(policy: Policy, record: Record | None) -> AsyncIterator[tuple[str, str]]:
    """(username, password) mapping requests on :func:`browser_socket` to this policy and
    recorder (Playwright: ``proxy={"server": …, "username": …, "password": …}``); the proxy
    answers ``407`` to requests without them."""
    async with process().endpoint(policy, record, "session") as opened:
        yield opened["username"], opened["password"]
