"""Tool permissions: may this agent make this call? ``allow``, ``ask`` a person, or ``deny``.

This module starts with the role layer (LingXiao): a tool in the role's ``allowedTools``
is allowed, one in ``requestedTools`` needs a person's approval (or an earlier "allow for
this run"), anything else is denied.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from xsky.models import RoleCapabilityModel

Effect = Literal["allow", "ask", "deny"]


@dataclass(frozen=True)
class Decision:
    effect: Effect
    reason: str  # the rule or the part of the role that decided


def decide(tool: str, arguments: dict[str, Any], role: RoleCapabilityModel, run_allowed: Collection[str] = ()) -> Decision:
    if tool in role.allowed_tools:
        return Decision("allow", f"role {role.name} allows {tool}")
    if tool in role.requested_tools:
        if tool in run_allowed:
            return Decision("allow", f"{tool} was approved for this run")
        return Decision("ask", f"role {role.name} requests {tool}: a person must approve it")
    return Decision("deny", f"role {role.name} may not use {tool}")
