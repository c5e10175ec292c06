"""Going back: fork a run at any agent with an edit, and compare two runs."""

from __future__ import annotations

import argparse
import asyncio

from cli.follow_cmd import follow, print_result
from cli.render import cell, out, print_json
from cli.steer_cmd import checked_plan_file
from client import XSky
from client._consts import RUN_ID
from client.fork import direct_tool
from xsky.config import load_settings
from xsky.errors import UsageError
from xsky.plan.xml import parse_workflow


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fork",
        help="a new run from any agent of a run (ended or running): what it does not lead to is "
        "carried over, it and what follows run again, with an edit",
    )
    p.add_argument("id", help="workflow id of the run to fork")
    p.add_argument("task", help="the agent to start again from (T-4 or 4)")
    edit = p.add_mutually_exclusive_group()
    edit.add_argument("--task", dest="text", help="its new task text")
    edit.add_argument("--input", dest="input_text", help="its new input")
    edit.add_argument(
        "--plan",
        help="a new plan (XML file) for the fork; the agents it keeps "
        "unchanged above the fork point keep their results",
    )
    p.add_argument(
        "--id", dest="fork_id", help="the fork's workflow id (default: <the run's id>-fork-<6 hex>)"
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="show the fork's live task board until it ends, then its results (as `run` does)",
    )
    p.add_argument(
        "--again",
        action="store_true",
        help="run again what must not be repeated unasked (an agent whose calls are effects — a "
        'POST, a push, "idempotent": false — or whose call is in doubt): without it, such '
        "agents are named and nothing starts",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_fork(a)))
    p = sub.add_parser("diff", help="what differs between two runs, agent by agent")
    p.add_argument("a", metavar="RUN_A", help="workflow id of one run")
    p.add_argument("b", metavar="RUN_B", help="workflow id of the other (e.g. a fork of it)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_diff(a)))


async def cmd_fork(args: argparse.Namespace) -> int:
    # An id given must be one, as `run --id` refuses it (the API takes a falsy id as none
    # given: `--id ""` quietly got a generated one).
    if args.fork_id is not None and not RUN_ID.fullmatch(args.fork_id):
        raise UsageError(
            f"run id {args.fork_id!r}: use letters, digits and . _ - : (at most 200), "
            "e.g. xsky-nightly-1; nothing was started"
        )
    plan = None
    if args.plan is not None:
        checked = checked_plan_file(args.plan, "nothing was started")
        if checked is None:
            return 2
        plan = checked[1]
    settings = load_settings()
    x = await XSky.connect(settings)
    run = await x.get(args.id)
    running = await run.temporal_status() == "running"
    if args.text is not None and not args.json:
        tool = direct_tool(parse_workflow(await run.plan()), args.task.removeprefix("T-"))
        if tool is not None:  # the fork runs the same call again: say so before it does
            out.print(
                cell(
                    f"note: {args.task} runs a direct tool ({tool}): its new task text changes "
                    "nothing it does — fork with --plan FILE to change its <config>"
                )
            )
    fork = await run.fork(
        args.task, args.text, args.input_text, plan, id=args.fork_id, again=args.again
    )
    args.started = fork.id  # for the Ctrl-C message: the fork goes on, not the run forked
    if args.json and not args.follow:
        print_json({"fork": fork.id, "of": run.id, "at": args.task})
        return 0
    if not args.json:
        out.print(cell(f"{fork.id}: a fork of {run.id} at {args.task}"))
        if running:  # (results carry over; the files its agents wrote do not)
            out.print(
                cell(
                    f"note: {run.id} is still running, so the fork works in a workspace of its "
                    "own — results are carried, files its agents wrote are not; fork it once it "
                    "has ended to work in its workspace"
                )
            )
        follow_it = "" if args.follow else f"follow it: starter.py follow {fork.id} · "
        out.print(cell(f"{follow_it}compare: starter.py diff {run.id} {fork.id}"))
    if not args.follow:
        return 0
    # as `run --follow`: the board until it ends, then its results (--json: the result)
    return print_result(await follow(fork, quiet=args.json), settings, args.json)


async def cmd_diff(args: argparse.Namespace) -> int:
    if args.a == args.b:
        raise UsageError("give two different runs to compare")
    settings = load_settings()
    x = await XSky.connect(settings)
    a, b = await x.get(args.a), await x.get(args.b)
    d = await a.diff(b)
    if args.json:
        print_json(
            {
                "summary": d.summary(),
                "agents": [{"id": g.agent_id, "differs": g.what} for g in d.agents],
                "onlyIn": {d.a: d.only_a, d.b: d.only_b},
                "run": d.run,
            }
        )
        return 0
    out.print(cell(d.summary(), style="bold"))
    for line in d.run:  # the runs' own differences first: they explain the agents'
        out.print(cell(f"  {line}"))
    for g in d.agents:
        if g.same:
            continue
        out.print(cell(f"T-{g.agent_id}", style="bold"))
        for line in g.what:
            out.print(cell(f"  {line}"))
    return 0
