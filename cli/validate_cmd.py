"""``starter.py validate PLAN.xml``: the plan as a tree, or every problem with file:line:col."""

from __future__ import annotations

import argparse
from typing import Any

from cli.args import parse_pairs
from cli.render import (
    cell,
    err,
    out,
    plan_summary,
    plan_tree,
    print_json,
    print_problems,
    say_located,
)
from cli.roles_cmd import resolve_roles
from xsky.config import Settings, load_settings
from xsky.errors import PlanError, Problem
from xsky.plan.agent_config import tool_name
from xsky.plan.files import load_plan
from xsky.plan.loops import lower
from xsky.plan.models import Workflow
from xsky.plan.variables import check_names, with_step_values
from xsky.security.mcp import is_tool_name, split
from xsky.security.permissions import decide
from xsky.security.roles import (
    BUILTIN_ROLES,
    TOOLS,
    RoleCapabilityModel,
    effective_roles,
    merge_roles,
    trusted_role,
    with_skill_access,
)
from xsky.settings_files import SettingsError, permission_settings, role_layers, worker_layers


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="check a workflow XML and show it as a tree")
    p.add_argument("plan", help="path of the workflow XML file")
    p.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="K=V",
        help="a workflow variable the run will get",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    variables = parse_pairs(args.var, "--var")
    try:
        roles = resolve_roles()
        settings = load_settings()
        plan = load_plan(
            args.plan,
            known_agents=list(roles),
            variables=variables,
            base_roles=roles,
            max_bytes=settings.max_plan_bytes,
        )
    except PlanError as e:
        if args.json:
            print_json({"valid": False, "problems": [p.format(args.plan) for p in e.problems]})
        else:
            print_problems(e, args.plan)
        return 2
    # what `run` would refuse, said here too
    check_names(plan.workflow, variables, {}, "`run` would refuse it")
    # A direct agent's MCP tool: asked of the servers this machine configures (said, not refused)
    found: list[Problem] = []
    if any(
        isinstance(tool := (agent.config or {}).get("tool"), str) and is_tool_name(tool)
        for agent in plan.workflow.agents
    ):  # (the MCP SDK and Temporal's are imported for a plan that calls an MCP tool only)
        import asyncio

        from activities.mcp.plan_tools import tool_warnings

        found = plan.locate(asyncio.run(tool_warnings(settings, plan.workflow)))
    # (an MCP tool said to be a likely typo — "did you mean" — is not also said refused by the
    # role: its advice, to give the role the misspelt name, would mislead)
    typos = {p.agent_index for p in found if "did you mean" in p.message}
    refused = [
        Problem(message, agent_index=index, agent_id=plan.workflow.agents[index].id)
        for index, message in direct_tools_refused(plan.workflow, roles, settings)
        if index not in typos
    ]
    found += plan.locate(refused)
    warnings = [w.format(args.plan) for w in plan.repairs + plan.warnings + found]
    # What the leader makes of it as the run begins (a forEach among an agent's steps becomes
    # agents of its own, a page's watch a durable watch): shown, so the board holds no surprise.
    runs_as, changes = lower(with_step_values(plan.workflow, variables))
    defined = plan_roles(plan.workflow, roles)
    if args.json:
        dialect = {"dialect": plan.dialect} if plan.dialect else {}
        lowered = {"asItRuns": {**plan_summary(runs_as), "changes": changes}} if changes else {}
        print_json(
            {
                "valid": True,
                **plan_summary(plan.workflow),
                **dialect,
                **lowered,
                **({"roles": defined} if defined else {}),
                "warnings": warnings,
            }
        )
    else:
        if plan.dialect:  # an Eko plan: say once what was read as what
            err.print(cell(plan.dialect))
        out.print(plan_tree(plan.workflow))
        if changes:
            out.print(plan_tree(runs_as, "as it runs: " + "; ".join(changes)))
        if defined:
            out.print(
                "roles this plan defines, as a run gives them (a role no settings define gets its "
                "writing, running and network tools call by call, each asked of a person, until "
                "one approves the plan: run --review, then approve-plan):"
            )
            for role in defined:
                out.print(cell(role_line(role)))
        for warning in warnings:  # valid, but not on every worker: exit 0
            say_located(f"warning: {warning}")
    return 0


def direct_tools_refused(
    wf: Workflow, roles: dict[str, RoleCapabilityModel], settings: Settings
) -> list[tuple[int, str]]:
    """Each direct agent whose tool its role may not use — neither the role (as a worker trusts
    it) nor a rule of the worker's settings on this machine gives it: a worker refuses the call
    at once, and the agent fails without a retry."""
    try:
        layers = worker_layers(settings)
    except SettingsError:
        return []  # (said where the settings are read)
    rules = permission_settings(layers)
    # The tools an allow rule names: asked with no arguments, `http_get(domain:example.com)`
    # matched no call, and the warning said a worker refuses what it allows.
    ruled = {rule.split("(", 1)[0].strip() for layer in rules.layers for rule in layer.allow}
    known_roles = merge_roles(BUILTIN_ROLES.values(), *role_layers(layers))
    given_roles = {**roles, **effective_roles(wf.roles, roles, approved=False)}
    found = []
    for index, agent in enumerate(wf.agents):
        tool = tool_name(agent.config)
        given = given_roles.get(agent.name)
        if tool is None or (tool not in TOOLS and not is_tool_name(tool)) or given is None:
            continue
        # an MCP tool is given by its own name or its server's (mcp__fs)
        names = {tool, f"mcp__{split(tool)[0]}"} if is_tool_name(tool) else {tool}
        role = trusted_role(given, known_roles.get(agent.name))
        decision = decide(tool, {}, role, rules)
        if (
            decision.effect != "deny"
            or decision.rule is not None
            or "may not use" not in decision.reason
            or names & ruled  # (a rule for some of its calls, e.g. a domain: the worker's to say)
        ):
            continue
        holders = [name for name, r in roles.items() if names & set(r.allowed_tools)]
        found.append(
            (
                index,
                f"agent {agent.id}: {decision.reason} — a worker refuses its direct {tool} at once; "
                f"give the agent a kind or role that holds it ({', '.join(holders[:4]) or 'none does'})",
            )
        )
    return found


def plan_roles(wf: Workflow, base: dict[str, RoleCapabilityModel]) -> list[dict[str, Any]]:
    """Each ``<role>`` of the plan as a run gives it (narrowed within a role the settings know;
    a new one's privileged tools asked for, call by call, until a person approves the plan)."""
    given = effective_roles(wf.roles, base, approved=False)
    shown = []
    for role in wf.roles:
        now = with_skill_access(given[role.name])
        assert now is not None
        shown.append(
            {
                "name": role.name,
                "narrows": role.name in base,
                "allowedTools": now.allowed_tools,
                "askedTools": now.requested_tools,
                "skills": now.skill_names,
                "model": now.suggested_model,
            }
        )
    return shown


def role_line(role: dict[str, Any]) -> str:
    what = "narrows the role of that name" if role["narrows"] else "new"
    parts = [f"uses {', '.join(role['allowedTools']) or 'no tool'}"]
    if role["askedTools"]:
        parts.append(f"asks a person before each call of {', '.join(role['askedTools'])}")
    if role["skills"]:
        parts.append(f"skills {', '.join(role['skills'])}")
    parts.append(f"model {role['model'] or '(XSKY_MODEL)'}")
    return f"  {role['name']} ({what}): " + "; ".join(parts)
