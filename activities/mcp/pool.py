"""MCP sessions, pooled per worker: one per server configuration and place (the run's workspace,
sandbox and network rules), kept between calls so a server keeps what it holds in memory.

A stdio session is held by the attempts that use it (each passes itself as ``holder``) and
closed when the last of them lets go (:meth:`McpPool.release`): its server's cgroup is then
killed, so nothing a server started outlives the attempts it served — no process of an
ended attempt writes in a workspace being snapshotted, or runs on. The price is a server
started again by the next attempt (its memory gone). An HTTP session runs nothing here: it
stays pooled, closed after ``IDLE_CLOSE`` unused, as is a session nobody holds
(``starter.py mcp check``); every session is closed when the worker shuts down.

Each session lives in a task of its own (the SDK's transports are anyio task groups, which
must be left by the task that entered them); calls come from the attempts' tasks. A server
that dies under a call (its process ended, its connection closed) is started again and the
call sent once more; if it dies again, the call fails with the end of what it wrote to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import anyio
import httpx2

from activities.mcp.launch import Place, Record, StderrTail, open_session, unwrap
from activities.mcp.servers import Launch, McpConfigError
from activities.sandbox import egress, secrets

if TYPE_CHECKING:  # the MCP SDK is imported when a session is opened (activities/mcp/launch.py)
    from mcp import Client
    from mcp.shared.dispatcher import ProgressFnT as Progress
    from mcp_types import CallToolResult

log = logging.getLogger("xsky.mcp")

CONNECT_TIMEOUT = 30.0  # seconds for a server to start and answer the handshake
IDLE_CLOSE = 600.0  # seconds a session may go unused before it is closed
CLOSE_TIMEOUT = 10.0


# What a server's stderr says when it started but its own files are out of the sandbox's view.
_NOT_FOUND_INSIDE = (
    "Cannot find module",
    "MODULE_NOT_FOUND",
    "ModuleNotFoundError",
    "can't open file",
    "No such file or directory",
    "ENOENT",
)


class McpUnavailable(Exception):
    """A server could not be started or reached, or died twice under one call: one sentence
    (its secrets' values scrubbed: it may quote the server's stderr)."""

    def __init__(self, message: str, *, retryable: bool = True):
        super().__init__(secrets.scrub(message))
        self.retryable = retryable


class McpCallFailed(Exception):
    """The server answered a call with an error (not a tool's own error result); its text is
    the server's, scrubbed."""

    def __init__(self, message: str):
        super().__init__(secrets.scrub(message))


class _Gone(Exception):
    """The session ended under a request."""


_GONE = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    httpx2.TransportError,
)


