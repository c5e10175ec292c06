"""The MCP tools a plan's direct agents call, checked against the servers this machine configures.

``starter.py validate`` asks: a direct agent's ``<config>{"tool": "mcp__fs__read_txt_file"}``
has the shape of a tool name, which the plan's own checks see, but only a server knows its
tools. The servers this machine's settings configure are started as ``mcp list`` starts them
(in the OS sandbox, through the egress proxy) and asked for their tools, once each; a tool
none of them has, or a server none configures, is said as a warning at the agent's line, with
the nearest tool. A warning, not a refusal: the workers' settings may differ from this
machine's, and a worker is what decides (it fails such an agent at once, saying the same).
"""

from __future__ import annotations

from activities.mcp.check import check
from activities.mcp.servers import configured
from xsky.config import Settings
from xsky.errors import Problem
from xsky.plan.models import Workflow
from xsky.plan.variables import nearest
from xsky.security.mcp import is_tool_name, split
from xsky.settings_files import SettingsError


async def tool_warnings(
    settings: Settings, workflow: Workflow, timeout: float = 15.0
) -> list[Problem]:
    """A problem per direct agent whose MCP tool this machine's servers do not offer (none
    when the plan calls no MCP tool: no server is started)."""
    calls = [
        (index, agent.id, tool)
        for index, agent in enumerate(workflow.agents)
        if isinstance(tool := (agent.config or {}).get("tool"), str) and is_tool_name(tool)
    ]
    if not calls:
        return []
    try:
        servers = configured(settings)
    except SettingsError as e:
        return [Problem(f"the MCP tools of this plan could not be checked: {e}")]
    wanted = sorted({split(tool)[0] for _, _, tool in calls} & servers.keys())
    enabled = [name for name in wanted if servers[name].enabled]
    found = {c.entry.name: c for c in await check(settings, enabled, timeout)} if enabled else {}
    where = settings.user_settings
    problems = []
    for index, agent_id, tool in calls:
        server = split(tool)[0]
        entry = servers.get(server)
        checked = found.get(server)
        if entry is None:
            known = ", ".join(sorted(servers)) or "none"
            message = (
                f"agent {agent_id}: {tool} is a tool of MCP server {server!r}, which this machine's "
                f"settings do not configure (configured: {known}){nearest(server, servers)}; a "
                f'worker without it fails the agent at once — add it to "mcpServers" in {where}'
            )
        elif checked is None:
            message = f"agent {agent_id}: MCP server {server} is not enabled here: {entry.why_not}"
        elif checked.offer is None:
            message = f"agent {agent_id}: {tool} could not be checked: {checked.error}"
        else:
            tools = [t.name for t in checked.offer.tools]
            if tool in tools:
                continue
            message = (
                f"agent {agent_id}: MCP server {server} has no tool named {tool}"
                f"{nearest(tool, tools)}; its tools are {', '.join(sorted(tools)) or 'none'}"
            )
        problems.append(Problem(message, agent_index=index, agent_id=agent_id))
    return problems
