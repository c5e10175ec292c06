"""``skills …``: the transcript watcher and what it has learned.

skills sources | add-source KIND PATH | remove-source KIND PATH
skills watch [--every 30s] | unwatch          the Temporal Schedule xsky-skills-watch
skills scan --once                            one tick now, without the schedule
skills status                                 sources, cursors, lag, last tick, deltas in flight, atoms
skills atoms TRAJ                             a trajectory's atoms
skills list | show NAME [--branch B] | history NAME | candidates NAME | canary NAME
skills promote NAME | discard NAME            a person decides a canary (recorded in git)
skills export --to DIR                        main versions, spec-valid, for Claude Code / Codex

``status`` and ``atoms`` are in :mod:`cli.skill_status_cmd`, the library's commands (``list``
to ``export``) in :mod:`cli.skill_library_cmd`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.table import Table
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.service import RPCError, RPCStatusCode

from activities.fsio import atomic_write
from cli.render import cell, err, out, print_json, shown
from workflows.skills.watch import SkillsScanWorkflow
from xsky.client import connect_client as connect
from xsky.client import queue_pollers
from xsky.config import Settings, load_settings
from xsky.errors import UsageError
from xsky.security.settings import (
    SettingsError,
    load_layers,
    parse_settings,
    settings_paths,
    skill_sources,
)
from xsky.skills.runs import ScanInput, SkillsScanInput, SkillsScanResult
from xsky.skills.sources import Source, expand, resolve
from xsky.skills.transcripts import SOURCE_KINDS


def schedule_id(settings: Settings) -> str:
    """``xsky-skills-watch``; with a non-default task queue, suffixed by it (one per deployment)."""
    return (
        "xsky-skills-watch"
        if settings.task_queue == "xsky"
        else f"xsky-skills-watch-{settings.task_queue}"
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "skills",
        help="learn skills from coding-agent transcripts (sources, watch, scan, status, atoms)",
    )
    s = p.add_subparsers(dest="skills_command", metavar="ACTION")
    s.required = True

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
        a.add_argument(
            "--project",
            action="store_true",
            help="in ./.xsky/settings.json instead of ~/.xsky/settings.json",
        )
        a.set_defaults(handler=cmd_add_source if name == "add-source" else cmd_remove_source)

    a = s.add_parser("watch", help="create or update the Temporal Schedule that scans every 30 s")
    a.add_argument("--every", default="30s", help="interval: 30s, 2m, 1h or seconds (default 30s)")
    a.set_defaults(handler=lambda x: asyncio.run(cmd_watch(x)))

    a = s.add_parser("unwatch", help="delete the watch schedule (ingested atoms stay)")
    a.set_defaults(handler=lambda x: asyncio.run(cmd_unwatch(x)))

    a = s.add_parser("scan", help="scan the sources now, without the schedule")
    a.add_argument(
        "--once",
        action="store_true",
        help="one tick, then exit (the only mode; the schedule repeats)",
    )
    a.add_argument(
        "--timeout", type=float, default=600.0, help="seconds to wait for the tick to finish"
    )
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=lambda x: asyncio.run(cmd_scan(x)))

    from cli import skill_library_cmd, skill_status_cmd

    skill_status_cmd.register(s)
    skill_library_cmd.register(s)


# -- sources -----------------------------------------------------------------------------------


def current_sources() -> list[Source]:
    try:
        return resolve(skill_sources(load_layers()), os.environ)
    except SettingsError as e:
        raise UsageError(str(e)) from None


def cmd_sources(args: argparse.Namespace) -> int:
    sources = current_sources()
    rows = [
        {"kind": s.kind, "path": str(s.root), "exists": s.root.is_dir(), "from": s.origin}
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
    out.print(table)
    return 0


def _settings_file(project: bool) -> Path:
    return dict(settings_paths())["project" if project else "user"]


def _load_settings_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8")
    try:
        parse_settings(text, str(path))  # a broken file is reported, never overwritten
    except SettingsError as e:
        raise UsageError(f"{e}\n  fix the file first; nothing was changed") from None
    return json.loads(text) if text.strip() else {}


def _check_kind(kind: str) -> None:
    if kind not in SOURCE_KINDS:
        raise UsageError(f"unknown source kind {kind!r}; kinds: {', '.join(SOURCE_KINDS)}")


def cmd_add_source(args: argparse.Namespace) -> int:
    _check_kind(args.kind)
    path = _settings_file(args.project)
    data = _load_settings_json(path)
    skills = data.setdefault("skills", {})
    listed = skills.get("sources")
    note = ""
    if listed is None:  # the defaults were in effect: keep them, and add this one
        listed = [{"kind": k} for k in SOURCE_KINDS]
        note = " (the default sources stay registered; remove any with `skills remove-source KIND`)"
    entry: dict[str, str] = {"kind": args.kind}
    if args.path:
        entry["path"] = args.path
    root = expand(args.path, os.environ) if args.path else None
    if root is not None and not root.is_dir():
        err.print(f"[yellow]note:[/] {shown(root)} does not exist yet; it is watched once it does")
    if any(_same(e, args.kind, args.path) for e in listed):
        out.print(
            f"{shown(args.kind)} {shown(args.path or '(default place)')} is already registered in {shown(path)}"
        )
        return 0
    skills["sources"] = [*listed, entry]
    _write(path, data)
    out.print(
        f"registered {shown(args.kind)} {shown(args.path or '(default place)')} in {shown(path)}{note}"
    )
    return 0


def cmd_remove_source(args: argparse.Namespace) -> int:
    _check_kind(args.kind)
    path = _settings_file(args.project)
    data = _load_settings_json(path)
    listed = (data.get("skills") or {}).get("sources")
    if listed is None:
        listed = [{"kind": k} for k in SOURCE_KINDS]
    kept = [e for e in listed if not _same(e, args.kind, args.path)]
    if len(kept) == len(listed):
        registered = (
            ", ".join(f"{e['kind']} {e.get('path') or '(default)'}" for e in listed) or "none"
        )
        raise UsageError(
            f"{args.kind} {args.path or '(default place)'} is not registered in {path}; registered: {registered}"
        )
    data.setdefault("skills", {})["sources"] = kept
    _write(path, data)
    out.print(
        f"removed {shown(args.kind)} {shown(args.path or '(default place)')} from {shown(path)}; "
        "what was already ingested stays"
    )
    return 0


def _same(entry: dict[str, Any], kind: str, path: str | None) -> bool:
    if entry.get("kind") != kind:
        return False
    mine, theirs = path, entry.get("path")
    if not mine or not theirs:
        return not mine and not theirs
    return expand(mine, os.environ) == expand(theirs, os.environ)


def _write(path: Path, data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, text, sync=False, mode=0o666)


# -- schedule ----------------------------------------------------------------------------------


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


def _schedule(settings: Settings, every: timedelta) -> Schedule:
    return Schedule(
        action=ScheduleActionStartWorkflow(
            SkillsScanWorkflow.run,
            SkillsScanInput(),
            id=f"xsky-skills-scan-{settings.task_queue}",
            task_queue=settings.skills_queue,
            static_summary="skills watcher tick: scan transcripts → delta workflows",
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
        state=ScheduleState(
            note=f"xsky skills watcher: every {every.total_seconds():g}s; `starter.py skills unwatch` stops it"
        ),
    )


async def cmd_watch(args: argparse.Namespace) -> int:
    every = parse_every(args.every)
    settings = load_settings()
    client = await connect(settings)
    sid = schedule_id(settings)
    schedule = _schedule(settings, every)
    try:
        await client.create_schedule(sid, schedule)
        verb = "created"
    except ScheduleAlreadyRunningError:

        async def update(_: ScheduleUpdateInput) -> ScheduleUpdate:
            return ScheduleUpdate(schedule=schedule)

        await client.get_schedule_handle(sid).update(update)
        verb = "updated"
    out.print(
        f"{verb} schedule {sid}: a scan every {every.total_seconds():g}s (overlapping ticks are skipped) on "
        f"queue '{settings.skills_queue}'"
    )
    out.print(
        f"  see it in the Web UI: {settings.ui_url.rstrip('/')}/namespaces/{settings.namespace}/schedules/{sid}"
    )
    await _warn_without_worker(client, settings)
    return 0


async def cmd_unwatch(args: argparse.Namespace) -> int:
    settings = load_settings()
    client = await connect(settings)
    sid = schedule_id(settings)
    try:
        await client.get_schedule_handle(sid).delete()
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            out.print(f"no schedule {sid}: nothing was watching")
            return 0
        raise
    out.print(f"deleted schedule {sid}; atoms already ingested stay in {settings.skills_home}")
    return 0


async def _warn_without_worker(client: Client, settings: Settings) -> bool:
    try:
        # live pollers only: a dead worker stays listed by the server for minutes
        if await queue_pollers(
            client, settings, settings.skills_queue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW
        ):
            return True
    except RPCError:
        return True  # cannot tell; do not cry wolf
    err.print(
        f"[yellow]no worker is serving the skill pipeline (queue '{settings.skills_queue}')[/]: start one with "
        "`python starter.py up` (or `python worker.py`) on the machine with the transcripts"
    )
    return False


# -- scan ----------------------------------------------------------------------------------------


async def cmd_scan(args: argparse.Namespace) -> int:
    settings = load_settings()
    client = await connect(settings)
    if not await _warn_without_worker(client, settings):
        return 2
    wid = f"xsky-skills-scan-once-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:4]}"
    handle = await client.start_workflow(
        SkillsScanWorkflow.run,
        SkillsScanInput(scan=ScanInput()),
        id=wid,
        task_queue=settings.skills_queue,
        static_summary="skills scan --once",
    )
    err.print(f"scanning ({wid}) …")
    try:
        result: SkillsScanResult = await asyncio.wait_for(handle.result(), args.timeout)
    except TimeoutError:
        raise UsageError(
            f"the scan is still running after {args.timeout:g}s; it goes on durably: "
            f"see `starter.py skills status` or {settings.ui_link(wid)}"
        ) from None
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
