"""``starter.py validate PLAN.xml``: the plan as a tree, or every problem with file:line:col."""

from __future__ import annotations

import argparse
import asyncio

from activities.mcp.plan_tools import tool_warnings
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
from xsky.config import load_settings
from xsky.errors import PlanError
from xsky.plan.files import load_plan
from xsky.plan.loops import lower
from xsky.plan.variables import check_names, with_step_values


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
    found = plan.locate(asyncio.run(tool_warnings(settings, plan.workflow)))
    warnings = [w.format(args.plan) for w in plan.repairs + plan.warnings + found]
    # What the leader makes of it as the run begins (a forEach among an agent's steps becomes
    # agents of its own, a page's watch a durable watch): shown, so the board holds no surprise.
    runs_as, changes = lower(with_step_values(plan.workflow, variables))
    if args.json:
        dialect = {"dialect": plan.dialect} if plan.dialect else {}
        lowered = {"asItRuns": {**plan_summary(runs_as), "changes": changes}} if changes else {}
        print_json(
            {
                "valid": True,
                **plan_summary(plan.workflow),
                **dialect,
                **lowered,
                "warnings": warnings,
            }
        )
    else:
        if plan.dialect:  # an Eko plan: say once what was read as what
            err.print(cell(plan.dialect))
        out.print(plan_tree(plan.workflow))
        if changes:
            out.print(plan_tree(runs_as, "as it runs: " + "; ".join(changes)))
        for warning in warnings:  # valid, but not on every worker: exit 0
            say_located(f"warning: {warning}")
    return 0
