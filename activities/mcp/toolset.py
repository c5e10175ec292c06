"""The MCP tools one agent attempt has: which servers it may use, their tools, and its calls.

An agent gets a server's tools when its role holds them (``mcp__fs`` or ``mcp__fs__read_file``
in allowedTools or requestedTools) or an allow or ask rule of the worker's settings names them
(settings rules count for every role, as for the built-in tools); a tool every rule and the role
deny is not shown at all. Its servers are discovered for the run (``discovery``: once, from
the record after), so the list never depends on a live server; a server is started only when
a call needs it. The servers' annotations feed the gate (destructive → asked by default,
read-only → allowed in permission mode ``plan``), never over a rule.

Every call passes the gate first (a denied call never reaches its server), then its arguments
are checked against the tool's own JSON schema, then the pool sends it. An agent with a server
that has resources or prompts also gets ``mcp_list`` and ``mcp_read`` for them. The gate
knows each tool's real name beside the one shown (``Gate.real_names``), so a rule naming what
runs decides too.

A toolset holds the stdio sessions it uses until :meth:`McpToolset.release`, which the attempt
calls as it ends: its servers end with it, and whatever they started. Everything a
server says reaches the agent scrubbed of the worker's secrets.
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonschema
from mcp.shared.exceptions import MCPError
from temporalio.exceptions import ApplicationError

from activities.mcp import discovery
from activities.mcp.launch import Place
from activities.mcp.pool import McpCallFailed, McpPool, McpUnavailable
from activities.mcp.results import (
    Rendered,
    ResultTooLarge,
    prompt_result,
    resource_result,
    stores,
    tool_result,
)
from activities.mcp.servers import Launch, McpConfigError, ServerEntry, resolve
from activities.sandbox import git_guard, secrets
from activities.tools import ToolError, ToolResult, cap_text
from activities.tools.store_writes import store_write
from xsky.json_schema import bounded_errors, bounded_validator
from xsky.security.mcp import McpDiscovery, McpToolInfo, function, is_mcp, real_name, split
from xsky.security.permissions import rules_of
from xsky.security.roles import RoleCapabilityModel

if TYPE_CHECKING:
    from activities.sandbox.gate import Gate
    from activities.tools import ToolContext

log = logging.getLogger("xsky.mcp")

# A server's progress notes on the board: at most one this often, and this long.
PROGRESS_EVERY = 0.5
PROGRESS_CHARS = 500
GENERIC = ("mcp_list", "mcp_read")
RESULT_CHARS = 30_000  # what the model reads of one result; the whole is stored past it
_SKIPPED: set[str] = set()  # servers a role names that this worker does not run (logged once)


@dataclass
class Server:
    entry: ServerEntry
    launch: Launch
    offer: McpDiscovery
    place: Place  # the attempt's place, a project's server's network narrowed to its grant


def wanted(role: RoleCapabilityModel, gate: Gate, names: list[str]) -> list[str]:
    """The servers (of ``names``) whose tools the role holds or a worker's rule names."""
    held = {split(t)[0] for t in role.allowed_tools + role.requested_tools if is_mcp(t)}
    rules = rules_of(gate.permissions)
    patterns = [r.tool for r in rules["allow"] + rules["ask"] if r.origin == "settings"]
    return [
        n
        for n in names
        if n in held
        or any(
            p == f"mcp__{n}"
            or p.startswith(f"mcp__{n}__")
            or ("*" in p and fnmatch.fnmatchcase(f"mcp__{n}__x", p))
            for p in patterns
        )
    ]


def failure(e: McpConfigError | McpUnavailable) -> ApplicationError:
    """A server the attempt cannot use, as the attempt's error (a configuration's is final)."""
    retryable = isinstance(e, McpUnavailable) and e.retryable
    return ApplicationError(str(e), type=type(e).__name__, non_retryable=not retryable)


