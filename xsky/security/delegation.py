"""Delegated approvals: may the leader approve this tool call in a person's place?

A person delegates with rules in the allow-rule grammar — ``permissions.delegate`` in the
worker's own settings, or ``RunOptions.delegate`` given with the run — and the leader may
approve a call those rules cover, never more: the call is decided by :func:`decide` with
the delegated rules as its only allow rules, the deny rules in force, and a role that holds
nothing, so a call no delegated rule names is refused (a role's tools do not count), a
compound shell command needs every part covered, and what the checker cannot fully parse
stays with a person. A deny rule always wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xsky.plan.models import RoleCapabilityModel
from xsky.security.permissions import PermissionLayer, PermissionSettings, decide
from xsky.security.rules import rule_problems

# A role with no tools: only the delegated rules can allow anything.
_NOBODY = RoleCapabilityModel(name="delegate", description="the person's delegated rules")


def delegation(
    tool: str,
    arguments: dict[str, Any],
    delegated: Sequence[str],
    deny: Sequence[str],
    workspace: str | None = None,
) -> tuple[bool, str]:
    """(covered, why): whether the delegated rules allow this exact call, deny rules holding."""
    rules = [r for r in delegated if not rule_problems([r])]
    if not rules:
        return False, "no rules are delegated to the leader"
    settings = PermissionSettings(
        layers=[
            PermissionLayer(
                scope="user",
                path="delegated",
                allow=rules,
                deny=[r for r in deny if not rule_problems([r])],
            )
        ],
    )
    decision = decide(tool, arguments, _NOBODY, settings, workspace)
    if decision.effect == "allow" and decision.rule is not None:
        return True, f"within the delegated rule {decision.rule!r}"
    if decision.effect == "deny" and decision.rule is not None:
        return False, f"a deny rule holds: {decision.rule!r}"
    return False, "no delegated rule covers this call"
