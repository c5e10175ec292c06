"""One MCP session: a stdio server started inside the OS sandbox, or an HTTP server through the
egress proxy, connected with the official ``mcp`` SDK's ``Client``.

**stdio** — the server runs as the shell tool's commands do (:mod:`activities.sandbox.bwrap`):
the run's workspace writable, the system's program folders and the worker's
``security.read_only_paths`` readable, home and xsky's state absent, its own cgroup with the
command limits, no network but the egress proxy with the run's ``network(domain:…)`` rules,
and dead with the worker (``--die-with-parent``). Its ``env`` reaches it through a file only
the sandbox user may read (shown to the sandbox read-only and removed once the server has
answered), never through an argument list another process could read. Its stderr is kept
(the last few KiB) for the errors that name why it stopped. The workspace is its one root
(MCP ``roots``), so a filesystem server works there without a path argument.

**HTTP** — streamable HTTP through the worker's egress proxy with the run's browser and
``http_get`` policy: public hosts, and loopback, private or metadata addresses only for a rule
naming the host and port (``network(domain:127.0.0.1:8080)`` or ``--allow-host``).

A project's server (of ``.mcp.json``) reaches only the hosts the worker's settings grant it
(:meth:`Place.for_entry`), over either transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shlex
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, AnyStr

import httpx2

from activities.mcp.servers import Launch, McpConfigError, ServerEntry
from activities.sandbox import bwrap, egress, freeze, limits, liveness, secrets
from activities.sandbox.egress_policy import WEB_PORTS, Policy
from activities.tools import ToolContext

# The MCP SDK is imported when a session is opened: it is ~1 s of a worker's start, and most
# workers never open one (tests/unit/test_worker_start.py keeps it so).
if TYPE_CHECKING:
    import mcp_types
    from mcp import Client
    from mcp.client import ClientRequestContext

Record = Callable[[str, str, str], None]
TAIL_BYTES = 8192
# The shell wrapper that reads a server's env from its file, then becomes the server.
_WITH_ENV = '. "$0" && exec "$@"'


@dataclass(frozen=True)
class Place:
    """Where an agent's MCP servers run: its run's workspace and sandbox, its network rules."""

    workspace: Path
    confinement: bwrap.Confinement | None  # None: the worker's settings turned the sandbox off
    command_network: Policy | None  # where a stdio server may connect (None: nowhere)
    web: Policy | None  # where an HTTP server may be (None: public hosts)

    @classmethod
    def of(cls, ctx: ToolContext) -> Place:
        base = ctx.confinement or bwrap.Confinement(workspace=ctx.workspace)
        return cls(
            workspace=ctx.workspace,
            confinement=None if ctx.unconfined else base,
            command_network=ctx.command_network,
            web=ctx.egress,
        )

    def for_entry(self, entry: ServerEntry) -> Place:
        """Where this server runs: a user's server here; a project's with no network but the
        hosts the worker's settings grant it (``mcpServerGrants.<name>.hosts``) — neither the
        run's rules nor public hosts — so what it was given goes nowhere else. The worker's
        deny rules still hold."""
        if not entry.project:
            return self
        hosts = entry.grant.patterns()
        denied = list(self.web.deny) if self.web is not None else []
        where = self.web.settings_file if self.web is not None else entry.user_settings
        web = Policy.from_rules(hosts, denied, any_host=False, ports=None, settings_file=where)
        commands = (
            Policy.from_rules(hosts, denied, any_host=False, ports=WEB_PORTS, settings_file=where)
            if hosts
            else None
        )
        return replace(self, command_network=commands, web=web)

    def key(self) -> str:
        """Names this place (sessions are pooled per server configuration and place)."""
        confinement = None
        if self.confinement is not None:
            c = self.confinement
            confinement = [str(c.workspace), [str(p) for p in c.read_only_paths], str(c.limits)]
            confinement += [str(c.sandbox_user), [str(p) for p in c.readable]]
        parts = [
            str(self.workspace),
            confinement,
            self.command_network.wire() if self.command_network else None,
            self.web.wire() if self.web else None,
        ]
        return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]


class StderrTail:
    """The last few KiB a server wrote to stderr, read from a pipe while it runs."""

    def __init__(self) -> None:
        self.writer: Any = None  # the pipe's write end, the server's stderr (once started)
        self._data = bytearray()
        self._transport: asyncio.BaseTransport | None = None
        self.done = asyncio.Event()

    async def start(self) -> None:
        tail = self

        class _Protocol(asyncio.Protocol):
            def data_received(self, data: bytes) -> None:
                tail._data += data
                del tail._data[:-TAIL_BYTES]

            def connection_lost(self, exc: Exception | None) -> None:
                tail.done.set()

        read, write = os.pipe()
        self.writer = os.fdopen(write, "w")
        reader = os.fdopen(read, "rb", buffering=0)
        self._transport, _ = await asyncio.get_running_loop().connect_read_pipe(_Protocol, reader)

    def spawned(self) -> None:
        """The server has its copy of the pipe: ours goes, so the end of its shows as EOF."""
        if self.writer is not None:
            with contextlib.suppress(OSError):
                self.writer.close()

    async def settled(self, timeout: float = 1.0) -> str:
        """The tail once the server's end closed (or after ``timeout``)."""
        if self._transport is None:
            return ""
        self.spawned()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.done.wait(), timeout)
        return self.text()

    def text(self) -> str:
        """What the server wrote, its secrets' values scrubbed: a server may print its env."""
        return secrets.scrub(bytes(self._data).decode("utf-8", "replace").strip())

    def close(self) -> None:
        self.spawned()
        if self._transport is not None:
            self._transport.close()


