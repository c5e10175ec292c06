"""``skills watch [--every 30s] | unwatch | scan --once``: the Temporal Schedule that scans the
transcript sources, and one scan now."""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from datetime import timedelta

from cli.hints import cli_message
from cli.render import err, out, print_json, shown
from client._consts import PICKUP_WAIT
from client.connect import connect_client
from client.skills import Skills, schedule_id
from xsky.config import load_settings
from xsky.errors import UsageError


def register(s: argparse._SubParsersAction) -> None:
    a = s.add_parser("watch", help="create or update the Temporal Schedule that scans every 30 s")
    a.add_argument("--every", default="30s", help="interval: 30s, 2m, 1h or seconds (default 30s)")
    a.set_defaults(handler=lambda x: asyncio.run(cmd_watch(x)))

    a = s.add_parser("unwatch", help="delete the watch schedule (ingested atoms stay)")
    a.set_defaults(handler=lambda x: asyncio.run(cmd_unwatch(x)))

    a = s.add_parser("scan", help="scan the sources now (one tick), without the schedule")
    # Kept so the documented `scan --once` works; one tick is what scan does.
    a.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    a.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds to wait for the tick to finish (default 600); the command never waits longer",
    )
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=lambda x: asyncio.run(cmd_scan(x)))


def parse_every(text: str) -> timedelta:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h)?\s*", text)
    if not m:
        raise UsageError(f"--every {text!r}: write it as 30s, 2m, 1h or a number of seconds")
    seconds = (
        float(m.group(1)) * {"s": 1, "sec": 1, None: 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]
    )
    if seconds < 1:
        raise UsageError(f"--every {text!r}: the interval must be at least 1 second")
    return timedelta(seconds=seconds)


async def _skills() -> Skills:
    settings = load_settings()
    return Skills(settings, await connect_client(settings))


async def cmd_watch(args: argparse.Namespace) -> int:
    every = parse_every(args.every)
    skills = await _skills()
    settings, sid = skills.settings, schedule_id(skills.settings)
    verb = await skills.watch(every)
    out.print(
        f"{verb} schedule {sid}: a scan every {every.total_seconds():g}s (overlapping ticks are skipped) on "
        f"queue '{settings.skills_queue}'"
    )
    out.print(
        f"  see it in the Web UI: {settings.ui_url.rstrip('/')}/namespaces/{settings.namespace}/schedules/{sid}"
    )
    if not await skills.worker_serves():
        err.print(f"[yellow]{shown(cli_message(skills.no_worker()))}[/]")
    return 0


async def cmd_unwatch(args: argparse.Namespace) -> int:
    skills = await _skills()
    sid = schedule_id(skills.settings)
    if not await skills.unwatch():
        out.print(f"no schedule {sid}: nothing was watching")
        return 0
    out.print(
        f"deleted schedule {sid}; atoms already ingested stay in {skills.settings.skills_home}"
    )
    return 0


async def cmd_scan(args: argparse.Namespace) -> int:
    if not args.timeout > 0:
        raise UsageError(f"--timeout {args.timeout:g}: give the seconds to wait, above 0, e.g. 60")
    began = time.monotonic()
    skills = await _skills()
    # The whole command stays within --timeout: a scan no worker takes is said within
    # PICKUP_WAIT seconds (or the timeout, when shorter).
    wid = await skills.start_scan(min(PICKUP_WAIT, args.timeout))
    err.print(f"scanning ({wid}) …")
    result = await skills.scan_result(wid, max(0.1, args.timeout - (time.monotonic() - began)))
    if args.json:
        print_json(result.model_dump())
        return 0
    out.print(
        f"{result.deltas} delta(s): {result.committed} committed, {result.atoms} atom file(s) written"
        + (f", {result.duplicate} already in progress elsewhere" if result.duplicate else "")
        + (f", {result.stale} stale" if result.stale else "")
        + (f", [red]{result.failed} failed[/]" if result.failed else "")
    )
    for p in result.problems:  # they quote transcripts' file names and contents
        err.print(f"[yellow]![/] {shown(p)}")
    return 1 if result.failed else 0
