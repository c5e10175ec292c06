"""The MCP servers a worker may start, and their configurations with ``${VAR}`` resolved.

The worker's user settings (``mcpServers``) are trusted as they are. A project's servers —
its ``.xsky/settings.json`` and its ``.mcp.json``, files an agent may have written — are used
only when the user's settings enable them by name (``enabledMcpjsonServers``, or
``enableAllProjectMcpServers``; ``disabledMcpjsonServers`` wins), as Claude Code asks before it
starts a project's servers; a broken project file is logged and skipped, never fatal. Of two
servers with one name, the user's wins.

References are resolved from the worker's own environment (its secrets included:
:mod:`activities.sandbox.secrets`) only when a server starts; ``${XSKY_WORKSPACE}`` is the
run's workspace. A missing variable is an error naming it, never a value. Every value a
reference resolves to is scrubbed from what the worker writes from then on.

A project's server is enabled by name, but what it gets is not the project's to choose:
each ``${VAR}`` of it resolves only when the user's settings grant that variable to that
server (``mcpServerGrants.<name>.secrets``), and an HTTP one's URL must be at a host they
grant it (``mcpServerGrants.<name>.hosts``) — the only hosts its egress policy lets through
(:meth:`activities.mcp.launch.Place.for_entry`). Otherwise a project file an agent wrote
could send the worker's token anywhere once a person enabled the server's name.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from activities.sandbox import secrets
from xsky.config import Settings
from xsky.security.addresses import blocked_host
from xsky.security.mcp import WORKSPACE_VAR, McpServerSpec, MissingVariable, expand
from xsky.security.rules import url_host, url_port
from xsky.settings_files import (
    McpServerGrant,
    SettingsError,
    SettingsFile,
    SettingsLayer,
    parse_mcp_json,
    parse_settings,
    worker_layers,
)

log = logging.getLogger("xsky.mcp")
_LOGGED: set[str] = set()  # broken project files already logged


class McpConfigError(Exception):
    """A server cannot be used as configured; the message says what to change."""


@dataclass(frozen=True)
class ServerEntry:
    """One configured server: where it was configured, and whether this worker uses it."""

    name: str
    spec: McpServerSpec
    source: str  # "user settings (/home/you/.xsky/settings.json)", "project .mcp.json (…)"
    enabled: bool = True
    why_not: str = ""  # what to set, when it is not enabled
    project: bool = False  # from a project's file: it gets only what the grant gives it
    grant: McpServerGrant = field(default_factory=McpServerGrant)
    user_settings: str = ""  # the worker's settings file, where a grant is added

    @property
    def digest(self) -> str:
        return self.spec.digest()

    def grant_hint(self, kind: str, value: str) -> str:
        """Where the user adds ``value`` to this server's grant (``kind``: secrets or hosts)."""
        return f'add "{value}" to mcpServerGrants.{self.name}.{kind} in {self.user_settings}'


@dataclass(frozen=True)
class Launch:
    """A server's configuration with its references resolved: it holds secrets, so it is never
    logged, shown or stored (its repr leaves them out)."""

    name: str
    transport: str
    digest: str
    shown: str  # the command or URL as configured (its references unresolved): for messages
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict, repr=False)
    url: str = field(default="", repr=False)
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    timeout: float | None = None


def configured(
    settings: Settings, layers: list[SettingsLayer] | None = None
) -> dict[str, ServerEntry]:
    """Every server the worker's settings and the project's files name, by name (a worker
    whose user settings cannot be read raises SettingsError, as for every other setting)."""
    layers = worker_layers(settings) if layers is None else layers
    # Which project servers are enabled, and what they are granted, is the user file's word
    # alone: a project layer among ``layers`` never decides it.
    own = next((layer for layer in layers if layer.scope == "user"), None)
    user = own.settings if own is not None else SettingsFile()
    where = own.path if own is not None else str(settings.user_settings)
    found = {
        name: ServerEntry(name, spec, f"user settings ({where})")
        for name, spec in user.mcp_servers.items()
    }
    for path, servers in _project_files(settings):
        for name, spec in servers.items():
            if name in found:
                continue  # the user's own definition of the name wins
            enabled = (
                user.enable_all_project_mcp_servers or name in user.enabled_mcpjson_servers
            ) and name not in user.disabled_mcpjson_servers
            why = (
                ""
                if enabled
                else f"a project's server is used only once the worker's settings ({where}) enable it: add \"{name}\" "
                'to "enabledMcpjsonServers" there'
            )
            found[name] = ServerEntry(
                name,
                spec,
                f"project {path}",
                enabled,
                why,
                project=True,
                grant=user.mcp_server_grants.get(name, McpServerGrant()),
                user_settings=where,
            )
    return found