async def open_session(
    stack: AsyncExitStack, launch: Launch, place: Place, record: Record, tail: StderrTail | None
) -> Client:
    """A connected client (its handshake done), its resources on ``stack``; a stdio server's
    stderr goes to ``tail``."""
    if launch.transport == "http" or tail is None:
        return await _http(stack, launch, place, record)
    return await _stdio(stack, launch, place, record, tail)


@cache
def _client_info() -> mcp_types.Implementation:
    import mcp_types

    return mcp_types.Implementation(name="xsky", version="0.3")


async def _http(stack: AsyncExitStack, launch: Launch, place: Place, record: Record) -> Client:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    proxy = await stack.enter_async_context(egress.serving(place.web or Policy(), record))
    http = await stack.enter_async_context(
        httpx2.AsyncClient(
            # only the egress proxy, whatever the worker's environment says; each message bounded
            transport=_CappedTransport(httpx2.AsyncHTTPTransport(proxy=proxy, trust_env=False)),
            headers=launch.headers,
            trust_env=False,
            timeout=httpx2.Timeout(30.0, read=300.0),
        )
    )
    transport = streamable_http_client(launch.url, http_client=http)
    return _unvalidated(
        await stack.enter_async_context(Client(transport, client_info=_client_info(), cache=None))
    )


async def _no_output_check(name: str, result: Any) -> None:
    return None


def _unvalidated(client: Client) -> Client:
    """The client, its SDK's check of a tool's answer against the server's own outputSchema
    off: that check runs unbounded on the worker's event loop (a server's pattern "^(a|a)+$"
    against 45 characters froze every activity of the worker for days). What the server says
    is its own business; xsky bounds the answer's size and hands it to the model."""
    client.session.validate_tool_result = _no_output_check  # type: ignore[method-assign]
    return client


async def _stdio(
    stack: AsyncExitStack, launch: Launch, place: Place, record: Record, tail: StderrTail
) -> Client:
    import mcp_types
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    argv = [launch.command, *launch.args]
    env: dict[str, str] | None = None
    env_folder: Path | None = None
    c = place.confinement
    if c is None:
        argv, env = liveness.own_namespace(argv), launch.env  # unconfined: as the worker's user
    else:
        problem = bwrap.ready(c.sandbox_user)
        if problem is not None:
            raise McpConfigError(
                f"MCP server {launch.name} cannot start: the OS sandbox every server runs in cannot start: {problem}"
            )
        if place.command_network is not None:
            socket = await stack.enter_async_context(
                egress.serving(place.command_network, record, unix=True)
            )
            c = replace(c, proxy_socket=Path(socket))
        if launch.env:
            folder = _env_file(launch.env, bwrap.identity(c.sandbox_user))
            stack.callback(shutil.rmtree, folder, True)
            c = replace(c, readable=(*c.readable, folder))
            argv = ["/bin/sh", "-c", _WITH_ENV, str(folder / "env"), *argv]
            env_folder = folder
        cgroup = limits.attempt_cgroup(c.limits)
        if cgroup is not None:
            stack.callback(cgroup.remove)
            # Frozen while its workspace is snapshotted; let go once killed, before removed.
            stack.callback(freeze.register(place.workspace, cgroup))
            stack.callback(cgroup.kill)
        argv = bwrap.command(argv, replace(c, protected=bwrap.protected_paths(c.workspace)), cgroup)
    stack.callback(tail.close)
    await tail.start()
    params = StdioServerParameters(
        command=argv[0], args=argv[1:], env=env, cwd=str(place.workspace)
    )
    root = mcp_types.Root.model_validate(
        {"uri": place.workspace.resolve().as_uri(), "name": "workspace"}
    )

    async def roots(context: ClientRequestContext) -> mcp_types.ListRootsResult:
        return mcp_types.ListRootsResult(roots=[root])

    _capped_lines()
    client = Client(
        stdio_client(params, errlog=tail.writer),
        client_info=_client_info(),
        list_roots_callback=roots,
        cache=None,
    )
    try:
        await stack.enter_async_context(client)
    finally:
        tail.spawned()
    _unvalidated(client)
    if env_folder is not None:  # the server has read it: no later process of the sandbox can
        shutil.rmtree(env_folder, ignore_errors=True)
    return client


