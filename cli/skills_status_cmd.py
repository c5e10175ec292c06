"""``skills status`` and ``skills atoms TRAJ``: what the transcript watcher has done and learned.

Trajectory ids, projects, models and atoms' intents and tags come from transcripts (and a
model's reading of them): they are printed as literal text. ``status`` also lists every
record type the adapters met, counted, and whether a rule read it ("interpreted") or it was
kept unread ("opaque"): a record type that carries the person's words and stays opaque is
a lost prompt, and this is where it shows. Text the adapters recognised as *not* the
person's intent (task notifications, warm-ups, compaction agents, command output, menu
letters) is listed apart, by kind, so what was kept out of the tasks is visible too.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.table import Table

from activities.skills.store import RecordCount, TrajRow
from cli.hints import cli_message
from cli.render import cell, one_line, out, print_json, shown
from client.skills import Skills
from xsky.config import load_settings, moved_note
from xsky.errors import UsageError
from xsky.skills.transcripts import NOT_INTENT


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


async def cmd_status(args: argparse.Namespace) -> int:
    status = await Skills(load_settings()).status()
    if args.json:
        print_json(status.as_json())
        return 0
    _print_status(status.as_json(), status.trajs)
    _print_records(status.records)
    return 0


def _print_records(all_records: list[RecordCount]) -> None:
    prefix = NOT_INTENT + "/"
    _print_not_intent([r for r in all_records if r.record.startswith(prefix)])
    records = [r for r in all_records if not r.record.startswith(prefix)]
    if not records:
        return
    opaque = sum(r.count for r in records if r.how == "opaque")
    bad = sum(r.count for r in records if r.how == "unreadable")
    unread = f", {bad:,} unreadable: no JSON object, passed over" if bad else ""
    table = Table(
        title=f"records read ({sum(r.count for r in records):,} in all, {opaque:,} kept opaque"
        f"{unread})",
        title_justify="left",
    )
    for col in ("source", "record type", "count", "trajectories", "taken as"):
        table.add_column(col, overflow="fold")
    for r in records:
        table.add_row(
            cell(r.kind),
            cell(r.record),
            f"{r.count:,}",
            str(len(r.trajs)),
            {"opaque": "[yellow]opaque[/]", "unreadable": "[red]unreadable[/]"}.get(
                r.how, "interpreted"
            ),
        )
    out.print(table)


def _print_not_intent(records: list[RecordCount]) -> None:
    """What the adapters recognised as not a person's intent, by kind (task notifications,
    warm-ups, compaction agents, command output, menu letters …): never an atom's intent."""
    if not records:
        return
    table = Table(
        title=f"recognised as not a person's intent ({sum(r.count for r in records):,} in all)",
        title_justify="left",
    )
    for col in ("source", "kind", "count", "trajectories"):
        table.add_column(col, overflow="fold")
    for r in sorted(records, key=lambda r: (r.kind, -r.count, r.record)):
        table.add_row(
            cell(r.kind), cell(r.record.split("/", 1)[1]), f"{r.count:,}", str(len(r.trajs))
        )
    out.print(table)


def _print_status(facts: dict[str, Any], trajs: list[TrajRow]) -> None:
    out.print(f"[bold]skills home[/] {shown(facts['home'])}")
    if facts.get("formerHome"):
        out.print(f"  [yellow]note[/] {shown(moved_note(Path(facts['formerHome'])))}")
    for s in facts["sources"]:
        out.print(
            f"  source {s['kind']:<11} {shown(s['path'])}"
            + ("" if s["exists"] else "  [yellow](missing)[/]")
        )
    sched = facts["schedule"]
    if "error" in sched:
        said = cli_message(
            UsageError(sched["error"], sched.get("fix") or None, topic=sched.get("topic") or None)
        )
        out.print(f"[bold]watch[/] unknown: {shown(said)}")
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
    traj, atoms = Skills(load_settings()).atoms(args.traj)
    if args.json:
        print_json([a.model_dump(mode="json") for a in atoms])
        return 0
    table = Table(title=cell(f"{traj}: {len(atoms)} atoms"), title_justify="left")
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
