"""``starter.py mcp list`` and ``mcp check``: the configured servers, started as a worker starts
them — in the OS sandbox with a scratch workspace, through the egress proxy with the worker's
own rules — and asked for their tools."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from activities.mcp import discovery
from activities.mcp.launch import Place
from activities.mcp.pool import McpPool, McpUnavailable
from activities.mcp.servers import McpConfigError, ServerEntry, configured, resolve
from activities.sandbox import egress
from activities.sandbox import workspace as workspaces
from activities.sandbox.confine import confinement_for, sandbox_settings
from xsky.config import Settings
from xsky.security.mcp import McpDiscovery
from xsky.settings_files import permission_settings, worker_layers


@dataclass
class Checked:
    entry: ServerEntry
    offer: McpDiscovery | None = None
    error: str | None = None  # why it could not be used (one sentence)

    @property
    def state(self) -> str:
        if not self.entry.enabled:
            return "disabled"
        return "ok" if self.offer is not None else "failed"


async def check(
    settings: Settings, names: list[str] | None = None, timeout: float = 30.0
) -> list[Checked]:
    """Each server (``names``, or all), connected and asked for its tools; disabled ones are
    only reported. A broken user settings file raises SettingsError."""
    layers = worker_layers(settings)
    servers = configured(settings, layers)
    sandbox = sandbox_settings(layers)
    web, command_network = egress.policies(permission_settings(layers), str(settings.user_settings))
    folder = Path(tempfile.mkdtemp(prefix="xsky-mcp-check-"))
    owner = sandbox.owner
    workspace = workspaces.make(folder / "workspace", *(owner or (None, None)))
    confinement = confinement_for(settings, sandbox, workspace, "mcp-check")
    place = Place(workspace, confinement if sandbox.on else None, command_network, web)
    pool = McpPool(connect_timeout=timeout)
    chosen = [servers[n] for n in names] if names is not None else list(servers.values())
    try:
        return list(await asyncio.gather(*(_one(pool, place, e) for e in chosen)))
    finally:
        await pool.close()
        shutil.rmtree(folder, ignore_errors=True)


async def _one(pool: McpPool, place: Place, entry: ServerEntry) -> Checked:
    if not entry.enabled:
        return Checked(entry, error=entry.why_not)
    try:
        launch = resolve(entry, place.workspace)
        offer = await discovery.discover(pool, launch, place.for_entry(entry), None)
        return Checked(entry, offer=offer)
    except (McpConfigError, McpUnavailable) as e:
        return Checked(entry, error=str(e))
