"""``skills status`` and ``skills atoms TRAJ``: what the transcript watcher has done and learned.

Trajectory ids, projects, models and atoms' intents and tags come from transcripts (and a
model's reading of them): they are printed as literal text.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich.table import Table
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from cli.render import cell, one_line, out, print_json, shown
from cli.skills_cmd import current_sources, schedule_id
from xsky.client import connect_client as connect
from xsky.config import Settings, load_settings
from xsky.errors import UsageError

if TYPE_CHECKING:
    from activities.skills.store import SkillStore


def register(s: argparse._SubParsersAction) -> None:
    a = s.add_parser(
        "status", help="sources, cursors, lag, last tick, deltas in flight, atoms per trajectory"
    )
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=lambda x: asyncio.run(cmd_status(x)))

    a = s.add_parser("atoms", help="the atoms of one trajectory (an id, or a unique part of one)")
    a.add_argument("traj", help="trajectory id, e.g. traj_cc_shopapp_3f2a9c1e")
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=cmd_atoms)


# -- status --------------------------------------------------------------------------------------


def _store(settings: Settings) -> SkillStore | None:
    from activities.skills.store import SkillStore

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
    out.print(f"[bold]skills home[/] {shown(facts['home'])}")
    for s in facts["sources"]:
        out.print(
            f"  source {s['kind']:<11} {shown(s['path'])}"
            + ("" if s["exists"] else "  [yellow](missing)[/]")
        )
    sched = facts["schedule"]
    if "error" in sched:
        out.print(f"[bold]watch[/] unknown: {shown(sched['error'])}")
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
        + (f": {shown(', '.join(flight[:5]))}" if flight else "")
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
                cell(t.traj_id),
                str(t.atoms),
                cell(t.project or ""),
                cell(t.model or ""),
                f"{t.md_chars:,}",
            )
        out.print(table)
    else:
        out.print("no trajectories yet: `starter.py skills scan --once` ingests now")


# -- atoms ---------------------------------------------------------------------------------------


def cmd_atoms(args: argparse.Namespace) -> int:
    from activities.skills.scan import read_atoms

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
    table = Table(title=cell(f"{matches[0]}: {len(atoms)} atoms"), title_justify="left")
    for col in ("#", "view chars", "ux", "skills used", "tags", "intent"):
        table.add_column(col, overflow="fold")
    for a in atoms:
        ux = f"{a.ux_score} ({a.provenance.ux_score_by[0]})"
        skills = ", ".join(a.used_skills) + (
            " (self-reported)" if a.provenance.used_skills_by == "self-reported" else ""
        )
        table.add_row(
            cell(a.atom_id.rsplit("_", 1)[1]),
            f"{a.offset_start}–{a.offset_end}",
            cell(ux),
            cell(skills),
            cell(", ".join(a.tags)),
            cell(one_line(a.intent, 90)),
        )
    out.print(table)
    return 0
