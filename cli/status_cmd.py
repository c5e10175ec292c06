"""``status`` and ``result``: a run's task board, its results (on :mod:`client`).

Its own module, importing at the top only what parsing its arguments needs: Temporal's client
and the leader's models load when the command runs, and the board's models only once the
run is found (``status`` of an unknown id answers without them; issue 37: under 0.5 s)."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from client.server_view import ServerView
    from xsky.errors import XSkyError
    from xsky.runs import AgentReport

# A task's statuses (xsky/leader/tasks.py: TaskStatus, whose module brings the plan's models;
# tests/unit/test_cli_quick_reads.py holds the two equal).
TASK_STATUSES = (
    "pending",
    "dispatched",
    "in_progress",
    "completed",
    "failed",
    "blocked",
    "cancelled",
    "skipped",
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="the task board of a run")
    p.add_argument("id", help="workflow id of the run")
    p.add_argument(
        "--offset", type=int, default=0, help="first task to show (large boards come in pages)"
    )
    p.add_argument("--limit", type=int, default=200, help="tasks per page (at most 2000)")
    p.add_argument(
        "--status",
        dest="only",
        choices=list(TASK_STATUSES),
        help="only tasks in this status",
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="the live board until the run ends, then its results (like `follow ID`)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_status(a)))

    p = sub.add_parser("result", help="the results of a finished run")
    p.add_argument("id", help="workflow id of the run")
    p.add_argument("--agent", help="print only this agent's full result")
    p.add_argument("--wait", action="store_true", help="wait for a running run to finish")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_result(a)))


def _past_the_end(args: argparse.Namespace, total: int) -> str:
    """An --offset past the board's end: how many tasks there are, and the offsets that exist."""
    if total == 0:
        what = f"no task of {args.id} is {args.only}" if args.only else f"{args.id} has no tasks"
        return f"--offset {args.offset}: {what}; drop --offset"
    tasks = f"{total} task{'' if total == 1 else 's'}" + (f" {args.only}" if args.only else "")
    return f"--offset {args.offset}: {args.id} has only {tasks}; give --offset 0 to {total - 1}"


async def cmd_status(args: argparse.Namespace) -> int:
    from client import XSky
    from xsky.config import load_settings
    from xsky.errors import NoWorkerError, UsageError, WorkflowTaskFailingError

    settings = load_settings()
    if not 1 <= args.limit <= 2000 or args.offset < 0:
        raise UsageError("--limit takes 1 to 2000 and --offset 0 or more")
    async with XSky.connect(settings) as x:
        run = await x.get(args.id)
        # (the board's code, once there is a run to show: an unknown id is answered without it)
        from activities.artifacts import removed_by_gc
        from activities.storage import open_objects
        from cli.board import agent_shown, board_table, leader_line, page_note, tally
        from cli.follow_cmd import watch
        from cli.render import cell, one_line, out, print_json
        from client.attempts import attempt_ends, retry_lines

        if args.follow:
            if args.offset or args.only:
                raise UsageError("--follow shows the whole board: drop --offset and --status")
            return await watch(run, settings, args.json)
        status = await run.temporal_status()
        try:
            page = await run.board(args.offset, args.limit, args.only)
        except (NoWorkerError, WorkflowTaskFailingError) as e:
            # No worker answered in time (under load, or its worker stopped), none serves the
            # run's queue at all, or the run's workflow task fails on them: what the server
            # itself knows, rather than nothing (docs/cli.md: `status`).
            return _server_side(args, status, e, await run.server_view())
        if args.offset and args.offset >= page.total:
            raise UsageError(_past_the_end(args, page.total))
        retried = [t for t in page.tasks if t.tries > 1]
        first = await run.first_run_id() if retried else None
        follow_ups = await run.follow_up_kinds()  # follow-ups of an ended run, forks of any
    why: dict[str, list[str]] = {}
    gone = None
    if retried:
        objects = open_objects(settings)
        why = {t.id: retry_lines(t, attempt_ends(objects, args.id, first, t)) for t in retried}
        # gc removed the attempt ledgers: said once for the run, not "(why is not recorded)" a task
        gone = None if any(why.values()) else removed_by_gc(objects, args.id)
    if args.json:
        removed = {"attemptsRemoved": gone} if gone else {}
        wire = page.wire()
        if status != "running":  # (the board's last word, "finishing" or "running", is past)
            wire["state"] = status
        print_json({"workflowId": args.id, "status": status, **wire, "attempts": why, **removed})
        return 0
    # running: say what it is doing (paused, waiting …)
    state = page.state if status == "running" else status
    out.print(
        board_table(
            page.tasks, title=f"{args.id} — {state} — {tally(page.counts)}", caption=page_note(page)
        )
    )
    for note in page.notes:  # markdown for the Web UI, holding agents' questions: literal here
        out.print(cell(leader_line(note.replace("**", ""))))
    if page.budget is not None and page.budget.limits is None:  # (a budget is among the notes)
        out.print(cell(page.budget.summary()))
    if gone:
        named = ", ".join(t.id for t in retried[:8]) + (" …" if len(retried) > 8 else "")
        out.print(
            cell(
                f"{len(retried)} task(s) tried more than once ({named}): why each attempt ended "
                f"is not known now — the run's stored objects were {gone}"
            )
        )
    for t in retried if not gone else []:  # why each retry happened: a line per attempt that ended
        out.print(cell(f"{t.id} ({agent_shown(t)}): {t.tries} attempts"))
        for line in why[t.id] or ["(why is not recorded)"]:
            out.print(cell(f"  {one_line(line, 160)}"))
    for follow_id, kind in follow_ups:
        how = "forked as" if kind == "fork" else "resumed by"
        out.print(cell(f"↪ {how} {follow_id}: `starter.py status {follow_id}`"))
    out.print(cell(f"agent logs: `starter.py log {args.id} T-n`"))
    out.print(cell(f"Web UI: {settings.ui_link(args.id)}"))
    return 0