class Session:
    """One server's session, owned by a task of its own."""

    def __init__(self, launch: Launch, place: Place, connect_timeout: float = CONNECT_TIMEOUT):
        self.launch = launch
        self.place = place
        self.connect_timeout = connect_timeout
        self.client: Client | None = None
        self.tail = StderrTail() if launch.transport == "stdio" else None
        # Where the egress proxy's decisions for this server go: the permission logs of the
        # attempts whose calls are in flight, else of the last attempt that used it.
        self.record: Record | None = None
        self._callers: list[Record] = []
        self.refused: str | None = None  # the egress proxy's last refusal (an HTTP server's why)
        self.last_used = time.monotonic()
        self.busy = 0
        self.holders: set[object] = set()  # the attempts using it (a stdio one ends with the last)
        self._closing = asyncio.Event()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._owner: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self._owner is not None and not self._owner.done() and self.client is not None

    def _note(self, destination: str, effect: str, reason: str) -> None:
        destination, reason = secrets.scrub(destination), secrets.scrub(reason)
        if effect == "deny":
            self.refused = reason
        # Calls in flight together share the server: which one connected cannot be told, so
        # each of their logs has the decision.
        for record in dict.fromkeys(self._callers or ([self.record] if self.record else [])):
            record(destination, effect, reason)

    async def start(self) -> None:
        self._owner = asyncio.create_task(self._own(), name=f"xsky-mcp-{self.launch.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), self.connect_timeout)
        except TimeoutError:
            await self.close()
            raise McpUnavailable(
                f"MCP server {self.launch.name} did not answer the MCP handshake within "
                f"{self.connect_timeout:g}s{await self.stderr()}"
            ) from None
        except McpConfigError:
            await self.close()
            raise
        except BaseException as e:  # noqa: BLE001 - any failure to start is reported as one sentence
            await self.close()
            raise await self._unavailable(unwrap(e)) from None

    async def _own(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                self.client = await open_session(
                    stack, self.launch, self.place, self._note, self.tail
                )
                self._ready.set_result(None)
                await self._closing.wait()
        except asyncio.CancelledError:
            if not self._ready.done():
                self._ready.cancel()
        except BaseException as e:  # noqa: BLE001 - handed to the starter, or logged
            if not self._ready.done():
                self._ready.set_exception(e)
            else:
                log.info("MCP server %s: its session ended: %s", self.launch.name, unwrap(e))

    async def stderr(self) -> str:
        if self.tail is None:
            return ""
        text = await self.tail.settled()
        return f"; its stderr ended: {text[-600:]}" if text else ""

    async def _unavailable(self, e: BaseException) -> McpUnavailable:
        name, tail = self.launch.name, await self.stderr()
        if self.launch.transport == "http":
            why = f"the egress proxy refused it: {self.refused}" if self.refused else _reason(e)
            return McpUnavailable(
                f"MCP server {name} at {self.launch.shown} could not be reached: {why}",
                retryable=self.refused is None,
            )
        if "execvp" in tail and "No such file" in tail:
            return McpUnavailable(
                f"MCP server {name}: the command {self.launch.shown!r} was not found inside the sandbox "
                "(it sees /usr, /bin and the folders of security.read_only_paths in the worker's settings); "
                "give the command's full path and add its folder to security.read_only_paths"
                + link_target_note(self.launch.shown),
                retryable=False,
            )
        hint = ""
        if any(sign in tail for sign in _NOT_FOUND_INSIDE):
            # It started, then could not find its own files: most often they are where the
            # sandbox does not look (a project's node_modules, a virtualenv under a home).
            hint = (
                "; it could not find a file it needs — the sandbox sees /usr, /bin, the run's "
                "workspace and the folders of security.read_only_paths in the worker's settings: "
                "add the folder its files are in there"
            )
        return McpUnavailable(
            f"MCP server {name} ({self.launch.shown}) exited before it answered the MCP handshake"
            + (tail or f" ({_reason(e)})")
            + hint,
            retryable=False,
        )

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        progress: Progress | None,
        record: Record | None = None,
    ) -> CallToolResult:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        if not self.alive or self.client is None:
            raise _Gone()
        self.busy += 1
        if record is not None:
            self._callers.append(record)
        try:
            return await self.client.call_tool(
                tool,
                arguments,
                read_timeout_seconds=self.launch.timeout,
                progress_callback=progress,
            )
        except MCPError as e:
            if e.code == CONNECTION_CLOSED:
                raise _Gone() from None
            if e.code == REQUEST_TIMEOUT:
                raise McpCallFailed(
                    f"{tool} did not answer within {self.launch.timeout:g}s (the server's timeout in "
                    "the worker's settings)"
                ) from None
            raise McpCallFailed(f"the server refused {tool}: {e}") from None
        except _GONE:
            raise _Gone() from None
        finally:
            self.busy -= 1
            self.last_used = time.monotonic()
            if record is not None:
                try:
                    # The proxy decided on this call's connections before they were answered:
                    # its decisions reach this call's log before the sync's reply does.
                    await egress.process().sync()
                finally:
                    self._callers.remove(record)

    async def close(self) -> None:
        self._closing.set()
        owner = self._owner
        if owner is None or owner.done():
            return
        if not self._ready.done():  # still starting: nothing to close gracefully
            owner.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(owner), CLOSE_TIMEOUT)
        except (TimeoutError, asyncio.CancelledError):
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner


