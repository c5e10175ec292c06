"""``skills …``: the transcript watcher and what it has learned.

skills sources | add-source KIND PATH | remove-source KIND PATH
skills watch [--every 30s] | unwatch          the Temporal Schedule xsky-skills-watch
skills scan --once                            one tick now, without the schedule
skills status                                 sources, cursors, lag, last tick, deltas in flight, atoms
skills atoms TRAJ                             a trajectory's atoms
skills list | show NAME [--branch B] | history NAME | candidates NAME | canary NAME
skills promote NAME | discard NAME            a person decides a canary (recorded in git)
skills export --to DIR                        main versions, spec-valid, for Claude Code / Codex
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape
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

from cli.connect import connect
from cli.plans import UsageError
from cli.render import err, one_line, out, print_json
from workflows.skills_watch import SkillsScanWorkflow
from xsky.client import queue_pollers
from xsky.config import Settings, load_settings
from xsky.settings import SettingsError, load_layers, parse_settings, settings_paths, skill_sources
from xsky.skill_runs import ScanInput, SkillsScanInput, SkillsScanResult
from xsky.skill_sources import Source, expand, resolve
from xsky.transcripts import SOURCE_KINDS

if TYPE_CHECKING:
    from activities.skills_store import SkillStore


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

    a = s.add_parser(
        "status", help="sources, cursors, lag, last tick, deltas in flight, atoms per trajectory"
    )
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=lambda x: asyncio.run(cmd_status(x)))

    a = s.add_parser("atoms", help="the atoms of one trajectory (an id, or a unique part of one)")
    a.add_argument("traj", help="trajectory id, e.g. traj_cc_shopapp_3f2a9c1e")
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=cmd_atoms)

    from cli import skill_library_cmd

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
            str(r["kind"]),
            escape(str(r["path"])),
            "yes" if r["exists"] else "[yellow]no[/]",
            escape(str(r["from"])),
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
        err.print(
            f"[yellow]note:[/] {escape(str(root))} does not exist yet; it is watched once it does"
        )
    if any(_same(e, args.kind, args.path) for e in listed):
        out.print(
            f"{args.kind} {escape(args.path or '(default place)')} is already registered in {escape(str(path))}"
        )
        return 0
    skills["sources"] = [*listed, entry]
    _write(path, data)
    out.print(
        f"registered {args.kind} {escape(args.path or '(default place)')} in {escape(str(path))}{note}"
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
        shown = ", ".join(f"{e['kind']} {e.get('path') or '(default)'}" for e in listed) or "none"
        raise UsageError(
            f"{args.kind} {args.path or '(default place)'} is not registered in {path}; registered: {shown}"
        )
    data.setdefault("skills", {})["sources"] = kept
    _write(path, data)
    out.print(
        f"removed {args.kind} {escape(args.path or '(default place)')} from {escape(str(path))}; "
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
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


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
    for p in result.problems:
        err.print(f"[yellow]![/] {escape(p)}")
    return 1 if result.failed else 0


# -- status --------------------------------------------------------------------------------------


def _store(settings: Settings) -> SkillStore | None:
    from activities.skills_store import SkillStore

    if not (settings.skills_home / "state.db").exists():
        return None
    return SkillStore(settings.skills_home)


async def _schedule_facts(client: Client, settings: Settings) -> dict[str, Any]:
    sid = schedule_id(settings)
    try:
        desc = await client.get_schedule_handle(sid).describe()
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            return {"id": sid, "exists": False}
        raise
    spec = desc.schedule.spec
    every = spec.intervals[0].every.total_seconds() if spec.intervals else None
    recent = (
        desc.info.recent_actions[-1].started_at.isoformat() if desc.info.recent_actions else None
    )
    upcoming = desc.info.next_action_times[0].isoformat() if desc.info.next_action_times else None
    return {
        "id": sid,
        "exists": True,
        "every": every,
        "paused": desc.schedule.state.paused,
        "lastTick": recent,
        "nextTick": upcoming,
        "ticks": desc.info.num_actions,
        "skipped": desc.info.num_actions_skipped_overlap,
    }


async def _in_flight(client: Client, settings: Settings) -> list[str]:
    query = f"WorkflowType = 'SkillDeltaWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue = '{settings.skills_queue}'"
    ids = []
    async for wf in client.list_workflows(query, limit=50):
        ids.append(wf.id)
    return ids


async def cmd_status(args: argparse.Namespace) -> int:
    settings = load_settings()
    sources = current_sources()
    facts: dict[str, Any] = {"home": str(settings.skills_home)}
    facts["sources"] = [
        {"kind": s.kind, "path": str(s.root), "exists": s.root.is_dir()} for s in sources
    ]
    store = _store(settings)
    files: list[Any] = []
    trajs: list[Any] = []
    if store is not None:
        try:
            files = list(store.files().values())
            trajs = store.trajs()
            facts["lastScan"] = store.get_meta("last_scan")
        finally:
            store.close()
    now = time.time()
    behind = [f for f in files if f.status == "active" and f.size > f.cursor]
    facts["cursors"] = {
        "files": len(files),
        "active": sum(1 for f in files if f.status == "active"),
        "gone": sum(1 for f in files if f.status == "gone"),
        "bytesIngested": sum(f.cursor for f in files),
        "bytesBehind": sum(f.size - f.cursor for f in behind),
        "filesBehind": len(behind),
        "lagSeconds": round(max((now - f.mtime_ns / 1e9 for f in behind), default=0.0), 1),
    }
    facts["atoms"] = {t.traj_id: t.atoms for t in trajs}
    try:
        client = await connect(settings)
        facts["schedule"] = await _schedule_facts(client, settings)
        facts["inFlight"] = await _in_flight(client, settings)
    except UsageError as e:
        facts["schedule"], facts["inFlight"] = {"error": str(e).splitlines()[0]}, []
    if args.json:
        print_json(facts)
        return 0
    _print_status(facts, trajs, settings)
    return 0


def _print_status(facts: dict[str, Any], trajs: list[Any], settings: Settings) -> None:
    out.print(f"[bold]skills home[/] {escape(facts['home'])}")
    for s in facts["sources"]:
        out.print(
            f"  source {s['kind']:<11} {escape(s['path'])}"
            + ("" if s["exists"] else "  [yellow](missing)[/]")
        )
    sched = facts["schedule"]
    if "error" in sched:
        out.print(f"[bold]watch[/] unknown: {escape(sched['error'])}")
    elif not sched["exists"]:
        out.print(
            f"[bold]watch[/] off: start it with `starter.py skills watch` (schedule {sched['id']})"
        )
    else:
        state = "paused" if sched["paused"] else f"every {sched['every']:g}s"
        out.print(
            f"[bold]watch[/] {sched['id']}: {state}; {sched['ticks']} ticks ({sched['skipped']} skipped while one ran); "
            f"last {sched['lastTick'] or 'never'}, next {sched['nextTick'] or '-'}"
        )
    last = facts.get("lastScan")
    if last:
        when = datetime.fromtimestamp(last["at"], UTC).isoformat(timespec="seconds")
        out.print(
            f"[bold]last scan[/] {when}: {last['files']} files in {last['seconds'] * 1000:.0f} ms, {last['deltas']} delta(s)"
        )
    c = facts["cursors"]
    out.print(
        f"[bold]cursors[/] {c['active']} files followed ({c['gone']} gone), {c['bytesIngested']:,} bytes ingested; "
        f"{c['filesBehind']} file(s) with {c['bytesBehind']:,} bytes not yet ingested (lag {c['lagSeconds']:g}s)"
    )
    flight = facts["inFlight"]
    out.print(
        f"[bold]deltas in flight[/] {len(flight)}"
        + (f": {', '.join(flight[:5])}" if flight else "")
    )
    if trajs:
        table = Table(
            title=f"atoms per trajectory ({sum(t.atoms for t in trajs)} in all)",
            title_justify="left",
        )
        for col in ("trajectory", "atoms", "project", "model", "view chars"):
            table.add_column(col, overflow="fold")
        for t in trajs:
            table.add_row(
                t.traj_id,
                str(t.atoms),
                escape(t.project or ""),
                escape(t.model or ""),
                f"{t.md_chars:,}",
            )
        out.print(table)
    else:
        out.print("no trajectories yet: `starter.py skills scan --once` ingests now")


# -- atoms ---------------------------------------------------------------------------------------


def cmd_atoms(args: argparse.Namespace) -> int:
    from activities.skills_ingest import read_atoms

    settings = load_settings()
    store = _store(settings)
    if store is None:
        raise UsageError(
            f"nothing ingested yet in {settings.skills_home}; run `starter.py skills scan --once`"
        )
    try:
        ids = [t.traj_id for t in store.trajs()]
    finally:
        store.close()
    matches = [t for t in ids if t == args.traj] or [t for t in ids if args.traj in t]
    if not matches:
        raise UsageError(
            f"no trajectory matches {args.traj!r}; `starter.py skills status` lists them"
        )
    if len(matches) > 1:
        raise UsageError(
            f"{args.traj!r} matches {len(matches)} trajectories ({', '.join(matches[:5])}…); give more of the id"
        )
    atoms = read_atoms(settings.skills_home, matches[0])
    if args.json:
        print_json([a.model_dump(mode="json") for a in atoms])
        return 0
    table = Table(title=f"{matches[0]}: {len(atoms)} atoms", title_justify="left")
    for col in ("#", "view chars", "ux", "skills used", "tags", "intent"):
        table.add_column(col, overflow="fold")
    for a in atoms:
        ux = f"{a.ux_score} ({a.provenance.ux_score_by[0]})"
        skills = ", ".join(a.used_skills) + (
            " (self-reported)" if a.provenance.used_skills_by == "self-reported" else ""
        )
        table.add_row(
            a.atom_id.rsplit("_", 1)[1],
            f"{a.offset_start}–{a.offset_end}",
            ux,
            escape(skills),
            escape(", ".join(a.tags)),
            escape(one_line(a.intent, 90)),
        )
    out.print(table)
    return 0
