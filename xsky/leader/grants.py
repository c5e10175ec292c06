"""What a run's leader granted one dispatch, and how a worker keeps only that.

An agent's activity input carries what people (and the leader, within delegated rules) allowed
it: approvals of exact calls, "allow for this run" rules, the hosts the run's starter opened,
a plan role a person approved. Anyone who can schedule an activity on a worker's task queue
could write that input, so the worker does not take it on the input's word: it asks the leader
that scheduled the attempt (the ``grants`` query of the execution Temporal names in the
activity's info, never one the input names) and keeps only what the leader confirms
(:func:`confirmed`). What it drops is refused in the attempt's permission log.

Pure: the query's messages and the comparison. The asking is in activities/agents/grants.py.
"""

from __future__ import annotations

from pydantic import Field

from xsky.leader.state import ToolApproval
from xsky.plan.models import RoleCapabilityModel, WireModel
from xsky.runs import AgentInput
from xsky.security.permissions import ApprovedRule


class GrantsRequest(WireModel):
    """Input of the ``grants`` query: one dispatch of one task."""

    task_id: str
    dispatch: int


class Grants(WireModel):
    """What the leader gave one dispatch: the approvals it carries and the run's rules."""

    approvals: list[ToolApproval] = Field(default_factory=list)
    run_rules: list[str] = Field(default_factory=list)
    approved_rules: list[ApprovedRule] = Field(default_factory=list)
    allow_hosts: list[str] = Field(default_factory=list)
    role_approved: bool = False
    role: RoleCapabilityModel | None = None


def claimed(inp: AgentInput) -> bool:
    """Does the input carry anything that widens what its agent may do (and so needs the
    leader's word)?"""
    p = inp.permissions
    return bool(inp.approvals or p.run_rules or p.approved_rules or inp.allow_hosts) or (
        inp.role_approved
    )


def stripped(inp: AgentInput) -> AgentInput:
    """The input with every grant removed (its leader could not be asked, or is none)."""
    return inp.model_copy(
        update={
            "approvals": [],
            "allow_hosts": [],
            "role_approved": False,
            "permissions": inp.permissions.model_copy(
                update={"run_rules": [], "approved_rules": []}
            ),
        }
    )


def confirmed(inp: AgentInput, grants: Grants) -> tuple[AgentInput, list[str]]:
    """The input with only the grants the leader confirms, and a sentence for each dropped one."""
    refused: list[str] = []
    given = {a.request_id: a for a in grants.approvals}
    approvals = []
    for approval in inp.approvals:
        if given.get(approval.request_id) == approval:
            approvals.append(approval)
        else:
            refused.append(
                f"approval {approval.request_id} of {approval.tool} was not given to this dispatch "
                "by the run's leader"
            )
    run_rules = [r for r in inp.permissions.run_rules if r in grants.run_rules]
    refused += [
        f"rule {r!r} is not one of the run's rules"
        for r in inp.permissions.run_rules
        if r not in grants.run_rules
    ]
    approved_rules = [a for a in inp.permissions.approved_rules if a in grants.approved_rules]
    refused += [
        f"'allow for this run' rule {a.rule!r} was not given by a person in this run"
        for a in inp.permissions.approved_rules
        if a not in grants.approved_rules
    ]
    hosts = [h for h in inp.allow_hosts if h in grants.allow_hosts]
    refused += [
        f"host {h!r} was not opened by the run's starter"
        for h in inp.allow_hosts
        if h not in grants.allow_hosts
    ]
    role_approved = inp.role_approved and grants.role_approved and inp.role == grants.role
    if inp.role_approved and not role_approved:
        refused.append(f"role {inp.agent.name!r} was not approved by a person in this run")
    kept = inp.model_copy(
        update={
            "approvals": approvals,
            "allow_hosts": hosts,
            "role_approved": role_approved,
            "permissions": inp.permissions.model_copy(
                update={"run_rules": run_rules, "approved_rules": approved_rules}
            ),
        }
    )
    return kept, refused
