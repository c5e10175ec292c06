"""``events ID [--follow]``: a run's event stream as JSON lines — the objects the live page's
``GET /runs/{id}/events`` sends (xsky/leader/run_events.py), for any other client."""

from __future__ import annotations

import argparse
import asyncio
import sys

from client import XSky
from client.events import EventLog, take_picture, watch
from xsky.config import load_settings
from xsky.leader.run_events import RunEvent, diff_pictures
from xsky.safe_text import json_safe


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "events",
        help="a run's events as JSON lines: agents started, stepped, done; requests; budget; decisions",
    )
    p.add_argument("id", help="workflow id of the run")
    p.add_argument(
        "--follow", action="store_true", help="keep printing events as they happen, until it ends"
    )
    p.set_defaults(handler=lambda a: asyncio.run(cmd_events(a)))


def _print(event: RunEvent) -> None:
    # (an agent's question or a run's summary may hold C1 or bidi controls: escaped, as JSON)
    sys.stdout.write(json_safe(event.line()) + "\n")
    sys.stdout.flush()


async def cmd_events(args: argparse.Namespace) -> int:
    x = await XSky.connect(load_settings())
    run = await x.get(args.id)
    events = EventLog(run.id)
    if args.follow:
        await watch(run, events, _print)
        return 0
    picture, decisions = await take_picture(run, None)
    for event in events.add(diff_pictures(None, picture, decisions)):
        _print(event)
    return 0