def _server_side(args: argparse.Namespace, status: str, why: XSkyError, view: ServerView) -> int:
    from cli.hints import HINTS
    from cli.render import cell, out, print_json
    from xsky.config import load_settings
    from xsky.errors import WorkersBusyError, WorkerStoppedError, WorkflowTaskFailingError

    if args.json:
        print_json(
            {"workflowId": args.id, "status": status, "boardUnavailable": str(why), **view.wire()}
        )
        return 0
    out.print(cell(f"{args.id} — {status} — the board is not available now: {why.fact}"))
    for line in view.lines():
        out.print(cell(f"  {line}"))
    if isinstance(why, WorkflowTaskFailingError):
        again = why.fix
    elif isinstance(why, (WorkersBusyError, WorkerStoppedError)):
        again = "ask again in a moment for the whole board"
    else:  # no worker serves the run's queue: asking again will not help until one does
        again = f"{HINTS['worker']}, then ask again for the whole board"
    out.print(cell(f"{again}; Web UI: {load_settings().ui_link(args.id)}"))
    return 0


async def cmd_result(args: argparse.Namespace) -> int:
    from cli.follow_cmd import print_result
    from cli.render import cell, out, print_json
    from client import XSky
    from xsky.config import load_settings
    from xsky.errors import UsageError

    settings = load_settings()
    async with XSky.connect(settings) as x:
        run = await x.get(args.id)
        if args.agent:
            # (without --wait, an agent of a run still going answers if it has ended)
            report, text = await run.agent_result(
                args.agent, await run.result() if args.wait else None, so_far=not args.wait
            )
            if report.status not in ("completed", "skipped", "failed", "cancelled"):
                raise UsageError(
                    f"{report.task_id} of {args.id} has not ended ({report.status}); add --wait, "
                    f"or watch it with `starter.py status {args.id}`"
                )
            ok = report.status in ("completed", "skipped")
            if args.json:
                print_json({**report.wire(), "result": text})
            elif ok:
                # The result as it is, lines unwrapped: wrapped at the piped width (160), a long
                # line came out broken by newlines the agent never wrote, and rich's wrapping is
                # quadratic in a line's length — a 10 MiB result printed nothing for minutes
                # (chaos14: 4 MiB took 22 s, 10 MiB over 4 min; now ~1 s)
                out.print(cell(text), soft_wrap=True)
            else:
                out.print(cell(agent_failure(report)))
            return 0 if ok else 1
        if not args.wait and await run.temporal_status() == "running":
            raise UsageError(
                f"{args.id} is still running; add --wait, or watch it with `starter.py status {args.id}`"
            )
        result = await run.result()
        return print_result(result, settings, args.json)


def agent_failure(report: AgentReport) -> str:
    """What a person reads of an agent that did not complete: its state, dispatches and error.
    ``attempts`` counts dispatches (the leader sent the task again), not the board's tries."""
    tries = f" after {report.attempts} dispatches" if report.attempts > 1 else ""
    error = report.error or "no error was recorded"
    return f"{report.task_id} ({report.name}) {report.status}{tries}: {error}"
