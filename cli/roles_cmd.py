"""``roles`` and ``roles show NAME``: the roles agents can take, after merging every layer."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from cli.render import cell, out, print_json, shown
from client import settings as client_settings
from xsky.config import load_settings
from xsky.errors import UsageError
from xsky.security.roles import RoleCapabilityModel


def resolve_roles() -> dict[str, RoleCapabilityModel]:
    """Built-ins < ~/.xsky/settings.json < <project>/.xsky/settings.json; bad files are usage errors."""
    return client_settings.resolve_roles(load_settings())


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("roles", help="list the roles agents can take (or `roles show NAME`)")
    p.add_argument("action", nargs="?", choices=["show"], help="show one role in full")
    p.add_argument("name", nargs="?")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_roles)


def cmd_roles(args: argparse.Namespace) -> int:
    roles = resolve_roles()
    if args.action == "show":
        if not args.name:
            raise UsageError("say which role: `starter.py roles show NAME`")
        role = roles.get(args.name)
        if role is None:
            raise UsageError(f"no role {args.name!r}; roles: {', '.join(roles)}")
        if args.json:
            print_json(role.wire())
            return 0
        # Settings files and plans' <role>s are written by people and by planners: literal text.
        out.print(f"[bold]{shown(role.name)}[/] — {shown(role.description)}")
        out.print(cell(f"allowed tools:   {', '.join(role.allowed_tools) or '(none)'}"))
        out.print(
            cell(
                f"requested tools: {', '.join(role.requested_tools) or '(none)'}  (need a person's approval)"
            )
        )
        out.print(cell(f"skills:          {', '.join(role.skill_names) or '(none)'}"))
        out.print(cell(f"suggested model: {role.suggested_model or '(XSKY_MODEL)'}"))
        out.print("\n[bold]system prompt[/]")
        out.print(cell(role.system_prompt))
        return 0
    if args.json:
        print_json([r.wire() for r in roles.values()])
        return 0
    table = Table(
        title=f"roles (built-ins < {shown(_user_file())} < .xsky/settings.json)",
        title_justify="left",
    )
    for col in ("role", "description", "allowed tools", "requested"):
        table.add_column(col, overflow="fold")
    for r in roles.values():
        table.add_row(
            cell(r.name),
            cell(r.description),
            cell(", ".join(r.allowed_tools)),
            cell(", ".join(r.requested_tools)),
        )
    out.print(table)
    return 0


def _user_file() -> str:
    """The user settings file as it was given (XSKY_USER_SETTINGS, else ~/.xsky/settings.json),
    with the home folder written ~."""
    path = str(load_settings().user_settings.expanduser())
    home = str(Path.home())
    return "~" + path[len(home) :] if path == home or path.startswith(home + "/") else path