# One message a stdio server may send, in characters: a little over the largest answer xsky
# keeps (activities/mcp/results.py), so such an answer is still refused with its size.
MAX_LINE_CHARS = 40 * 1024 * 1024


def line_so_far(chunk: AnyStr, newline: AnyStr, before: int) -> int:
    """How long the line being read is after ``chunk``: what follows its last newline, or
    ``before`` and all of it when it holds none."""
    end = chunk.rfind(newline)
    return len(chunk) - end - 1 if end >= 0 else before + len(chunk)


def _capped_lines() -> None:
    """The SDK's stdio reader, its lines bounded: it joins a line's pieces as they come, with no
    limit (a sandboxed server streaming one line of 512 MiB aborted the worker, and the joins
    alone took 20 s of the worker's CPU at 64 MiB). A line over MAX_LINE_CHARS ends the session
    — the call fails as a server that went away does — before it is held whole."""
    import mcp.client.stdio as sdk_stdio
    from anyio import BrokenResourceError
    from anyio.streams.text import TextReceiveStream

    if getattr(sdk_stdio.TextReceiveStream, "capped", False):
        return

    class CappedText(TextReceiveStream):
        capped = True
        since_newline = 0

        async def receive(self) -> str:
            chunk = await super().receive()
            self.since_newline = line_so_far(chunk, "\n", self.since_newline)
            if self.since_newline > MAX_LINE_CHARS:
                # the pipe closed first: the SDK drains what is left before it lets the session
                # go, and would read the rest of the line (the server writing on, for ever)
                await self.transport_stream.aclose()
                raise BrokenResourceError(
                    f"an MCP server sent a message of more than {MAX_LINE_CHARS:,} characters"
                )
            return chunk

    sdk_stdio.TextReceiveStream = CappedText  # type: ignore[misc]


class _CappedBody(httpx2.AsyncByteStream):
    """A response body whose lines (an SSE event's, or a JSON answer's one line) end within
    MAX_LINE_CHARS bytes: past that the read fails, before the SDK holds the message whole."""

    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        since_newline = 0
        async for chunk in self.inner:
            since_newline = line_so_far(chunk, b"\n", since_newline)
            if since_newline > MAX_LINE_CHARS:
                raise httpx2.ReadError(
                    f"an MCP server sent a message of more than {MAX_LINE_CHARS:,} bytes"
                )
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class _CappedTransport(httpx2.AsyncBaseTransport):
    """An HTTP MCP server's answers, each message bounded as a stdio server's lines are (a body
    of 512 MiB, read whole by the SDK, aborted the worker)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_CappedBody(response.stream),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def _env_file(env: dict[str, str], who: bwrap.Identity) -> Path:
    """A folder holding ``env`` as a shell file only the sandbox user (and root) may read."""
    folder = Path(tempfile.mkdtemp(prefix="xsky-mcp-env-"))
    lines = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
    path = folder / "env"
    path.write_text(lines, encoding="utf-8")
    path.chmod(0o400)
    folder.chmod(0o700)
    if who.drop:
        os.chown(path, who.uid, who.gid)
        os.chown(folder, who.uid, who.gid)
    return folder


def unwrap(error: BaseException) -> BaseException:
    """The first error inside (anyio's) exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error
