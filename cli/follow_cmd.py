"""``follow RUN`` (and ``status RUN --follow``): the live board of any run, re-attached.

The same board ``run --follow`` shows (:meth:`client.Run.follow`), through server
outages, until the run ends; then the results and the outcome. On a run that has ended it
prints the last board and the outcome at once. Ctrl-C leaves the run running (cli/main.py
says how to re-attach).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from rich.live import Live
from temporalio.client import WorkflowFailureError

from cli.board import board_table, page_note, results_table, tally
from cli.render import cell, err, out, print_json, shown
from client import ConnectionLost, Run, WorkerSilent, XSky
from xsky.config import Settings, load_settings
from xsky.runs import RunResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "follow",
        help="the live task board of a run until it ends, then its results (Ctrl-C leaves it running)",
    )
    p.add_argument("id", help="workflow id of the run")
    p.add_argument("--json", action="store_true", help="no board: wait, then print the result")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_follow(a)))


async def cmd_follow(args: argparse.Namespace) -> int:
    settings = load_settings()
    async with XSky.connect(settings) as x:
        run = await x.get(args.id)  # an unknown id: RunNotFoundError, said by main
        return await watch(run, settings, args.json)


async def watch(run: Run, settings: Settings, as_json: bool = False) -> int:
    """Follow ``run`` to its end and print how it ended: 0 completed, 1 otherwise."""
    status = await run.temporal_status()
    if status != "running" and not as_json:
        out.print(cell(f"{run.id} has ended ({status}); its last board and results:"))
    elif not as_json:
        err.print(cell(f"following {run.id}: Ctrl-C stops following, the run goes on"))
    try:
        result = await follow(run, quiet=as_json)
    except WorkflowFailureError as e:  # ended without a result of ours (terminated, timed out)
        status = await run.temporal_status()
        cause = e.cause.message if e.cause is not None and hasattr(e.cause, "message") else str(e)
        if as_json:
            print_json({"workflowId": run.id, "status": status, "reason": cause})
        else:
            out.print(cell(f"{run.id} ended: {status} ({cause})"))
            out.print(cell(f"Web UI: {settings.ui_link(run.id)}"))
        return 1
    return print_result(result, settings, as_json)


async def follow(run: Run, quiet: bool = False) -> RunResult:
    """Show the live board until the run ends (through server outages); return its result."""
    if quiet:
        return await run.result()
    try:
        await _live_board(run)
    except BaseException:
        # what Ctrl-C says starts on a line of its own: a file's board ends without a newline
        # (walk10: "…┘interrupted; the run goes on"); a terminal's Live gives the line its end
        if not out.is_terminal:
            out.print()
        raise
    out.print()  # the results table starts on a line of its own, in a terminal or a file
    return await run.result()


async def _live_board(run: Run) -> None:
    """The live board, until the run ends."""
    lost = False
    with Live(console=out, refresh_per_second=4, transient=False) as live:
        async for event in run.follow():
            if isinstance(event, WorkerSilent) and event.task:
                live.console.print(
                    f"[yellow]no worker has taken {shown(event.task)} for {event.seconds:.0f} s: is a "
                    f"worker of its agent's kind running? start one with `python worker.py` (or "
                    f"`--kinds KIND --no-leader`; `starter.py status {shown(run.id)}` shows the "
                    "agent); still following[/]"
                )
                continue
            if isinstance(event, WorkerSilent):
                live.console.print(
                    f"[yellow]no worker has answered for {event.seconds:.0f} s: {shown(event.error)}; "
                    "still following[/]"
                )
                continue
            if isinstance(event, ConnectionLost):
                lost = True
                live.console.print(
                    f"[yellow]cannot reach the server ({shown(event.error)}); reconnecting — "
                    "the run resumes where it was once the server is back[/]"
                )
                continue
            if lost:
                lost = False
                live.console.print("[green]reconnected[/]")
            live.update(
                board_table(
                    event.tasks, title=f"{run.id} — {tally(event.counts)}", caption=page_note(event)
                )
            )


def print_result(result: RunResult, settings: Settings, as_json: bool) -> int:
    """The results table (or JSON) and the outcome; exit 0 for a completed run, 1 for a
    failed or cancelled one."""
    if as_json:
        print_json(result.wire())
    else:
        out.print(results_table(result, _store_reader(settings)))
        if result.budget is not None:  # what it spent (each agent's: `budget ID`, --json)
            out.print(cell(result.budget.summary()))
        elif not result.usage.empty():
            out.print(cell(f"spent: {result.usage.text()}"))
        out.print(cell(f"Web UI: {settings.ui_link(result.workflow_id)}"))
    return 0 if result.status == "completed" else 1


def _store_reader(settings: Settings) -> Any:
    from activities.artifacts import open_store

    return open_store(settings).read_text
