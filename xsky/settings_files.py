"""The settings files (settings.json): roles, rules, the mode, the sandbox and more, in two layers.

One file configures several parts of xsky — security (roles, rules, the mode, the sandbox,
MCP servers), the skill pipeline (its transcript sources) and budgets (models' prices) — so
this module stands above the core's packages it reads for (:mod:`xsky.security`,
:mod:`xsky.skills`, :mod:`xsky.plan`), and none of them reads it.

``~/.xsky/settings.json`` (the user's; ``XSKY_USER_SETTINGS`` names another file) and
``<project>/.xsky/settings.json`` (the project's; later wins). The format follows LingXiao's::

    {
      "roles": {"perf": {"description": "…", "systemPrompt": "…", "allowedTools": ["file_read"],
                         "requestedTools": ["shell"], "skillNames": ["profiling"], "suggestedModel": "…"}},
      "permissions": {"allow": ["shell(git log:*)"], "ask": ["file_write(src/**)"], "deny": ["shell(rm:*)"]},
      "security": {"permission_mode": "default", "sandbox": "on", "limits": {"memory": "2GiB"}},
      "mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]}},
      "enabledMcpjsonServers": ["github"],
      "mcpServerGrants": {"github": {"secrets": ["GITHUB_TOKEN"], "hosts": ["api.githubcopilot.com"]}}
    }

MCP servers (``mcpServers``, Claude Code's shape: :mod:`xsky.security.mcp`) come from the user
file; a project's (its ``.xsky/settings.json`` or its ``.mcp.json``) is used only when the
user's file enables it by name (``enabledMcpjsonServers``, or ``enableAllProjectMcpServers``),
as Claude Code asks before it uses a project's servers. What a project's server gets is the
user file's word too (``mcpServerGrants``, xsky's own key): the worker's secrets its
``${VAR}`` references may resolve to, and the hosts it may reach — a file an agent may have
written never chooses which secret goes where.

**Who reads which layer.** A worker decides with its user layer only (:func:`worker_layers`):
roles, rules, the mode, the sandbox and its limits are security, and a project folder is a
place an agent may have written (a worker started inside a workspace, a project a run
shared). The starter reads both layers for what helps a person plan — role names and
descriptions, rules shown by ``starter.py permissions`` — but what a worker lets happen is
never widened by a project's file: a role only the project defines is a role the worker
does not know (its privileged tools are asked for), and the project's rules do not count.

A file with bad JSON or an unknown field is an error naming the file, the line and the
field — never silently ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator

from xsky.config import Settings, load_settings
from xsky.plan.budget import Price
from xsky.security.allow_hosts import host_rule
from xsky.security.mcp import ENV_NAME, SERVER_RE, McpServerSpec
from xsky.security.permissions import (
    PermissionLayer,
    PermissionMode,
    PermissionSettings,
    domain,
    rule_problems,
)
from xsky.skills.kinds import SourceKind
from xsky.wire import WireModel


class _Strict(WireModel):
    model_config = ConfigDict(extra="forbid")


class SettingsRole(_Strict):
    description: str | None = None
    system_prompt: str | None = None
    allowed_tools: list[str] | None = None
    requested_tools: list[str] | None = None
    skill_names: list[str] | None = None
    suggested_model: str | None = None


class PermissionRules(_Strict):
    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    # Calls the leader may approve in a person's place (allow-rule grammar). Read from the
    # leader worker's own user settings only, like every security setting.
    delegate: list[str] = Field(default_factory=list)
    # Calls that must not run again unasked when a worker died during them (allow-rule
    # grammar; xsky/security/idempotence.py): a person decides whether to repeat them.
    effects: list[str] = Field(default_factory=list)


class LimitsSettings(WireModel):
    """Per sandboxed command (activities/sandbox/limits.py has the defaults and their reasons).
    Sizes are bytes or text such as "2GiB", "512MiB"."""

    model_config = ConfigDict(extra="forbid", alias_generator=None, populate_by_name=True)
    memory: int | str | None = None
    processes: int | None = Field(None, ge=8, le=1_000_000)
    cpu_weight: int | None = Field(None, ge=1, le=10000)
    open_files: int | None = Field(None, ge=64, le=1_048_576)
    file_size: int | str | None = None
    disk: int | str | None = None
    tmp: int | str | None = None
    disk_reserve: int | str | None = None
    browser_memory: int | str | None = None


class SecuritySettings(WireModel):
    model_config = ConfigDict(extra="forbid", alias_generator=None, populate_by_name=True)
    permission_mode: PermissionMode = "default"
    # "off" runs tools unconfined: never the default, always reported.
    sandbox: Literal["on", "off"] = "on"
    # The unprivileged uid (or system user) a root worker's sandboxes run as.
    sandbox_user: int | str | None = None
    # Folders (outside the system's program folders) sandboxes may read: a toolchain in /opt.
    read_only_paths: list[str] = Field(default_factory=list)
    # Named roots a run's workspace may be in: {"projects": "/srv/xsky-projects"}.
    workspace_roots: dict[str, str] = Field(default_factory=dict)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)


class SkillSourceSetting(_Strict):
    kind: SourceKind
    path: str | None = None  # None: the kind's usual place


class SkillsSettings(_Strict):
    sources: list[SkillSourceSetting] | None = None


class PriceSetting(_Strict):
    input: float = Field(ge=0, allow_inf_nan=False)  # USD per million input tokens
    output: float = Field(ge=0, allow_inf_nan=False)  # USD per million output tokens


def _server_names(servers: dict[str, McpServerSpec]) -> dict[str, McpServerSpec]:
    for name in servers:
        if not SERVER_RE.match(name):
            raise ValueError(
                f"MCP server name {name!r} is not valid: letters, digits, '-' or '_' (no '__', none "
                "at the end), at most 32, as its tools are named mcp__<server>__<tool>"
            )
    return servers


class McpServerGrant(_Strict):
    """What the user's settings give one project server (of ``.mcp.json`` or the project's
    settings): the worker's secrets its ``${VAR}`` references may resolve to, and the hosts it
    may reach (``HOST`` or ``HOST:PORT``, as ``--allow-host`` takes them; a local or private
    host with its port)."""

    secrets: list[str] = Field(default_factory=list)
    hosts: list[str] = Field(default_factory=list)

    @field_validator("secrets")
    @classmethod
    def _secret_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not ENV_NAME.match(name):
                raise ValueError(
                    f"{name!r} is not a variable name: give the name a ${{VAR}} reference uses "
                    '(letters, digits and "_"), e.g. "GITHUB_TOKEN"'
                )
        return names

    @field_validator("hosts")
    @classmethod
    def _host_names(cls, hosts: list[str]) -> list[str]:
        for host in hosts:
            host_rule(host)  # ValueError: how to write it
        return hosts

    def destinations(self) -> list[tuple[str, int | None]]:
        """Each granted host (lower case, an IPv6 address without brackets) and its port or None."""
        return [domain(f"domain:{text.strip()}") for text in self.hosts]

    def patterns(self) -> list[str]:
        """The granted hosts as egress-policy patterns: ``host`` or ``host:port``."""
        return [
            (f"[{host}]" if ":" in host else host) + ("" if port is None else f":{port}")
            for host, port in self.destinations()
        ]


def _grant_names(grants: dict[str, McpServerGrant]) -> dict[str, McpServerGrant]:
    for name in grants:
        if not SERVER_RE.match(name):
            raise ValueError(
                f"MCP server name {name!r} is not valid: letters, digits, '-' or '_' (no '__'), at most 32"
            )
    return grants


class SettingsFile(_Strict):
    roles: dict[str, SettingsRole] = Field(default_factory=dict)
    permissions: PermissionRules = Field(default_factory=PermissionRules)
    security: SecuritySettings | None = None
    skills: SkillsSettings | None = None
    # model → its price: what agents' usd is computed with (budgets, docs/budgets.md)
    prices: dict[str, PriceSetting] = Field(default_factory=dict)
    mcp_servers: dict[str, McpServerSpec] = Field(default_factory=dict)
    # Which servers of the project's files (.mcp.json, .xsky/settings.json) a worker may use:
    # read from the user's file only (Claude Code's names).
    enabled_mcpjson_servers: list[str] = Field(default_factory=list)
    disabled_mcpjson_servers: list[str] = Field(default_factory=list)
    enable_all_project_mcp_servers: bool = False
    # What each project server gets (read from the user's file only): secrets and hosts.
    mcp_server_grants: dict[str, McpServerGrant] = Field(default_factory=dict)

    _names = field_validator("mcp_servers")(_server_names)
    _grants = field_validator("mcp_server_grants")(_grant_names)


class McpJsonFile(_Strict):
    """A project's ``.mcp.json``, as Claude Code writes it."""

    mcp_servers: dict[str, McpServerSpec] = Field(default_factory=dict)

    _names = field_validator("mcp_servers")(_server_names)


