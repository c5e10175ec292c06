"""``gc [--older-than DAYS] [--run ID]``: remove ended runs' objects from the store."""

from __future__ import annotations

import argparse
import asyncio

from cli.render import cell, counted, out, print_json
from client import XSky
from client.gc import collect
from xsky.config import load_settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gc", help="remove the stored objects of runs that ended (never a running run's)"
    )
    p.add_argument(
        "--older-than",
        type=float,
        default=0.0,
        metavar="DAYS",
        help="only runs that ended at least this many days ago (default 0: every ended run)",
    )
    p.add_argument("--run", metavar="ID", help="only this run (workflow id)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_gc(a)))


async def cmd_gc(args: argparse.Namespace) -> int:
    x = await XSky.connect(load_settings())
    done = await collect(x.client, x.settings, args.older_than, args.run)
    if args.json:
        print_json(
            [
                {"run": d.run_id, "objects": d.objects, "removed": d.removed, "why": d.why}
                for d in done
            ]
        )
        return 0
    for d in done:
        verb = "removed" if d.removed else "kept"
        out.print(cell(f"{d.run_id}: {verb} {counted(d.objects, 'object')} ({d.why})"))
    gone = sum(d.objects for d in done if d.removed)
    runs = sum(d.removed for d in done)
    # the runs kept counted too (walk12: `gc --older-than 1` listed a run 'kept 5 objects',
    # then said only '0 objects of 0 runs removed')
    kept = len(done) - runs
    out.print(
        cell(
            f"{gone} object{'' if gone == 1 else 's'} of {runs} run{'' if runs == 1 else 's'} removed"
            + (f"; {counted(kept, 'run')} kept" if kept else "")
        )
    )
    return 0
