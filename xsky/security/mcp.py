"""Tools from MCP servers, as xsky's policy sees them: names, server configurations, discoveries.

A server's tools appear to agents as ``mcp__<server>__<tool>`` (Claude Code's names), and
rules and roles name them so: ``mcp__fs__read_file`` one tool, ``mcp__fs`` every tool of the
server ``fs``. A tool name a server gives that an OpenAI function name cannot hold (a dot, a
name over 64 characters) is shown with those characters replaced, the real name kept in the
discovery; rules and roles match a tool by either name (:func:`real_name`). A shown name that
is also another tool's name — real or shown — would let a rule written for one decide for the
other, so such a tool is not offered at all (:func:`tool_infos` says why, naming both).

A server is configured in Claude Code's shape — ``{"command": …, "args": […], "env": {…}}``
for a stdio server, ``{"type": "http", "url": …, "headers": {…}}`` for streamable HTTP —
with ``${VAR}`` (or ``${VAR:-default}``) references to the worker's environment, which are
resolved only by the worker, inside an activity (:func:`expand`, given the lookup), so a
secret is never in a workflow's input, its history, a log or an error: errors name the
variable, never its value. ``${XSKY_WORKSPACE}`` is the run's workspace.

A discovery (:class:`McpDiscovery`) is what a server said its tools were: recorded once per
run (or again once the server's ``ttlMs`` has passed), so an agent's tool list never depends
on a live server after the fact.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from xsky.wire import WireModel

PREFIX = "mcp__"
# No '__' inside and no '_' at the end: the first '__' after the prefix must end the server's
# name, or `mcp__a___b` would be server a's tool _b and server a_'s tool b at once.
SERVER_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?![_]|$)){0,31}$")
_TOOL_PART_RE = re.compile(r"^[A-Za-z0-9_-]+$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
MAX_NAME = 64  # an OpenAI function name
WORKSPACE_VAR = "XSKY_WORKSPACE"
_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# -- names -----------------------------------------------------------------------------------


def is_mcp(name: str) -> bool:
    """Does ``name`` name an MCP server or one of its tools (``mcp__…``)?"""
    return name.startswith(PREFIX)


def split(name: str) -> tuple[str, str | None]:
    """(server, tool or None) of ``mcp__server`` / ``mcp__server__tool``; ("", None) otherwise."""
    if not is_mcp(name):
        return "", None
    server, sep, tool = name[len(PREFIX) :].partition("__")
    return server, (tool if sep else None)


def entry_problem(name: str) -> str | None:
    """Why ``name`` is not a server or tool name a role or a rule may hold (None when it is)."""
    server, tool = split(name)
    if not SERVER_RE.match(server):
        return (
            f"{name!r} does not name an MCP server: write mcp__<server> or mcp__<server>__<tool>, "
            "the server's name letters, digits, '-' or '_' (no '__'), e.g. mcp__github"
        )
    if tool is not None and not _TOOL_PART_RE.match(tool):
        return f"{name!r} does not name a tool of server {server}: write mcp__{server}__<tool>, e.g. mcp__{server}__search"
    return None


def is_tool_name(name: str) -> bool:
    """A whole tool name, ``mcp__server__tool`` (what a direct ``<config>`` may call)."""
    return is_mcp(name) and entry_problem(name) is None and split(name)[1] is not None


def covers(entry: str, name: str) -> bool:
    """Does a role's or rule's ``entry`` hold the tool ``name``: itself, or its whole server?"""
    if entry == name:
        return True
    server, tool = split(entry)
    held, held_tool = split(name)
    return bool(server) and tool is None and held == server and held_tool is not None


def holds(entries: Iterable[str], name: str) -> bool:
    return any(covers(e, name) for e in entries)


def exposed_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>`` as an OpenAI function may be named: characters it cannot hold
    become ``_``; a name too long ends in a digest of the whole."""
    base = f"{PREFIX}{server}__{_UNSAFE.sub('_', tool)}"
    if len(base) <= MAX_NAME:
        return base
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{base[: MAX_NAME - 9]}_{digest}"


