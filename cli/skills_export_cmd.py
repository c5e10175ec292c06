"""``skills export --to DIR [--canary] [--watch]``: the library's skills for Claude Code and Codex.

Without ``--canary``: every published skill's ``main`` version, validated, copied into
``DIR/<name>/``. With ``--canary``: a skill with a staging version under canary becomes a
symlink switched between main and staging per 6-hour window (see
:mod:`xsky.skills.canary_window`); every switch is logged in the skill's
``.canary/switches.jsonl``, so sessions that used the folder are scored on the side they
read. Re-running it (cron) or ``--watch`` performs the switches that are due. Only folders
xsky exported are ever replaced.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path

from activities.skills import canary_export
from activities.skills import git as skill_git
from activities.skills.files import skill_dir, slugs
from cli.render import cell, out, print_json
from xsky.config import Settings, load_settings
from xsky.errors import ConnectError, UsageError
from xsky.skills import canary_window as cw

EXPORT_MARK = canary_export.EXPORT_MARK


def register(s: argparse._SubParsersAction) -> None:
    a = s.add_parser(
        "export",
        help="copy every skill's main version into a folder (e.g. ~/.claude/skills or .agents/skills);"
        " --canary: staging versions take turns with main, per 6-hour window",
    )
    a.add_argument(
        "--to", required=True, help="destination folder; each skill becomes <DIR>/<name>/"
    )
    a.add_argument(
        "--canary",
        action="store_true",
        help="a skill under canary is a symlink switched between main and staging per "
        f"{cw.WINDOW.total_seconds() / 3600:g}-hour window (switches logged in its .canary/switches.jsonl);"
        " run it again (cron) or use --watch to make the switches that are due",
    )
    a.add_argument(
        "--watch",
        action="store_true",
        help="keep running: export again every --every seconds (Ctrl-C stops)",
    )
    a.add_argument(
        "--every", type=float, default=300.0, help="seconds between runs with --watch (300)"
    )
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    dest = Path(args.to).expanduser()
    if dest.exists() and not dest.is_dir():
        raise UsageError(
            f"--to {dest}: is a file, not a folder; give a folder to export the skills into"
        )
    if args.watch and args.every < 1:
        raise UsageError(f"--every {args.every:g}: give at least 1 second between runs")
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(
            f"--to {dest}: cannot create it ({e.strerror}); give a folder you can write"
        ) from None
    while True:
        code = _once(args, dest)
        if not args.watch:
            return code
        try:
            time.sleep(args.every)
        except KeyboardInterrupt:
            return code


def _once(args: argparse.Namespace, dest: Path) -> int:
    settings = load_settings()
    now = datetime.now(UTC)
    placed = []
    for name in slugs(settings.skills_home):
        folder = skill_dir(settings.skills_home, name)
        if skill_git.is_repo(folder):
            placed.append(canary_export.export_skill(folder, name, dest, args.canary, now))
        else:
            placed.append(canary_export.export_plain(folder, name, dest))
    done = [p for p in placed if not p.skipped]
    skipped = [f"{p.name}: {p.skipped}" for p in placed if p.skipped]
    lines = [_canary_line(settings.skills_home, p, now) for p in done if p.how != "copy"]
    canaries = [c for c in lines if c]
    told = asyncio.run(_tell(settings, canaries)) if canaries else ""
    if args.json:
        print_json(
            {
                "exported": [p.name for p in done],
                "skipped": skipped,
                "to": str(dest),
                "canary": canaries,
                "switched": [p.name for p in done if p.switched],
                "told": told,
            }
        )
        return 0
    out.print(
        cell(
            f"exported {len(done)} skill(s) to {dest}: {', '.join(p.name for p in done) or 'none'}"
        )
    )
    for c in canaries:
        commit, nxt = str(c["commit"]), str(c["next"] or "")
        out.print(
            cell(
                f"  {c['skill']}: {c['side']} {commit[:10]} ({c['how']})"
                + (" — switched now" if c["switched"] else "")
                + (f"; next switch {nxt[:16]}Z" if nxt else "")
            )
        )
    for line in skipped:
        out.print(cell(f"  skipped {line}"))
    if told:
        out.print(cell(f"  {told}"))
    return 0


async def _tell(settings: Settings, canaries: list[dict[str, object]]) -> str:
    """Tell each skill's entity since when its staging version is exported, so the canary's
    14 days count from then (sent at every run: a restarted entity hears it again).

    Best effort: the export works without a server; the 14 days then count from the staging
    commit until a later run gets through."""
    from temporalio.service import RPCError

    from client.connect import connect_client
    from xsky.skills.models import entity_workflow_id

    due = [c for c in canaries if c.get("since")]
    if not due:
        return ""
    try:
        client = await connect_client(settings)
    except ConnectError as e:
        return (
            f"not told the entities since when staging is exported ({e}); the next run tries again"
        )
    missed = []
    for c in due:
        handle = client.get_workflow_handle(
            entity_workflow_id(settings.task_queue, str(c["skill"]))
        )
        try:
            await handle.signal(
                "canary_exported",
                cw.CanaryExported(staging_commit=str(c["staging"]), at=str(c["since"])),
            )
        except RPCError:  # the entity is not running: it starts from the files when needed
            missed.append(str(c["skill"]))
    if missed:
        return f"no running entity for {', '.join(missed)}: told at a later run"
    return ""


def _canary_line(home: Path, p: canary_export.Placed, now: datetime) -> dict[str, object] | None:
    """What a user needs to see of a skill under canary: the side it shows and when that changes."""
    folder = skill_dir(home, p.name)
    staging = skill_git.branch_commit(folder, "staging")
    if not staging or p.commit is None:
        return None
    nxt = cw.next_switch(p.name, staging, now)
    since = cw.canary_started(canary_export.read_switches(folder), staging)
    return {
        "skill": p.name,
        "side": p.side,
        "commit": p.commit,
        "how": p.how,
        "switched": p.switched,
        "next": nxt.isoformat(timespec="minutes").replace("+00:00", "") if nxt else None,
        "staging": staging,
        # when an exported folder first showed this staging version: the canary's clock
        "since": since.isoformat(timespec="seconds") if since else None,
        "log": str(canary_export.switches_path(folder)),
    }