class SettingsError(ValueError):
    def __init__(self, path: str, line: int, column: int, message: str):
        self.path, self.line, self.column = path, line, column
        super().__init__(f"{path}:{line}:{column}: {message}")


@dataclass(frozen=True)
class SettingsLayer:
    path: str
    scope: Literal["user", "project"]
    settings: SettingsFile


def _locate(text: str, loc: tuple[Any, ...]) -> tuple[int, int]:
    """Line and column of the key a validation error points at, found by walking the path."""
    at = 0
    for part in loc:
        if isinstance(part, int):
            continue
        found = text.find(f'"{part}"', at)
        if found < 0:
            break
        at = found
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1


_KNOWN = {
    "": "roles, permissions, security, skills, prices, mcpServers, enabledMcpjsonServers, "
    "disabledMcpjsonServers, enableAllProjectMcpServers, mcpServerGrants",
    "prices": "input, output (USD per million tokens)",
    "roles": "description, systemPrompt, allowedTools, requestedTools, skillNames, suggestedModel",
    "permissions": "allow, ask, deny, delegate, effects",
    "security": "permission_mode, sandbox, sandbox_user, read_only_paths, workspace_roots, limits",
    "limits": "memory, processes, cpu_weight, open_files, file_size, disk, tmp, disk_reserve, browser_memory",
    "skills": "sources (each: kind, path)",
    "mcpServers": "type, command, args, env (stdio); type, url, headers (http); timeout",
    "mcpServerGrants": "secrets (variable names), hosts (HOST or HOST:PORT)",
}


