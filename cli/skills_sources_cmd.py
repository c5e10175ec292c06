"""``skills sources | add-source KIND [PATH] | remove-source KIND [PATH]``: the transcript
folders that feed the skill pipeline (in the project's ./.xsky/settings.json, or with
``--user`` the user's ~/.xsky/settings.json)."""

from __future__ import annotations

import argparse
import os
import shlex

from rich.table import Table

from cli.render import cell, err, out, print_json, shown
from client.skills import Skills
from xsky.config import load_settings
from xsky.errors import UsageError
from xsky.skills.sources import default_root, expand
from xsky.skills.transcripts import SOURCE_KINDS


def register(s: argparse._SubParsersAction) -> None:
    a = s.add_parser("sources", help="the transcript folders that feed the pipeline")
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=cmd_sources)
    for name, helptext in (
        ("add-source", "register a transcript folder"),
        ("remove-source", "unregister a transcript folder"),
    ):
        a = s.add_parser(name, help=helptext)
        a.add_argument("kind", help=f"one of {', '.join(SOURCE_KINDS)}")
        a.add_argument("path", nargs="?", help="the folder (default: the kind's usual place)")
        where = a.add_mutually_exclusive_group()
        where.add_argument(
            "--user",
            action="store_true",
            help="in the user's ~/.xsky/settings.json instead of the project's ./.xsky/settings.json",
        )
        where.add_argument(
            "--project",
            action="store_true",
            help="in the project's ./.xsky/settings.json (the default)",
        )
        a.set_defaults(handler=cmd_add_source if name == "add-source" else cmd_remove_source)


def cmd_sources(args: argparse.Namespace) -> int:
    sources = Skills(load_settings()).sources()
    rows = [
        {
            "kind": s.kind,
            "path": str(s.root),
            "exists": s.root.is_dir(),
            "from": s.origin,
            "usualPlace": s.usual,
        }
        for s in sources
    ]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        out.print("no transcript sources: add one with `starter.py skills add-source KIND PATH`")
        return 0
    table = Table(title="transcript sources", title_justify="left")
    for col in ("kind", "path", "exists", "registered in"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(
            cell(r["kind"]),
            cell(r["path"]),
            "yes" if r["exists"] else "[yellow]no[/]",
            cell(r["from"]),
        )
    if any(r["usualPlace"] and not r["exists"] for r in rows):
        table.caption = (
            "a kind's usual place that does not exist is skipped quietly by every scan; "
            "a folder you named warns until it exists or is removed"
        )
        table.caption_justify = "left"
    out.print(table)
    return 0


def cmd_add_source(args: argparse.Namespace) -> int:
    if args.kind in SOURCE_KINDS:  # (an unknown kind is said by add_source)
        root = expand(args.path, os.environ) if args.path else default_root(args.kind, os.environ)
        if root.exists() and not root.is_dir():
            # A source is read as a folder of transcripts: a file would never be scanned, and
            # "watched once it does [exist]" would not come true. Nothing is registered.
            usual = default_root(args.kind, os.environ)
            raise UsageError(
                f"{root} is a file, not a folder: a {args.kind} source is the folder that holds "
                f"its transcripts (usually {usual}); give that folder"
            )
    change = Skills(load_settings()).add_source(args.kind, args.path, user=args.user)
    where = shown(args.path or "(default place)")
    root = expand(args.path, os.environ) if args.path else default_root(args.kind, os.environ)
    if change.changed and not root.is_dir():
        err.print(f"[yellow]note:[/] {shown(root)} does not exist yet; it is watched once it does")
    if not change.changed:
        out.print(f"{shown(args.kind)} {where} is already registered in {shown(change.file)}")
        return 0
    # The command that takes away what was added, exactly (walk11: the hint said
    # `skills remove-source KIND`, which — followed as written — removed the kind's default
    # place and kept the folder just added).
    undo = shlex.join(
        [
            "starter.py",
            "skills",
            "remove-source",
            args.kind,
            *([args.path] if args.path else []),
            *(["--user"] if args.user else []),
        ]
    )
    kept = (
        "; the default sources stay registered beside it (without a PATH, "
        "`skills remove-source KIND` removes a kind's default place)"
        if change.defaults_kept
        else ""
    )
    out.print(
        f"registered {shown(args.kind)} {where} in {shown(change.file)}; `{shown(undo)}` "
        f"removes it{kept}"
    )
    return 0


def cmd_remove_source(args: argparse.Namespace) -> int:
    file = Skills(load_settings()).remove_source(args.kind, args.path, user=args.user)
    out.print(
        f"removed {shown(args.kind)} {shown(args.path or '(default place)')} from {shown(file)}; "
        "what was already ingested stays"
    )
    return 0
