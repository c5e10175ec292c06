"""What a run's current plan says of one agent, read through the run's ``plan`` query."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xsky.errors import PlanError
from xsky.plan.agent_config import tool_name
from xsky.plan.xml import parse_workflow

if TYPE_CHECKING:
    from xsky.client.run import Run

PAGE = 2000  # agents per page of the plan query (its most)


async def direct_tool(run: Run, agent_id: str) -> str | None:
    """The tool the agent's ``<config>`` runs directly (no model: nobody reads a nudge), or
    None for an agent with a model loop (or one the plan no longer holds)."""
    offset = 0
    while True:
        xml = await run.plan(offset=offset, limit=PAGE)
        try:
            agents = parse_workflow(xml).agents
        except PlanError:
            return None  # not ours to judge: the signal goes as it always did
        for agent in agents:
            if agent.id == agent_id:
                return tool_name(agent.config)
        if len(agents) < PAGE:
            return None
        offset += PAGE
