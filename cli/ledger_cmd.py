"""``ledger ID [--json]``: the leader's view of a run — its mode, the goal and whether it was
met, the facts learned, each task's intent, and every judgment (results, questions, tool
requests, stalls, the goal) with who made it and whether it was applied."""

from __future__ import annotations

import argparse
import asyncio

from rich.table import Table

from cli.board import leader_line
from cli.render import cell, one_line, out, print_json
from client import XSky
from xsky.config import load_settings
from xsky.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ledger",
        help="the leader's ledgers: the goal and its check, facts, and every judgment it made",
    )
    p.add_argument("id", help="workflow id of the run")
    p.add_argument("--offset", type=int, default=0, help="judgments to skip (oldest first)")
    p.add_argument("--limit", type=int, default=200, help="judgments per page (at most 2000)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_ledger(a)))


def goal_check_line(goal_check: str | None, status: str | None) -> str:
    """The goal check's line: the leader's verdict, or why there is none. A run that ended
    without one (it failed, or was cancelled, before every agent completed) was said to be
    "not yet (the run is not done)" (walk9)."""
    if goal_check:
        return goal_check
    if status in (None, "running"):
        return "not yet (the run is not done)"
    return f"not checked: the run ended ({status}) before the leader checked its goal"


async def cmd_ledger(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= 2000 or args.offset < 0:
        raise UsageError("--limit takes 1 to 2000 and --offset 0 or more")
    x = await XSky.connect(load_settings())
    run = await x.get(args.id)
    view = await run.ledger(args.offset, args.limit)
    if args.json:
        print_json(view.wire())
        return 0
    out.print(cell(leader_line(f"leader: {view.mode}"), style="bold"))
    out.print(cell(f"goal: {one_line(view.goal, 200)}"))
    status = None if view.goal_check else await run.temporal_status()
    out.print(cell(f"goal check: {goal_check_line(view.goal_check, status)}"))
    if view.facts:
        out.print(cell("facts:", style="bold"))
        for fact in view.facts:
            out.print(cell(f"  · {one_line(fact.text, 160)} ({fact.source})"))
    intents = Table("task", "status", "intent", title="task ledger", title_justify="left")
    for intent in view.intents[:50]:
        intents.add_row(
            cell(intent.task_id), cell(intent.status), cell(one_line(intent.intent, 80))
        )
    out.print(intents)
    if view.intents_total > 50:
        out.print(cell(f"  … {view.intents_total - 50} more tasks (starter.py plan {args.id})"))
    if not view.entries:
        out.print(cell("no judgments yet"))
        return 0
    entries = Table(
        "when",
        "point",
        "task",
        "verdict",
        "by",
        "reason",
        title="progress ledger",
        title_justify="left",
    )
    for e in view.entries:
        by = e.by if e.applied else f"{e.by}, not applied"
        reason = e.reason + (f" → {e.detail}" if e.detail else "")
        entries.add_row(
            cell(e.at.strftime("%H:%M:%S")),
            cell(e.point),
            cell(e.task_id or "run"),
            cell(e.verdict),
            cell(by),
            cell(one_line(reason, 120)),
        )
    out.print(entries)
    shown = view.offset + len(view.entries)
    if shown < view.entries_total:
        out.print(cell(f"  … more: --offset {shown}"))
    if view.entries_dropped:
        out.print(cell(f"  ({view.entries_dropped} older judgments are no longer kept)"))
    return 0