def _validated(model: type[_Strict], text: str, path: str, shape: str) -> Any:
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as e:
        raise SettingsError(path, e.lineno, e.colno, f"not valid JSON: {e.msg}") from None
    if not isinstance(data, dict):
        raise SettingsError(path, 1, 1, f"the settings must be a JSON object: {shape}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err["loc"])
        line, col = _locate(text, loc)
        dotted = ".".join(str(p) for p in loc)
        if err["type"] == "extra_forbidden":
            if len(loc) <= 1 and model is McpJsonFile:
                known = "mcpServers"
            else:
                known = _KNOWN[_section(loc)]
            raise SettingsError(
                path, line, col, f"unknown field {loc[-1]!r} at {dotted}; known here: {known}"
            ) from None
        message = str(err["msg"]).removeprefix("Value error, ")
        raise SettingsError(path, line, col, f"{dotted}: {message}") from None


def parse_mcp_json(text: str, path: str) -> dict[str, McpServerSpec]:
    """A project's ``.mcp.json``: ``{"mcpServers": {name: server}}``."""
    found: McpJsonFile = _validated(McpJsonFile, text, path, '{"mcpServers": {…}}')
    return found.mcp_servers


def parse_settings(text: str, path: str) -> SettingsFile:
    settings: SettingsFile = _validated(
        SettingsFile, text, path, '{"roles": {…}, "permissions": {…}}'
    )
    for effect in ("allow", "ask", "deny", "delegate", "effects"):
        for rule in getattr(settings.permissions, effect):
            problems = rule_problems([rule])
            if problems:
                line, col = _locate_value(text, rule)
                raise SettingsError(path, line, col, f"permissions.{effect}: {problems[0]}")
    return settings


def _locate_value(text: str, value: str) -> tuple[int, int]:
    at = max(text.find(json.dumps(value)), 0)
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def _section(loc: tuple[Any, ...]) -> str:
    if len(loc) <= 1:
        return ""
    if loc[0] == "security" and len(loc) > 2 and loc[1] == "limits":
        return "limits"
    if loc[0] in ("mcpServers", "mcpServerGrants"):
        return str(loc[0])
    return str(loc[0]) if loc[0] in ("roles", "permissions", "security", "skills", "prices") else ""


def settings_paths(config: Settings | None = None) -> list[tuple[Literal["user", "project"], Path]]:
    """Where settings live: XSKY_USER_SETTINGS or ~/.xsky/settings.json; XSKY_PROJECT_DIR or ./.xsky/settings.json."""
    config = config or load_settings()
    return [
        ("user", config.user_settings),
        ("project", config.project_dir / ".xsky" / "settings.json"),
    ]


def load_layers(config: Settings | None = None) -> list[SettingsLayer]:
    """The settings files that exist, user first; a broken one raises SettingsError."""
    layers = []
    for scope, path in settings_paths(config):
        if path.is_file():
            layers.append(
                SettingsLayer(
                    str(path), scope, parse_settings(path.read_text(encoding="utf-8"), str(path))
                )
            )
    return layers


def worker_layers(config: Settings | None = None) -> list[SettingsLayer]:
    """The settings a worker decides security with: its user's file alone, never a project's
    (see the module docstring). A broken user file raises SettingsError; a project file is
    not even read, so a planted broken one cannot stop the worker either."""
    config = config or load_settings()
    path = config.user_settings
    if not path.is_file():
        return []
    return [
        SettingsLayer(
            str(path), "user", parse_settings(path.read_text(encoding="utf-8"), str(path))
        )
    ]


def project_security_fields(config: Settings | None = None) -> list[str]:
    """What a project's settings file says about security, which a worker ignores (for its log)."""
    config = config or load_settings()
    path = config.project_dir / ".xsky" / "settings.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict):
        return []
    return [key for key in ("roles", "permissions", "security") if data.get(key)]


def role_layers(layers: list[SettingsLayer]) -> list[dict[str, dict[str, Any]]]:
    """Each layer's roles as partial field dicts (only the fields the file sets)."""
    return [
        {
            name: role.model_dump(by_alias=False, exclude_none=True)
            for name, role in layer.settings.roles.items()
        }
        for layer in layers
    ]


def permission_mode(layers: list[SettingsLayer]) -> PermissionMode:
    """The mode of the last layer that sets one (project over user); default otherwise."""
    mode: PermissionMode = "default"
    for layer in layers:
        if (
            layer.settings.security is not None
            and "permission_mode" in layer.settings.security.model_fields_set
        ):
            mode = layer.settings.security.permission_mode
    return mode


def sandbox_mode(layers: list[SettingsLayer]) -> Literal["on", "off"]:
    """``off`` only when a settings file says so (the project's word over the user's)."""
    mode: Literal["on", "off"] = "on"
    for layer in layers:
        if (
            layer.settings.security is not None
            and "sandbox" in layer.settings.security.model_fields_set
        ):
            mode = layer.settings.security.sandbox
    return mode


def permission_settings(layers: list[SettingsLayer]) -> PermissionSettings:
    return PermissionSettings(
        layers=[
            PermissionLayer(
                scope=layer.scope,
                path=layer.path,
                allow=layer.settings.permissions.allow,
                ask=layer.settings.permissions.ask,
                deny=layer.settings.permissions.deny,
                effects=layer.settings.permissions.effects,
            )
            for layer in layers
        ],
        mode=permission_mode(layers),
    )


def price_table(layers: list[SettingsLayer]) -> dict[str, Price]:
    """Each model's price from the worker's settings (``prices``; a later layer wins). A
    worker passes its own layer only: a project's file could make spend look free."""
    table: dict[str, Price] = {}
    for layer in layers:
        for model, price in layer.settings.prices.items():
            table[model] = Price(input=price.input, output=price.output)
    return table


def skill_sources(
    layers: list[SettingsLayer],
) -> list[tuple[str, list[tuple[str, str | None]]]] | None:
    """Registered transcript sources per settings file; None when no file mentions any."""
    found: list[tuple[str, list[tuple[str, str | None]]]] = [
        (layer.path, [(s.kind, s.path) for s in layer.settings.skills.sources])
        for layer in layers
        if layer.settings.skills is not None and layer.settings.skills.sources is not None
    ]
    return found or None