def real_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>`` with the server's own name for the tool, as a rule naming
    what runs would write it (a rule may hold a name a function name cannot)."""
    return f"{PREFIX}{server}__{tool}"


# -- configuration ---------------------------------------------------------------------------


class McpServerSpec(WireModel):
    """One entry of ``mcpServers``, as written (its ``${VAR}`` references unresolved)."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["stdio", "http", "streamable-http", "sse"] | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    # Seconds one tool call may take (None: the agent attempt's own timeout bounds it).
    timeout: float | None = Field(None, gt=0, le=86400)

    @model_validator(mode="after")
    def _shape(self) -> McpServerSpec:
        if self.type == "sse":
            raise ValueError(
                "the SSE transport is deprecated and xsky does not speak it; the server's streamable "
                'HTTP endpoint works with "type": "http" (usually the same URL ending in /mcp)'
            )
        if self.transport == "http":
            if not self.url or not self.url.lower().startswith(("http://", "https://")):
                raise ValueError('an HTTP server needs "url": "https://…/mcp"')
            if self.command or self.args or self.env:
                raise ValueError(
                    'an HTTP server takes "url" and "headers", not command, args or env'
                )
        else:
            if not self.command or not self.command.strip():
                raise ValueError(
                    'a stdio server needs "command" (e.g. "npx") and its "args"; an HTTP server needs '
                    '"type": "http" and "url"'
                )
            if self.url or self.headers:
                raise ValueError("a stdio server takes command, args and env, not url or headers")
            bad = [k for k in self.env if not ENV_NAME.match(k)]
            if bad:
                raise ValueError(
                    f"env name {bad[0]!r} is not a variable name (letters, digits and '_', not starting with a digit)"
                )
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "http" if self.type in ("http", "streamable-http") or self.url else "stdio"

    def digest(self) -> str:
        """Names this configuration as written (references unresolved: no secret in it)."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def references(self) -> list[str]:
        """The environment variables it names, in order (``XSKY_WORKSPACE`` aside)."""
        texts = [self.command or "", *self.args, *self.env.values(), self.url or ""]
        texts += list(self.headers.values())
        found = [m.group(1) for t in texts for m in _REF.finditer(t)]
        return list(dict.fromkeys(n for n in found if n != WORKSPACE_VAR))


class MissingVariable(ValueError):
    """A ``${VAR}`` reference without a value (and without a default)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def expand(text: str, lookup: Callable[[str], str | None]) -> str:
    """``text`` with each ``${VAR}`` replaced by ``lookup(VAR)`` (``${VAR:-default}``: the
    default when it has none); raises MissingVariable naming the first one without a value."""

    def one(m: re.Match[str]) -> str:
        value = lookup(m.group(1))
        if value is None or value == "":
            if m.group(2) is not None:
                return m.group(2)
            raise MissingVariable(m.group(1))
        return value

    return _REF.sub(one, text)


# -- discovery -------------------------------------------------------------------------------


class McpToolInfo(WireModel):
    """One tool, as its server listed it."""

    name: str  # as agents, rules and roles see it: mcp__<server>__<tool>
    tool: str  # the server's own name for it
    title: str | None = None
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    read_only: bool = False  # readOnlyHint: it changes nothing
    destructive: bool = False  # destructiveHint (and not read-only): it may destroy something
    # idempotentHint (and not read-only): called again with the same arguments, it does nothing
    # more (a call in doubt may simply run again: xsky/security/idempotence.py)
    idempotent: bool = False

    @property
    def hint(self) -> Hint | None:
        return "read_only" if self.read_only else "destructive" if self.destructive else None


Hint = Literal["read_only", "destructive"]


# How tools are named and refused (:func:`tool_infos`); a record made by an older way (0: a
# clashing name got a digest, so a rule could name another tool than the one that ran) is
# not used: the server is discovered again.
NAMING = 1


class McpDiscovery(WireModel):
    """What one server said it offers, recorded once per run (or per its ``ttlMs``)."""

    server: str
    config_digest: str  # the configuration it was made with: another one rediscovers
    tools: list[McpToolInfo] = Field(default_factory=list)
    # Tools it listed that are not offered, each with the sentence saying why.
    refused: list[str] = Field(default_factory=list)
    naming: int = 0
    resources: bool = False  # it offers resources (read through mcp_list / mcp_read)
    prompts: bool = False
    protocol: str = ""
    ttl_ms: int | None = None  # the server's own word on how long the list holds
    discovered_at: float = 0.0  # seconds since the epoch

    def fresh(self, now: float, digest: str) -> bool:
        """Still the list to use: the same configuration, and within the server's ttlMs when it
        gave one (none, or 0: for the whole run)."""
        if digest != self.config_digest or self.naming != NAMING:
            return False
        return not self.ttl_ms or now < self.discovered_at + self.ttl_ms / 1000


