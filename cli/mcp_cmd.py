"""``mcp list`` and ``mcp check NAME``: the MCP servers a worker would use, started as it would
start them (in the OS sandbox, through the egress proxy), and their tools."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from rich.table import Table
from rich.text import Text

from activities.mcp.check import Checked, check
from activities.mcp.servers import configured
from cli.render import cell, out, print_json
from xsky.config import load_settings
from xsky.errors import UsageError
from xsky.settings_files import SettingsError

STATE_STYLE = {"ok": "green", "failed": "bold red", "disabled": "yellow"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mcp", help="the MCP servers workers use: list them, or check one")
    psub = p.add_subparsers(dest="action", metavar="ACTION")
    psub.required = True
    ls = psub.add_parser("list", help="every configured server, its state and its tools")
    ls.add_argument("--json", action="store_true")
    ls.add_argument(
        "--timeout", type=float, default=30.0, help="seconds each server gets to answer"
    )
    ls.set_defaults(handler=lambda a: asyncio.run(cmd_list(a)))
    c = psub.add_parser("check", help="connect to one server and list its tools, or say why not")
    c.add_argument("name", help="the server's name in mcpServers")
    c.add_argument("--json", action="store_true")
    c.add_argument("--timeout", type=float, default=30.0, help="seconds the server gets to answer")
    c.set_defaults(handler=lambda a: asyncio.run(cmd_check(a)))


async def _checked(names: list[str] | None, timeout: float) -> list[Checked]:
    if not 0 < timeout <= 600:
        raise UsageError(
            f"--timeout {timeout:g}: give the seconds a server gets, more than 0 and at most 600"
        )
    settings = load_settings()
    try:
        if names is not None:
            known = configured(settings)
            missing = [n for n in names if n not in known]
            if missing:
                raise UsageError(
                    f"no MCP server named {missing[0]!r} is configured (configured: "
                    f'{", ".join(sorted(known)) or "none"}); add it to "mcpServers" in '
                    f"{settings.user_settings}"
                )
        return await check(settings, names, timeout)
    except SettingsError as e:
        raise UsageError(str(e)) from None


def _wire(found: Checked) -> dict[str, Any]:
    entry = found.entry
    return {
        "name": entry.name,
        "transport": entry.spec.transport,
        "source": entry.source,
        "state": found.state,
        "error": found.error,
        "tools": [t.wire() for t in found.offer.tools] if found.offer else [],
        "refused": found.offer.refused if found.offer else [],
    }


async def cmd_list(args: argparse.Namespace) -> int:
    found = await _checked(None, args.timeout)
    if args.json:
        print_json([_wire(f) for f in found])
        return 0
    if not found:
        out.print(
            'no MCP servers are configured; add "mcpServers" to the worker\'s settings '
            f"({load_settings().user_settings})"
        )
        return 0
    table = Table(title="MCP servers", title_justify="left")
    for col in ("server", "transport", "from", "state", "tools"):
        table.add_column(col, overflow="fold")
    for f in found:
        tools = ", ".join(t.name for t in f.offer.tools) if f.offer else f.error or ""
        if f.offer and f.offer.refused:
            tools += "\n" + "\n".join(f.offer.refused)
        table.add_row(
            cell(f.entry.name),
            f.entry.spec.transport,
            cell(f.entry.source),
            Text(f.state, style=STATE_STYLE[f.state]),
            cell(tools),
        )
    out.print(table)
    return 0


async def cmd_check(args: argparse.Namespace) -> int:
    (found,) = await _checked([args.name], args.timeout)
    if args.json:
        print_json(_wire(found))
    if found.offer is None:
        if args.json:
            return 2
        raise UsageError(found.error or f"MCP server {args.name} cannot be used")
    if args.json:
        return 0
    offer = found.offer
    out.print(
        cell(
            f"MCP server {found.entry.name} ({found.entry.spec.transport}, {found.entry.source}): "
            f"connected, protocol {offer.protocol}, {len(offer.tools)} tools"
            + (", resources" if offer.resources else "")
            + (", prompts" if offer.prompts else "")
        )
    )
    for t in offer.tools:
        hint = " [read-only]" if t.read_only else " [destructive]" if t.destructive else ""
        about = (t.description or t.title or "").strip().splitlines()
        out.print(cell(f"  {t.name}{hint}" + (f" — {about[0]}" if about else "")))
    for sentence in offer.refused:
        out.print(cell(f"  not offered: {sentence}"))
    return 0
