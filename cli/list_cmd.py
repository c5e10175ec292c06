"""``list``: recent runs, with what each is doing (on :mod:`client`).

Its own module: a listing needs Temporal's client and xsky's search attributes, none of the
plan's or the leader's models (issue 37: under 0.5 s)."""

from __future__ import annotations

import argparse
import asyncio

from xsky.leader.search import XSKY_STATUSES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "list", help="recent runs, with what each is doing (xsky's search attributes)"
    )
    p.add_argument("--limit", type=int, default=20, help="how many runs, newest first (default 20)")
    p.add_argument("--status", choices=XSKY_STATUSES, help="only runs in this xsky status")
    p.add_argument(
        "--waiting", action="store_true", help="only runs waiting on a person (XskyPending > 0)"
    )
    p.add_argument(
        "--failed", action="store_true", help="only runs with failed agents (XskyFailed > 0)"
    )
    p.add_argument("--plan", help="only runs of the plan with this name")
    p.add_argument(
        "--descendants",
        metavar="ID",
        help="only the follow-up runs and forks of run ID, and theirs, at any depth (XskyLineage)",
    )
    p.add_argument(
        "--query",
        help="a Temporal list filter added to the above, e.g. \"StartTime > '2026-11-01T00:00:00Z'\"",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_list(a)))


def list_query(args: argparse.Namespace) -> str:
    """The Temporal visibility query for ``list``'s filters (what :meth:`XSky.runs` sends)."""
    from client.listing import list_query as build

    return build(
        args.query,
        status=args.status,
        waiting=args.waiting,
        failed=args.failed,
        plan=args.plan,
        descendants=getattr(args, "descendants", None),
    )


async def cmd_list(args: argparse.Namespace) -> int:
    from rich.table import Table

    from cli.render import cell, out, print_json
    from client import XSky
    from xsky.config import load_settings

    settings = load_settings()
    async with XSky.connect(settings) as x:
        runs = await x.runs(
            args.query,
            status=args.status,
            waiting=args.waiting,
            failed=args.failed,
            plan=args.plan,
            descendants=args.descendants,
            limit=args.limit,
        )
    rows = [
        {
            "workflowId": r.id,
            "status": r.status,
            "xskyStatus": r.xsky_status,
            "plan": r.plan,
            "failed": r.failed,
            # requests waiting for a person: the table's "waiting" column ("pending": its
            # first name, kept for scripts that read it)
            "waiting": r.pending,
            "pending": r.pending,
            "start": r.start.isoformat() if r.start else None,
            "close": r.close.isoformat() if r.close else None,
        }
        for r in runs
    ]
    if args.json:
        print_json(rows)
        return 0
    table = Table(title=cell(f"recent runs ({settings.address})"), title_justify="left")
    for col in ("workflow id", "plan", "status", "failed", "waiting", "started", "took"):
        table.add_column(col)
    for r in runs:
        took = f"{(r.close - r.start).total_seconds():.1f}s" if r.close and r.start else "running"
        # Temporal's status says whether it runs; xsky's what it is doing (paused, waiting, …).
        state = r.status if r.status != "running" or not r.xsky_status else r.xsky_status
        table.add_row(
            cell(r.id),
            cell(r.plan or ""),
            cell(state),
            str(r.failed or ""),
            str(r.pending or ""),
            r.start.isoformat()[:19].replace("T", " ") if r.start else "",
            took,
        )
    out.print(
        table
        if rows
        else (
            "no runs match these filters"
            if any(
                (args.status, args.waiting, args.failed, args.plan, args.descendants, args.query)
            )
            # (examples/demo.xml verbatim fails: it reads a site only `demo` serves — walk10)
            else "no runs yet: start one with `starter.py run examples/chain.xml --follow`, or "
            "`starter.py demo` (it serves the demo's site and runs examples/demo.xml)"
        )
    )
    return 0
