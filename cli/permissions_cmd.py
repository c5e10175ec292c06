"""``permissions check TOOL ARGS --role ROLE`` and ``permissions log ID``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from typing import Any

from rich.table import Table
from rich.text import Text

from activities.mcp.check import check
from activities.mcp.servers import configured
from cli.render import cell, out, print_json
from cli.roles_cmd import resolve_roles
from client import XSky
from xsky.config import Settings, load_settings
from xsky.errors import UsageError
from xsky.security.mcp import Hint, is_mcp, is_tool_name, split
from xsky.security.permissions import decide, decide_parts
from xsky.security.roles import BUILTIN_ROLES, TOOLS, merge_roles, person_only_tools, trusted_role
from xsky.security.tools import PRIMARY_ARG
from xsky.settings_files import (
    SettingsError,
    permission_settings,
    project_security_fields,
    role_layers,
    worker_layers,
)

EFFECT_STYLE = {"allow": "green", "ask": "yellow", "deny": "bold red"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "permissions",
        help="check a tool call against the rules and a role, or show a run's audit log",
    )
    psub = p.add_subparsers(dest="action", metavar="ACTION")
    psub.required = True
    c = psub.add_parser("check", help="would this call be allowed, asked or denied — and why")
    c.add_argument(
        "tool", help=f"one of {', '.join(TOOLS)}, or a tool of an MCP server: mcp__<server>__<tool>"
    )
    c.add_argument(
        "args", nargs="?", default="{}", help="JSON arguments, or just the command / path / URL"
    )
    c.add_argument("--role", default="shell", help="the agent's role (default shell)")
    c.add_argument(
        "--mode",
        choices=["default", "accept_edits", "plan", "bypass"],
        help="override the permission mode",
    )
    c.add_argument("--workspace", default=".", help="the workspace paths are relative to")
    c.add_argument("--json", action="store_true")
    c.set_defaults(handler=cmd_check)
    g = psub.add_parser("log", help="a run's permission decisions (automatic and by people)")
    g.add_argument("id", help="workflow id of the run")
    g.add_argument("--json", action="store_true")
    g.set_defaults(handler=lambda a: asyncio.run(cmd_log(a)))


def _arguments(tool: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    key = PRIMARY_ARG.get(tool)
    if key is None:
        raise UsageError(f'give the arguments of {tool} as a JSON object, e.g. \'{{"…": "…"}}\'')
    return {key: raw}


def cmd_check(args: argparse.Namespace) -> int:
    """Decided as a worker decides: with the user settings alone (a project's file is a place
    agents may have written, so its rules and roles never count), a project-only role as one
    the worker does not know."""
    if args.tool not in TOOLS and not is_tool_name(args.tool):
        raise UsageError(
            f"unknown tool {args.tool!r}; tools: {', '.join(TOOLS)}, and the tools of MCP servers "
            "(mcp__<server>__<tool>)"
        )
    config = load_settings()
    roles = resolve_roles()
    given = roles.get(args.role)
    if given is None:
        raise UsageError(f"no role {args.role!r}; roles: {', '.join(roles)}")
    try:
        layers = worker_layers(config)
    except SettingsError as e:
        raise UsageError(str(e)) from None
    known = merge_roles(BUILTIN_ROLES.values(), *role_layers(layers)).get(args.role)
    role = trusted_role(given, known)
    settings = permission_settings(layers).model_copy(
        update={"person_only_tools": person_only_tools(given, known)}
    )
    if args.mode:
        settings = settings.model_copy(update={"mode": args.mode})
    ignored = project_security_fields(config)
    if ignored and not args.json:
        out.print(
            cell(
                f"(the project's settings set {', '.join(ignored)}; workers ignore them and decide with "
                f"{config.user_settings})"
            )
        )
    arguments = _arguments(args.tool, args.args)
    workspace = os.path.abspath(args.workspace)
    hints, about = _mcp_hints(config, args.tool) if is_mcp(args.tool) else ({}, None)
    if about and not args.json:
        out.print(cell(about))
    decision = decide(args.tool, arguments, role, settings, workspace, hints=hints)
    parts: list[dict[str, str]] = []
    if args.tool == "shell" and isinstance(arguments.get("command"), str):
        for text, d in decide_parts(arguments["command"], role, settings, workspace):
            parts.append({"command": text, "effect": d.effect, "reason": d.reason})
    if args.json:
        print_json(
            {
                "effect": decision.effect,
                "reason": decision.reason,
                "rule": decision.rule,
                "mode": settings.mode,
                "parts": parts,
            }
        )
        return 0
    # The call checked is often one copied from an agent's transcript: shown literally.
    out.print(
        Text(decision.effect.upper(), style=EFFECT_STYLE[decision.effect]),
        cell(f" {args.tool} as {role.name} (mode {settings.mode})"),
    )
    out.print(cell(decision.reason))
    if len(parts) > 1:
        out.print("\nthe command runs, part by part:")
        for p in parts:
            out.print(
                Text(f"  {p['effect']:5} ", style=EFFECT_STYLE[p["effect"]]),
                cell(f"{p['command']} — {p['reason']}"),
            )
    return 0


def _mcp_hints(config: Settings, tool: str) -> tuple[dict[str, Hint], str]:
    """What the tool's server says of it (read-only, destructive), asked as a worker asks; and
    a line saying so, or why the decision goes without it."""
    server = split(tool)[0]
    known = server in configured(config)
    found = asyncio.run(check(config, [server], timeout=15.0))[0] if known else None
    if found is None or found.offer is None:
        why = found.error if found is not None else f"no MCP server {server} is configured"
        return {}, f"(decided without the server's annotations: {why})"
    info = next((t for t in found.offer.tools if t.name == tool), None)
    if info is None:
        return {}, f"(MCP server {server} has no tool {tool}: a worker would not show it to agents)"
    if info.hint is None:
        return {}, f"(MCP server {server} gives {tool} no readOnlyHint or destructiveHint)"
    return {tool: info.hint}, f"(MCP server {server} marks {tool} {info.hint.replace('_', '-')})"


async def cmd_log(args: argparse.Namespace) -> int:
    settings = load_settings()
    run = await (await XSky.connect(settings)).get(args.id)
    entries = await run.permission_log()
    if args.json:
        print_json([e.wire() for e in entries])
        return 0
    if not entries:
        out.print("no permission decisions yet")
        return 0
    table = Table(title=cell(f"{args.id}: permission decisions"), title_justify="left")
    for col in ("time", "task", "tool", "call", "decision", "why", "by"):
        table.add_column(col, overflow="fold")
    for e in entries:
        # The calls, reasons and who decided are agents' and people's words: literal text.
        table.add_row(
            f"{e.at:%H:%M:%S}",
            cell(e.task_id),
            cell(e.tool),
            cell(e.arguments),
            Text(e.effect, style=EFFECT_STYLE[e.effect]),
            cell(e.reason),
            cell(e.by + (f" ({e.request_id})" if e.request_id else "")),
        )
    out.print(table)
    return 0
