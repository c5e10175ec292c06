"""``permissions check TOOL ARGS --role ROLE`` and ``permissions log ID``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from typing import Any

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cli.plans import UsageError
from cli.render import out, print_json
from cli.roles_cmd import resolve_permissions, resolve_roles
from xsky.client import XSky
from xsky.config import load_settings
from xsky.permissions import decide
from xsky.roles import TOOLS
from xsky.shell_parse import ShellParseError, split_command
from xsky.tool_registry import PRIMARY_ARG

EFFECT_STYLE = {"allow": "green", "ask": "yellow", "deny": "bold red"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "permissions",
        help="check a tool call against the rules and a role, or show a run's audit log",
    )
    psub = p.add_subparsers(dest="action", metavar="ACTION")
    psub.required = True
    c = psub.add_parser("check", help="would this call be allowed, asked or denied — and why")
    c.add_argument("tool", help=f"one of {', '.join(TOOLS)}")
    c.add_argument("args", help="JSON arguments, or just the command / path / URL")
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
    if args.tool not in TOOLS:
        raise UsageError(f"unknown tool {args.tool!r}; tools: {', '.join(TOOLS)}")
    roles = resolve_roles()
    role = roles.get(args.role)
    if role is None:
        raise UsageError(f"no role {args.role!r}; roles: {', '.join(roles)}")
    settings = resolve_permissions()
    if args.mode:
        settings = settings.model_copy(update={"mode": args.mode})
    arguments = _arguments(args.tool, args.args)
    workspace = os.path.abspath(args.workspace)
    decision = decide(args.tool, arguments, role, settings, workspace)
    parts: list[dict[str, str]] = []
    if args.tool == "shell" and isinstance(arguments.get("command"), str):
        try:
            for part in split_command(arguments["command"]):
                d = decide("shell", {"command": part.text}, role, settings, workspace)
                parts.append({"command": part.text, "effect": d.effect, "reason": d.reason})
        except ShellParseError:
            pass
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
    out.print(
        Text(decision.effect.upper(), style=EFFECT_STYLE[decision.effect]),
        Text(f" {args.tool} as {role.name} (mode {settings.mode})"),
    )
    out.print(escape(decision.reason))
    if len(parts) > 1:
        out.print("\nthe command runs, part by part:")
        for p in parts:
            out.print(
                Text(f"  {p['effect']:5} ", style=EFFECT_STYLE[p["effect"]]),
                Text(f"{p['command']} — {p['reason']}"),
            )
    return 0


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
    table = Table(title=f"{args.id}: permission decisions", title_justify="left")
    for col in ("time", "task", "tool", "call", "decision", "why", "by"):
        table.add_column(col, overflow="fold")
    for e in entries:
        table.add_row(
            f"{e.at:%H:%M:%S}",
            e.task_id,
            e.tool,
            escape(e.arguments),
            Text(e.effect, style=EFFECT_STYLE[e.effect]),
            escape(e.reason),
            e.by + (f" ({e.request_id})" if e.request_id else ""),
        )
    out.print(table)
    return 0