def _reason(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text[:400]


class McpPool:
    """This worker's MCP sessions, by server configuration and place."""

    def __init__(self, connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self.connect_timeout = connect_timeout
        self._sessions: dict[tuple[str, str, str], Session] = {}
        self._locks: dict[tuple[str, str, str], asyncio.Lock] = {}
        self._closing: set[asyncio.Future[Any]] = set()  # sessions being closed

    @staticmethod
    def key(launch: Launch, place: Place) -> tuple[str, str, str]:
        return launch.name, launch.digest, place.key()

    def sessions(self) -> list[Session]:
        return list(self._sessions.values())

    async def session(
        self,
        launch: Launch,
        place: Place,
        record: Record | None = None,
        holder: object | None = None,
    ) -> Session:
        """The running session for this server and place, started if there is none; ``holder``
        (the attempt) holds it until it calls :meth:`release`."""
        self._close_idle()
        key = self.key(launch, place)
        async with self._locks.setdefault(key, asyncio.Lock()):
            found = self._sessions.get(key)
            if found is not None and found.alive:
                found.record = record
                if holder is not None:
                    found.holders.add(holder)
                return found
            if found is not None:
                await self._drop(launch, place, found)
            fresh = Session(launch, place, self.connect_timeout)
            fresh.record = record
            # The attempts that held the one that died hold the new one: it serves them now.
            fresh.holders = (found.holders if found is not None else set()) | (
                {holder} if holder is not None else set()
            )
            await fresh.start()
            self._sessions[key] = fresh
            return fresh

    async def release(self, holder: object) -> None:
        """``holder`` (an attempt) is done: each stdio session no attempt holds any more is
        closed, and with it every process its server started (its cgroup killed), before this
        returns. A release cancelled midway still finishes closing them."""
        ending: list[Session] = []
        for key, session in list(self._sessions.items()):
            if holder not in session.holders:
                continue
            session.holders.discard(holder)
            if not session.holders and session.launch.transport == "stdio":
                del self._sessions[key]
                ending.append(session)
        if ending:
            closing = asyncio.gather(*(s.close() for s in ending), return_exceptions=True)
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)
            await asyncio.shield(closing)

    async def call(
        self,
        launch: Launch,
        place: Place,
        tool: str,
        arguments: dict[str, Any],
        *,
        record: Record | None = None,
        progress: Progress | None = None,
        holder: object | None = None,
    ) -> CallToolResult:
        """Call ``tool``; a server that died under it is started again and the call sent once more."""
        from mcp_types import CallToolResult

        tail = await self._once(launch, place, tool, arguments, record, progress, holder)
        if isinstance(tail, CallToolResult):
            return tail
        log.warning("MCP server %s ended during %s; starting it again%s", launch.name, tool, tail)
        again = await self._once(launch, place, tool, arguments, record, progress, holder)
        if isinstance(again, CallToolResult):
            return again
        raise McpUnavailable(
            f"MCP server {launch.name} ended during {tool} twice (it was started again once){again}",
            retryable=False,
        )

    async def _once(
        self,
        launch: Launch,
        place: Place,
        tool: str,
        arguments: dict[str, Any],
        record: Record | None,
        progress: Progress | None,
        holder: object | None,
    ) -> CallToolResult | str:
        """The call's result, or the end of the server's stderr when it ended under the call."""
        session = await self.session(launch, place, record, holder)
        try:
            return await session.call(tool, arguments, progress, record)
        except _Gone:
            tail = await session.stderr()
            await self._drop(launch, place, session)
            return tail

    async def _drop(self, launch: Launch, place: Place, session: Session) -> None:
        key = self.key(launch, place)
        if self._sessions.get(key) is session:
            del self._sessions[key]
        await session.close()

    def _close_idle(self) -> None:
        """Close sessions no attempt holds that were unused for IDLE_CLOSE (or ended), in the
        background: a server may take seconds to stop, which no caller should wait for."""
        now = time.monotonic()
        idle = [
            (k, s)
            for k, s in self._sessions.items()
            if s.busy == 0 and (not s.alive or (not s.holders and now - s.last_used > IDLE_CLOSE))
        ]
        for key, session in idle:
            self._sessions.pop(key, None)
            task = asyncio.create_task(session.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Close every session (the worker is shutting down)."""
        sessions, self._sessions = list(self._sessions.values()), {}
        closing = [s.close() for s in sessions] + list(self._closing)
        await asyncio.gather(*closing, return_exceptions=True)


def link_target_note(command: str) -> str:
    """A command given by its full path that is a symbolic link (a virtualenv's ``bin/python``
    to a pyenv or system interpreter): where it leads, whose folder the sandbox must see too
    — a full path to a link was refused as "not found" with the advice to give a full path.
    Only for a command as configured with no ``${VAR}`` in it (a value is never named)."""
    if not command.startswith("/") or "${" in command:
        return ""
    target = os.path.realpath(command)
    if target == os.path.normpath(command) or not os.path.exists(target):
        return ""
    return (
        f" — {command} is a link to {target}: the sandbox must see that folder too "
        f"({os.path.dirname(target)}, and what that program reads)"
    )