def _project_files(settings: Settings) -> list[tuple[Path, dict[str, McpServerSpec]]]:
    """The project's servers, from its settings file and then its .mcp.json (readable ones)."""
    out: list[tuple[Path, dict[str, McpServerSpec]]] = []
    project = settings.project_dir
    for path, parse in (
        (project / ".xsky" / "settings.json", lambda t, p: parse_settings(t, p).mcp_servers),
        (project / ".mcp.json", parse_mcp_json),
    ):
        try:
            if path.is_file():
                out.append((path, parse(path.read_text(encoding="utf-8"), str(path))))
        except (OSError, SettingsError) as e:
            if str(path) not in _LOGGED:
                _LOGGED.add(str(path))
                log.warning("ignoring the project's MCP servers in %s: %s", path, e)
    return out


def usable(settings: Settings, name: str, layers: list[SettingsLayer] | None = None) -> ServerEntry:
    """The server ``name``, if this worker may use it; else McpConfigError saying why."""
    servers = configured(settings, layers)
    entry = servers.get(name)
    if entry is None:
        known = ", ".join(sorted(servers)) or "none"
        raise McpConfigError(
            f"no MCP server named {name!r} is configured for this worker (configured: {known}); add it "
            f'to "mcpServers" in the worker\'s settings ({settings.user_settings})'
        )
    if not entry.enabled:
        raise McpConfigError(f"MCP server {name} is not enabled: {entry.why_not}")
    return entry


def resolve(entry: ServerEntry, workspace: Path) -> Launch:
    """The entry's configuration with every ``${VAR}`` resolved (McpConfigError names a missing
    one, and for a project's server one its grant does not give, or a host it does not grant)."""

    def lookup(name: str) -> str | None:
        return str(workspace) if name == WORKSPACE_VAR else secrets.handed_out(name)

    spec = entry.spec
    if entry.project:
        ungranted = [n for n in spec.references() if n not in entry.grant.secrets]
        if ungranted:
            raise McpConfigError(
                f"MCP server {entry.name} ({entry.source}) refers to ${{{ungranted[0]}}}, which a "
                "project's server gets only when the worker's settings grant it: "
                + entry.grant_hint("secrets", ungranted[0])
            )
    try:
        launch = Launch(
            name=entry.name,
            transport=spec.transport,
            digest=entry.digest,
            shown=(spec.url if spec.transport == "http" else spec.command) or "",
            command=expand(spec.command or "", lookup),
            args=tuple(expand(a, lookup) for a in spec.args),
            env={k: expand(v, lookup) for k, v in spec.env.items()},
            url=expand(spec.url or "", lookup),
            headers={k: expand(v, lookup) for k, v in spec.headers.items()},
            timeout=spec.timeout,
        )
    except MissingVariable as e:
        raise McpConfigError(
            f"MCP server {entry.name} ({entry.source}) refers to ${{{e.name}}}, which is not set in the worker's "
            "environment; set it where the worker starts (the value stays on the worker: no run's history "
            "or log holds it)"
        ) from None
    if entry.project and launch.transport == "http":
        _granted_host(entry, launch.url)
    return launch


def _granted_host(entry: ServerEntry, url: str) -> None:
    """A project's HTTP server is at a host its grant names (McpConfigError saying what to add)."""
    host, port = url_host(url), url_port(url)
    for granted, pinned in entry.grant.destinations():
        if host and (host, port) == (granted, pinned):
            return
        if host and pinned is None and (host == granted or host.endswith("." + granted)):
            return
    shown = f"[{host}]" if ":" in host else host
    # A local or private host is granted one port at a time, as --allow-host opens it.
    wanted = f"{shown}:{port}" if port is not None and blocked_host(host) else shown
    raise McpConfigError(
        f"MCP server {entry.name} ({entry.source}) is at {shown or repr(url)}, which a project's server "
        f"may reach only when the worker's settings grant it: {entry.grant_hint('hosts', wanted)}"
    )
