"""``log ID T-3 [--follow] [--json]``: what one agent said and did — its transcript from the
artifact store: messages, tool calls with arguments and results, permission decisions,
tokens and timings, every attempt in order."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from activities.artifacts import removed_by_gc
from activities.storage import open_objects
from cli.render import cell, json_text, out
from client import Run, XSky
from xsky.agent_log import UNLOGGED_SAID, parse_lines, render_event
from xsky.config import load_settings
from xsky.errors import NoWorkerError
from xsky.leader.tasks import TERMINAL

STYLE = {
    "attempt": "bold",
    "tool_call": "cyan",
    "tool_result": "green",
    "permission": "magenta",
    "outcome": "bold",
    "llm": "dim",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "log",
        help="an agent's transcript: messages, tool calls and results, permission decisions, tokens",
    )
    p.add_argument("id", help="workflow id of the run")
    p.add_argument("task", help="task id (T-3 or 3) or agent id")
    p.add_argument(
        "--follow", action="store_true", help="keep showing new lines until the task ends"
    )
    p.add_argument("--json", action="store_true", help="the raw JSONL lines")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_log(a)))


def _show(events: list[dict[str, Any]], as_json: bool) -> None:
    for event in events:
        if as_json:
            sys.stdout.write(json_text(event, indent=None) + "\n")
        else:  # messages, tool results and pages are agents' and sites' words: literal text
            out.print(
                cell(render_event(event), style=STYLE.get(str(event.get("type")), "")),
                soft_wrap=True,
            )
    sys.stdout.flush()


async def _read_from(run: Run, key: str, offset: int) -> tuple[list[dict[str, Any]], int]:
    """Whole lines appended since ``offset``; a line still being written waits for the next read."""
    data = (await run.transcript_bytes(key))[offset:]
    whole = data[: data.rfind(b"\n") + 1]
    return parse_lines(whole.decode("utf-8", errors="replace")), offset + len(whole)


async def _task_state(run: Run, task: str) -> tuple[bool, str | None]:
    """(has the task ended, the id of the person's request it waits on, if any)."""
    if await run.temporal_status() != "running":
        return True, None
    try:
        view = await run.task(task)
    except NoWorkerError:
        return False, None  # a worker is restarting: keep following
    return view.status in TERMINAL, view.waiting_on


def waiting_hint(run_id: str, task: str, request: str) -> str:
    """What a follower is told once a task waits on a person: the request and its command."""
    how = (
        f'starter.py answer {run_id} {request} "…"'
        if request.startswith("Q-")
        else f"starter.py approve {run_id} {request} (or --deny)"
        if request.startswith("A-")
        else f"starter.py requests {run_id}"
    )
    return f"{task} waits for a person ({request}): {how}; `starter.py requests {run_id}` shows it"


def elsewhere_said(where: str) -> str:
    """Why a transcript may be missing here: the store this command reads is not the one the
    workers that ran the agent wrote to (walk12: it said only "… is not the workers' store:
    XSKY_STORE" — a worker on a second machine without an object store keeps its own)."""
    return (
        f"{where} is not the store the workers that ran it wrote to: a worker on another "
        "machine, or with another XSKY_HOME, keeps its own unless every worker and this command "
        "share an object store (the same XSKY_STORE=s3://… everywhere; see docs/deployment.md, "
        "Several machines)"
    )


async def cmd_log(args: argparse.Namespace) -> int:
    settings = load_settings()
    x = await XSky.connect(settings)
    run = await x.get(args.id)
    key = await run.transcript_key(args.task)
    events, offset = await _read_from(run, key, 0)
    _show(events, args.json)
    if not args.follow:
        if not events and not args.json:
            gone = removed_by_gc(open_objects(settings), args.id)
            if gone is not None:
                out.print(
                    cell(
                        f"no transcript for {args.task} in {args.id}: the run's stored objects were {gone}"
                    )
                )
                return 0
            elsewhere = elsewhere_said(open_objects(settings).where)
            out.print(
                cell(
                    f"no transcript for {args.task} in {args.id}: {UNLOGGED_SAID} (`status "
                    f"{args.id}`); for any other agent, {elsewhere}"
                    if await run.task_ended(args.task)
                    else f"no transcript yet for {args.task} in {args.id} (it has not started, "
                    f"or {elsewhere})"
                )
            )
        return 0
    told: str | None = None  # the request the follower was last told of
    while True:
        done, waiting = await _task_state(run, args.task)
        events, offset = await _read_from(run, key, offset)
        _show(events, args.json)
        if done:
            return 0
        if waiting is not None and waiting != told and not args.json:
            out.print(cell(waiting_hint(args.id, args.task, waiting), style="yellow"))
        told = waiting
        await asyncio.sleep(0.5)
