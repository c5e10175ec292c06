"""The watch tool: one poll of a durable watch (xsky/plan/watches.py), run as an activity.

It looks at what the watch names every ``every`` seconds — a page's text through Chromium
(``dom``, with the browser tool, so the egress rules and the run's allowed hosts apply), an
HTTP response (``http``, with ``http_get``), a file of the run's workspace (``file``), or
nothing (``timer``: it waits ``every`` seconds) — until its fingerprint differs from
``since`` (the last poll's; a first poll takes its first look as the baseline) or ``wait``
seconds pass. It answers JSON: ``{"fired": true, "hash": …, "text": …}`` (the text as it is
now, its tail) or ``{"fired": false, "hash": …, "why": …}``. The fingerprint it starts from
is in its arguments, so a retried poll (a worker lost) misses no change and fires none twice.
A poll with none (the watch's first, or the first after a person fired it by hand) keeps its
first look in the store (one write, beside its dispatch's ledger), where a retry reads it: a
change made while its worker was down was measured from the retry's own first look, and lost.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from activities.sandbox.confine import confine, open_inside
from activities.tools import ToolContext, ToolError, ToolResult, optional_number
from activities.tools.http import http_get
from activities.tools.web import navigate
from xsky.artifacts import run_folder, safe_component
from xsky.plan.watches import TEXT_CHARS

EVENTS = ("dom", "http", "file", "timer")
READ_CHARS = 1 << 20  # of a watched file, read at a time


async def _look(ctx: ToolContext, event: str, args: dict[str, Any]) -> tuple[str, str]:
    """What the watched thing says now: its fingerprint and its text (a file's: its tail)."""
    if event == "dom":
        seen = await navigate(
            ctx,
            {
                "url": args["url"],
                "selector": args.get("selector"),
                "screenshot": False,
                "format": "json",
            },
            carry=False,  # a look every few seconds: a fresh page, none kept
        )
        text = str(json.loads(seen.text).get("text", ""))  # the page's (or element's) text
        return _fingerprint(text), text
    if event == "http":
        text = (await http_get(ctx, {"url": args["url"]})).text
        return _fingerprint(text), text
    try:
        target = confine(ctx.workspace, str(args["path"]))
    except ToolError as e:
        raise ToolError(f"watch: {e}") from None
    # In a thread: a watched log may be large, and the worker's other agents go on meanwhile.
    return await asyncio.to_thread(_read_file, ctx.workspace, target, str(args["path"]))


def _read_file(workspace: Path, target: Path, named: str) -> tuple[str, str]:
    """A workspace file's fingerprint (of its whole text, read in pieces: a log of gigabytes
    is not held at once) and its tail. Opened as the file tools open one — a folder at a time,
    no link followed (a command beside it may swap a folder for a link out of the workspace
    between the check and the read), without blocking, a regular file only (an agent may leave
    a FIFO or a device where the watch looks)."""
    try:
        fd = open_inside(workspace, target, os.O_RDONLY)
    except FileNotFoundError:
        return _fingerprint(""), ""  # not there yet: its appearing is a change
    except ToolError as e:
        raise ToolError(f"watch {named!r}: {e}") from None
    try:
        digest = hashlib.sha256()
        tail = ""
        # Text as Python reads it (newlines made \n, bad bytes replaced): the same fingerprint
        # as the whole text's, so a watch that began before this reader fires on no change.
        with open(fd, encoding="utf-8", errors="replace", closefd=False) as fh:
            while piece := fh.read(READ_CHARS):
                digest.update(piece.encode("utf-8", "surrogatepass"))
                tail = (tail + piece)[-TEXT_CHARS:]
        return digest.hexdigest(), tail
    finally:
        os.close(fd)


def _fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


async def watch(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    event = args.get("event")
    if event not in EVENTS:
        raise ToolError(f"watch: event must be one of {', '.join(EVENTS)}, not {event!r}")
    if event in ("dom", "http") and not str(args.get("url", "")).strip().startswith(
        ("http://", "https://")
    ):
        raise ToolError(f"watch: a {event} watch needs an http(s) url, not {args.get('url')!r}")
    args = {**args, "url": str(args.get("url", "")).strip()}
    every = optional_number(args, "every", 2, 0.2, 3600, "watch")
    wait = optional_number(args, "wait", 3600, 0.1, 7 * 24 * 3600, "watch")
    first = optional_number(args, "waitFirst", 0, 0, 86400, "watch")
    since = args.get("since")
    what = args.get("url") or args.get("path") or f"a {every:g}s timer"
    firing = f"firing {args.get('firing', 1)} of at most {args.get('maxFirings', '?')}"
    if first:
        ctx.heartbeat(f"waiting {first:g}s before watching {what} again (the watch's minInterval)")
        await _sleep(ctx, first, f"waiting before watching {what}")
    began = time.monotonic()
    if event == "timer":
        await _sleep(ctx, every, f"{firing}: the timer fires in {every:g}s")
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return _said({"fired": True, "hash": stamp, "text": f"the timer fired at {stamp}"})
    baseline = since if isinstance(since, str) and since else None
    kept = _first_look(ctx) if baseline is None else None
    if kept is not None:
        baseline = await asyncio.to_thread(kept.read)  # an earlier attempt's first look
    looks = 0
    while True:
        now, text = await _look(ctx, event, args)
        if baseline is None:
            baseline = now  # a first poll: what it sees first is what changes are measured from
            if kept is not None:
                await asyncio.to_thread(kept.keep, now)
        elif now != baseline:
            return _said({"fired": True, "hash": now, "text": text[-TEXT_CHARS:]})
        quiet = time.monotonic() - began
        if quiet + every > wait:
            return _said({"fired": False, "hash": baseline, "why": f"no change within {wait:g}s"})
        looks += 1
        # (the first look is the baseline: "no change for 0s" said nothing a person could use)
        since_note = (
            "first look taken"
            if looks == 1
            else f"no change for {quiet:.1f}s"
            if quiet < 10
            else f"no change for {quiet:.0f}s"
        )
        note = f"watching {what} ({firing}): {since_note}, looking every {every:g}s"
        ctx.heartbeat(note)
        ctx.progress(note)  # the board's line (reports are throttled by the attempt)
        await _sleep(ctx, every, f"watching {what}")


class _FirstLook:
    """A first poll's first look, in the store: the baseline a retry of it measures from."""

    def __init__(self, ctx: ToolContext):
        self.objects = ctx.store.objects
        self.key = (
            f"{run_folder(ctx.run_id)}/_watch/{safe_component(ctx.agent_id)}-"
            f"{ctx.file_prefix}first-look"
        )

    def read(self) -> str | None:
        try:
            said = self.objects.get(self.key).decode("utf-8").strip()
        except (FileNotFoundError, UnicodeDecodeError):
            return None
        return said or None

    def keep(self, fingerprint: str) -> None:
        self.objects.put(self.key, fingerprint.encode(), sync=True)


def _first_look(ctx: ToolContext) -> _FirstLook | None:
    """Where a first poll keeps its first look (None outside a run's attempt)."""
    return _FirstLook(ctx) if ctx.run_id and ctx.file_prefix else None


async def _sleep(ctx: ToolContext, seconds: float, note: str) -> None:
    """Wait, heartbeating at least every few seconds (a long wait is not a lost worker)."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        await asyncio.sleep(min(left, 5.0))
        ctx.heartbeat(note)


def _said(value: dict[str, Any]) -> ToolResult:
    return ToolResult(json.dumps(value, ensure_ascii=False), details={"fired": value["fired"]})