def tool_infos(server: str, tools: Iterable[dict[str, Any]]) -> tuple[list[McpToolInfo], list[str]]:
    """A server's ``tools/list`` entries (as JSON) under the names agents see, and a sentence
    for each tool not offered: one whose shown name is another tool's real or shown name
    (whatever order the server lists them in), or a name it listed twice."""
    listed = [t for t in tools if isinstance(t.get("name"), str)]
    shown = {str(t["name"]): exposed_name(server, str(t["name"])) for t in listed}
    infos: list[McpToolInfo] = []
    refused: list[str] = []
    seen: set[str] = set()
    if len(listed) > MAX_TOOLS:  # every tool is in every model request: a bound on them all
        refused.append(
            f"MCP server {server}: {len(listed) - MAX_TOOLS} of its {len(listed)} tools are not "
            f"offered: a server's first {MAX_TOOLS} are"
        )
        listed = listed[:MAX_TOOLS]
    for t in listed:
        tool = str(t["name"])
        size = len(json.dumps(t.get("inputSchema") or {}, default=str))
        if size > MAX_SCHEMA:
            # the schema's own descriptions go to the model whole, on every turn: the
            # description's cap would mean nothing beside an unbounded schema
            refused.append(
                f"MCP server {server}: its tool {tool!r} is not offered: its input schema is "
                f"{size:,} characters, more than {MAX_SCHEMA:,}"
            )
            continue
        fanned = schema_fanout(t.get("inputSchema") or {})
        if fanned is not None:
            refused.append(f"MCP server {server}: its tool {tool!r} is not offered: {fanned}")
            continue
        if tool in seen:
            refused.append(
                f"MCP server {server} lists its tool {tool!r} twice: only the first is offered"
            )
            continue
        seen.add(tool)
        clash = _clash(server, tool, shown)
        if clash is not None:
            refused.append(clash)
            continue
        annotations = t.get("annotations") or {}
        # Both hints set: the stricter holds (a server's word that it only reads is a default,
        # and one that contradicts itself earns none)
        destructive = annotations.get("destructiveHint") is True
        read_only = annotations.get("readOnlyHint") is True and not destructive
        schema = t.get("inputSchema") or {}
        infos.append(
            McpToolInfo(
                name=shown[tool],
                tool=str(t["name"]),
                title=t.get("title") or annotations.get("title"),
                description=str(t.get("description") or ""),
                input_schema=schema if isinstance(schema, dict) else {},
                output_schema=t.get("outputSchema"),
                read_only=read_only,
                destructive=destructive,
                idempotent=annotations.get("idempotentHint") is True and not read_only,
            )
        )
    return infos, refused


def _clash(server: str, tool: str, shown: dict[str, str]) -> str | None:
    """Why ``tool`` cannot be named unambiguously (None when it can). A tool shown by its own
    name keeps it; one shown by a changed name loses it to any tool named so, really or
    shown: neither the order of the list nor the server decides what a rule means."""
    name = shown[tool]
    if name == real_name(server, tool):
        return None
    for other, other_shown in shown.items():
        if other != tool and name in (real_name(server, other), other_shown):
            return (
                f"MCP server {server}: its tool {tool!r} is not offered, as its name for agents and "
                f"rules, {name}, is also the name of its tool {other!r} — a rule could not tell "
                "them apart; give one of them another name in the server"
            )
    return None


MAX_SCHEMA_NODES = 20_000  # parts of an input schema with its $refs followed (a check walks them)


def schema_fanout(schema: Any) -> str | None:
    """Why checking arguments against ``schema`` could take for ever, or None: the schema, each
    ``$ref`` counted as the parts it stands for, is more than MAX_SCHEMA_NODES parts — a chain
    of definitions each ``allOf`` two references to the next doubles per level (1.2 KB took
    months to check). A reference back into itself (a recursive filter, "any JSON value") is
    counted once: a check of it goes only as deep as the arguments do."""
    sizes: dict[str, int] = {}  # a $ref target's parts, once counted
    active: set[str] = set()  # targets being counted (a reference back to one: a cycle)

    def parts(node: Any) -> int:
        if isinstance(node, list):
            return 1 + sum(parts(v) for v in node)
        if not isinstance(node, dict):
            return 1
        total = 1 + sum(parts(v) for k, v in node.items() if k != "$ref")
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#") and ref not in active:
            if ref not in sizes:
                target = _pointer(schema, ref[1:])
                active.add(ref)
                sizes[ref] = parts(target) if target is not None else 1
                active.discard(ref)
            total += sizes[ref]
        return min(total, MAX_SCHEMA_NODES + 1)

    try:
        size = parts(schema)
    except RecursionError:
        size = MAX_SCHEMA_NODES + 1
    if size > MAX_SCHEMA_NODES:
        return (
            f"its input schema, its $refs followed, has more than {MAX_SCHEMA_NODES:,} parts "
            "(a check of a call's arguments would not end)"
        )
    return None


def _pointer(document: Any, pointer: str) -> Any:
    """The part of ``document`` a JSON pointer names (``/$defs/a``), or None."""
    node = document
    for raw in pointer.split("/")[1:] if pointer else []:
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


MAX_DESCRIPTION = 1024
MAX_SCHEMA = 16_384  # characters of a tool's input schema as JSON
MAX_TOOLS = 256  # tools offered of one server


def function(info: McpToolInfo) -> dict[str, Any]:
    """The OpenAI function-tool definition of one MCP tool: the server's own JSON schema."""
    schema = dict(info.input_schema) or {}
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    schema.pop("$schema", None)
    text = info.description or info.title or f"tool {info.tool} of MCP server {split(info.name)[0]}"
    return {
        "type": "function",
        "function": {
            "name": info.name,
            "description": text[:MAX_DESCRIPTION],
            "parameters": schema,
        },
    }