class McpToolset:
    """One attempt's MCP servers and tools; it holds the stdio sessions it used until
    :meth:`release`."""

    def __init__(self, ctx: ToolContext, gate: Gate, pool: McpPool):
        self.ctx = ctx
        self.gate = gate
        self.pool = pool
        self.place = Place.of(ctx)
        self.servers: dict[str, Server] = {}
        self.tools: dict[str, tuple[Server, McpToolInfo]] = {}

    @classmethod
    async def prepare(
        cls,
        ctx: ToolContext,
        gate: Gate,
        pool: McpPool,
        entries: dict[str, ServerEntry],
        names: list[str],
    ) -> McpToolset:
        """The servers ``names`` (those configured and enabled), discovered for the run; raises
        ApplicationError when one cannot be used (having released what it started)."""
        toolset = cls(ctx, gate, pool)
        try:
            await toolset._prepare(entries, names)
        except BaseException:
            await toolset.release()
            raise
        return toolset

    async def _prepare(self, entries: dict[str, ServerEntry], names: list[str]) -> None:
        ctx, gate = self.ctx, self.gate
        for name in names:
            entry = entries.get(name)
            if entry is None or not entry.enabled:
                if name not in _SKIPPED:
                    _SKIPPED.add(name)
                    why = entry.why_not if entry else "no such server is configured for this worker"
                    log.warning(
                        "MCP server %s is named by a role or rule but not used: %s", name, why
                    )
                continue
            place = self.place.for_entry(entry)
            try:
                launch = resolve(entry, ctx.workspace)
                offer = await discovery.for_run(
                    ctx.store, ctx.run_id, self.pool, launch, place, gate.network, self
                )
            except (McpConfigError, McpUnavailable) as e:
                raise failure(e) from None
            server = Server(entry, launch, offer, place)
            self.servers[name] = server
            for info in offer.tools:
                if info.hint is not None:
                    gate.hints[info.name] = info.hint
                if info.idempotent:
                    gate.idempotent_mcp.add(info.name)
                real = real_name(name, info.tool)
                if real != info.name:  # rules naming what runs decide too
                    gate.real_names[info.name] = real
                self.tools[info.name] = (server, info)

    async def release(self) -> None:
        """The attempt is done with its servers: a stdio session no other attempt holds is
        closed, its server and every process it started ended, before this returns."""
        await self.pool.release(self)
        if self.servers and not self.ctx.unconfined and self.ctx.workspace.is_dir():
            # Its stdio servers wrote in the workspace as a command does: a git folder one
            # planted (a config that runs a program when a person's git reads it) is swept
            # as a command's is — a shell tool's and a file tool's are after each call.
            notes = await asyncio.to_thread(git_guard.sweep, self.ctx.workspace)
            if notes:
                log.warning("git guard after MCP servers in %s: %s", self.ctx.workspace, notes)

    def expose(self) -> None:
        """Keep the tools the gate would not deny outright; give the agent the generic tools
        when one of its servers has resources or prompts."""
        self.tools = {
            name: found
            for name, found in self.tools.items()
            if self.gate.would(name).effect != "deny"
        }
        used = {server.entry.name for server, _ in self.tools.values()}
        self.servers = {n: s for n, s in self.servers.items() if n in used}
        if any(s.offer.resources or s.offer.prompts for s in self.servers.values()):
            role = self.gate.role
            extra = [t for t in GENERIC if t not in role.allowed_tools]
            self.gate.role = role.model_copy(
                update={"allowed_tools": [*role.allowed_tools, *extra]}
            )

    @property
    def generic(self) -> list[str]:
        return [t for t in GENERIC if t in self.gate.role.allowed_tools] if self.servers else []

    def functions(self) -> list[dict[str, Any]]:
        return [function(info) for _, info in self.tools.values()]

    # -- calls ---------------------------------------------------------------------------------

    async def call(self, name: str, arguments: dict[str, Any]) -> Rendered:
        """One call of an exposed tool (the gate already passed it); raises ToolError."""
        server, info = self.tools[name]
        problem = schema_problem(info.input_schema, arguments)
        if problem is not None:
            raise ToolError(
                f"the arguments of {name} do not fit its schema ({problem}); call it again with valid arguments"
            )

        told = [0.0]

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            # A server's notes, as many as it sends: at most one every PROGRESS_EVERY seconds
            # reaches the board, cut short before it is scrubbed.
            now = time.monotonic()
            if now - told[0] < PROGRESS_EVERY:
                return
            told[0] = now
            of = f"/{total:g}" if total else ""
            note = secrets.scrub((message or "working")[:PROGRESS_CHARS])  # the board shows it
            self.ctx.progress(f"{name}: {note} ({progress:g}{of})")

        try:
            result = await self.pool.call(
                server.launch,
                server.place,
                info.tool,
                arguments,
                record=self.gate.network,
                progress=on_progress,
                holder=self,
            )
        except McpUnavailable as e:
            raise ToolError(str(e), retryable=e.retryable) from None
        except McpCallFailed as e:
            raise ToolError(f"MCP server {server.entry.name}: {e}") from None
        try:
            if not stores(result):
                return tool_result(self.ctx, info.tool, result)
            # (its images and blobs are stored: off the event loop, activities/tools/store_writes.py)
            return await store_write(
                self.ctx, "the MCP tool's result", lambda: tool_result(self.ctx, info.tool, result)
            )
        except ResultTooLarge as e:
            raise ToolError(f"MCP server {server.entry.name}: {e}") from None

    async def answer(self, name: str, arguments: dict[str, Any]) -> str:
        """A call as the model reads it: the result, or ``ERROR: …``; the whole of a long one stored."""
        try:
            rendered = await self.call(name, arguments)
        except ToolError as e:
            return f"ERROR: {e}"
        text = ("ERROR: " if rendered.error else "") + rendered.text
        if len(text) > RESULT_CHARS:
            filename = f"{self.ctx.file_prefix}mcp-{name}-{len(self.ctx.artifacts)}.txt"
            whole = text
            ref = await store_write(
                self.ctx,
                "the MCP tool's whole result",
                lambda: self.ctx.store.put_text(
                    self.ctx.run_id, self.ctx.agent_id, filename, whole
                ),
            )
            self.ctx.artifacts.append(ref)
            text = cap_text(text, RESULT_CHARS, "result")[0] + f"\n[the whole result: {ref.uri}]"
        return text

    async def direct(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """A direct agent's call: its text (a tool's error result fails it, not retried)."""
        rendered = await self.call(name, arguments)
        details: dict[str, Any] = {"server": split(name)[0]}
        if rendered.structured is not None:
            details["structured"] = rendered.structured
        if rendered.error:
            raise ToolError(
                f"{name} answered with an error: {rendered.text[:2000]}", details=details
            )
        return ToolResult(rendered.text, details)

    # -- resources and prompts ---------------------------------------------------------------

    async def listing(self, args: dict[str, Any]) -> str:
        server = self._server(args)
        client = await self._client(server)
        try:
            if args.get("kind") == "prompts":
                prompts = (await client.list_prompts()).prompts
                lines = [
                    f"{p.name}({', '.join(a.name + ('' if a.required else '?') for a in p.arguments or [])})"
                    + (f": {p.description}" if p.description else "")
                    for p in prompts
                ]
                return (
                    secrets.scrub("\n".join(lines))
                    or f"MCP server {server.entry.name} has no prompts"
                )
            resources = (await client.list_resources()).resources
            lines = [
                f"{r.uri} — {r.name}"
                + (f" ({r.mime_type})" if r.mime_type else "")
                + (f": {r.description}" if r.description else "")
                for r in resources
            ]
            return (
                secrets.scrub("\n".join(lines))
                or f"MCP server {server.entry.name} has no resources"
            )
        except MCPError as e:
            raise ToolError(
                secrets.scrub(f"MCP server {server.entry.name} refused the listing: {e}")
            ) from None

    async def read(self, args: dict[str, Any]) -> str:
        server = self._server(args)
        client = await self._client(server)
        try:
            if args.get("uri"):
                uri = args["uri"]
                resource = await client.read_resource(uri)
                return (
                    await store_write(
                        self.ctx,
                        "the MCP resource",
                        lambda: resource_result(self.ctx, uri, resource),
                    )
                ).text
            if args.get("prompt"):
                prompt = args["prompt"]
                got = await client.get_prompt(prompt, args.get("arguments") or {})
                return (
                    await store_write(
                        self.ctx, "the MCP prompt", lambda: prompt_result(self.ctx, prompt, got)
                    )
                ).text
        except MCPError as e:
            raise ToolError(secrets.scrub(f"MCP server {server.entry.name}: {e}")) from None
        raise ToolError("mcp_read needs a 'uri' (a resource) or a 'prompt' (a prompt's name)")

    def _server(self, args: dict[str, Any]) -> Server:
        server = self.servers.get(str(args.get("server", "")))
        if server is None:
            mine = ", ".join(sorted(self.servers)) or "none"
            raise ToolError(
                f"you have no tools of MCP server {args.get('server')!r}; your servers: {mine}"
            )
        return server

    async def _client(self, server: Server) -> Any:
        try:
            session = await self.pool.session(
                server.launch, server.place, self.gate.network, holder=self
            )
        except McpUnavailable as e:
            raise ToolError(str(e), retryable=e.retryable) from None
        return session.client


def schema_problem(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` do not fit a tool's input schema (None when they do, or when the
    server's schema cannot be read: the server then judges them itself)."""
    try:
        kind = jsonschema.validators.validator_for(schema)
        kind.check_schema(schema)
        # a server's patterns matched under time limits: '(a|a)+' would stop the worker
        checked = bounded_validator(schema, kind=kind)
        error = jsonschema.exceptions.best_match(bounded_errors(checked, arguments))
    except (
        jsonschema.exceptions.SchemaError,
        jsonschema.exceptions.UnknownType,
        TypeError,
        ValueError,
        RecursionError,  # a schema whose $refs loop: the server judges the arguments itself
    ):
        return None
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path) or "arguments"
    return f"{where}: {error.message}"
