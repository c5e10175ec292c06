"""Runs from the command line: ``run`` starts one; ``status``, ``result`` and ``list`` look at them
(on :mod:`client`)."""

from __future__ import annotations

import argparse
import asyncio
import difflib
import fnmatch
import json
from collections.abc import Coroutine
from typing import Any, get_args

from pydantic import ValidationError
from rich.table import Table

from activities.artifacts import removed_by_gc
from activities.storage import open_objects
from cli.args import parse_pairs
from cli.board import agent_shown, board_table, page_note, tally
from cli.budget_cmd import add_budget_flags, budget_of
from cli.follow_cmd import follow, print_result, watch
from cli.hints import HINTS, cli_message
from cli.render import (
    cell,
    counted,
    err,
    one_line,
    out,
    print_json,
    print_problems,
    say_located,
    shown,
)
from client import Run, XSky
from client.attempts import attempt_ends, retry_lines
from client.server_view import ServerView
from client.settings import resolve_roles
from client.start import new_run_id
from xsky.config import Settings, load_settings
from xsky.errors import (
    NoWorkerError,
    PlanError,
    UnservedRunError,
    UsageError,
    WorkersBusyError,
    WorkerStoppedError,
    WorkflowTaskFailingError,
    XSkyError,
)
from xsky.leader.search import XSKY_STATUSES
from xsky.leader.tasks import TaskStatus
from xsky.plan.agent_config import tool_name
from xsky.plan.budget import (
    MIN_ANSWER,
    RunBudget,
    checks_warning,
    config_budget,
    narrow,
    with_plan,
)
from xsky.plan.models import Workflow, plain_error
from xsky.plan.variables import check_names
from xsky.runs import AgentReport, RunOptions
from xsky.security.allow_hosts import host_rule
from xsky.security.mcp import is_mcp
from xsky.security.permissions import rule_problems
from xsky.security.roles import BUILTIN_ROLES, TOOLS
from xsky.security.rules import parse_rule


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="validate a workflow XML and start it as a durable run")
    p.add_argument("plan", help="path of the workflow XML file")
    p.add_argument(
        "--var", action="append", default=[], metavar="K=V", help="workflow variable (repeatable)"
    )
    p.add_argument(
        "--context",
        action="append",
        default=[],
        metavar="K=V",
        help="context value for {{context.K}} (repeatable)",
    )
    p.add_argument(
        "--id",
        help="workflow id (default: xsky-<taskId, or the plan's name>-<6 hex>, new for every start)",
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="show a live task board until the run ends, then the results",
    )
    p.add_argument("--max-parallel", type=int, help="agents running at once (default 8)")
    p.add_argument(
        "--review",
        action="store_true",
        help="wait for approve-plan (or a replan) before any agent starts",
    )
    p.add_argument(
        "--review-timeout", type=float, help="seconds to wait for the review (default 3600)"
    )
    p.add_argument(
        "--on-review-timeout",
        choices=["approve", "cancel"],
        help="what a review timeout does (default cancel)",
    )
    p.add_argument(
        "--max-replans", type=int, help="automatic replans on failures and stalls (default 2)"
    )
    p.add_argument(
        "--replan-on-any-failure",
        dest="replan_deterministic",
        action="store_true",
        default=None,
        help="replan automatically after deterministic failures too (a non-zero exit, an HTTP "
        "4xx); by default such a failure is final and waits for your retry, skip or replan",
    )
    p.add_argument(
        "--hold-on-failure",
        type=float,
        nargs="?",
        const=3600.0,
        metavar="SECONDS",
        help="keep the run open after a task failed, with an escalation E-n, for SECONDS "
        "(default 3600): retry, skip, replan or `end` it",
    )
    add_allow_host(p)
    add_budget_flags(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_run(a)))

    p = sub.add_parser("status", help="the task board of a run")
    p.add_argument("id", help="workflow id of the run")
    p.add_argument(
        "--offset", type=int, default=0, help="first task to show (large boards come in pages)"
    )
    p.add_argument("--limit", type=int, default=200, help="tasks per page (at most 2000)")
    p.add_argument(
        "--status",
        dest="only",
        choices=list(get_args(TaskStatus)),
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

    p = sub.add_parser(
        "list", help="recent runs, with what each is doing (xsky's search attributes)"
    )
    p.add_argument("--limit", type=int, default=20, help="how many runs, newest first (default 20)")
    p.add_argument("--status", choices=XSKY_STATUSES, help="only runs in this xsky status")
    p.add_argument(
        "--waiting", action="store_true", help="only runs waiting on a person (XskyPending > 0)"
    )
    p.add_argument(
        "--failed", action="store_true", help="only runs with failed agents (XskyFailed > 0)"
    )
    p.add_argument("--plan", help="only runs of the plan with this name")
    p.add_argument(
        "--descendants",
        metavar="ID",
        help="only the follow-up runs and forks of run ID, and theirs, at any depth (XskyLineage)",
    )
    p.add_argument(
        "--query",
        help="a Temporal list filter added to the above, e.g. \"StartTime > '2026-11-01T00:00:00Z'\"",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_list(a)))


def add_allow_host(p: argparse.ArgumentParser) -> None:
    """The options a run's start shares (run, plan): hosts it may reach, and the leader's
    judgment."""
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="a host this run's agents may reach (repeatable): 127.0.0.1:8080 opens that one "
        "local port; a local or private host needs its port",
    )
    p.add_argument(
        "--messages",
        choices=["queue", "interrupt", "reject"],
        help="what a nudge does to an agent in the middle of a step: queue (read at its next "
        "step, the default), interrupt (the step stops; the attempt starts again from its "
        "checkpoint and reads it first), reject (refused while it runs)",
    )
    p.add_argument(
        "--coordinator",
        choices=["auto", "act", "advise", "off"],
        help="the leader's judgment: act (a model checks results and the goal, answers "
        "workers, approves within --delegate rules), advise (records it for you), off "
        "(mechanical rules only); default auto: act when the workers have a model",
    )
    p.add_argument(
        "--delegate",
        action="append",
        default=[],
        metavar="RULE",
        help="a permission rule (allow-rule grammar, e.g. 'shell(make test:*)') within which the "
        "leader may approve tool calls for you (repeatable); the worker's settings may add more",
    )


# -- run ------------------------------------------------------------------------------------


def _parse_context(items: list[str]) -> dict[str, Any]:
    """``--context k=v``: values that parse as JSON (numbers, objects) are kept as such."""
    context: dict[str, Any] = {}
    for key, raw in parse_pairs(items, "--context").items():
        try:
            context[key] = json.loads(raw)
        except ValueError:
            context[key] = raw
    return context


async def cmd_run(args: argparse.Namespace) -> int:
    settings = load_settings()
    variables = parse_pairs(args.var, "--var")
    context = _parse_context(args.context)
    options = run_options(args)
    async with XSky.connect(settings) as x:
        try:
            wf = x.load(args.plan, variables, list(context), on_note=say_located)
        except PlanError as e:
            print_problems(e, args.plan)
            err.print("nothing was started")
            return 2
        for warning in role_budget_warnings(options, wf, _known_roles(settings)):
            if not args.json:
                err.print(f"[yellow]warning:[/] {cell(warning)}")
        stuck = unstartable_warning(with_plan(options.budget, wf.budget), wf)
        if stuck is not None and not args.json:
            err.print(f"[yellow]warning:[/] {cell(stuck)}")
        small = _checks_warning(settings, options, wf)
        if small is not None and not args.json:
            err.print(f"[yellow]warning:[/] {cell(small)}")
        start = x.run(
            wf,
            variables=variables,
            context=context,
            options=options,
            id=args.id,
            on_wait=lambda note: err.print(cell(note)),
            on_start=lambda wid: setattr(args, "starting", wid),  # for Ctrl-C
        )
        return await announce(
            args, settings, x, start, options, f"({counted(len(wf.agents), 'agent')})"
        )


def _known_roles(settings: Settings) -> set[str]:
    """Every role an agent may take: the built-in ones and the settings' (the plan's own are
    the plan's to say)."""
    try:
        return set(resolve_roles(settings))
    except UsageError:  # a settings file that is not valid: said where roles are used
        return set(BUILTIN_ROLES)


def role_budget_warnings(options: RunOptions, wf: Workflow, roles: set[str]) -> list[str]:
    """``--role-budget ROLE:…`` for a role no agent of the plan has: a UsageError when no such
    role exists at all (a typo, which capped nothing), a warning when it exists (a replan may
    give an agent that role; until then it caps nothing)."""
    per_role = options.budget.per_role if options.budget is not None else {}
    used = list(dict.fromkeys(a.name for a in wf.agents))
    known = roles | {r.name for r in wf.roles} | set(used)
    problems, warnings = [], []
    for role in per_role:
        if role in used:
            continue
        has = f"the plan's agents are {', '.join(used)}"
        if role not in known:
            close = difflib.get_close_matches(role, [*used, *sorted(known - set(used))], n=1)
            hint = f" — did you mean {close[0]}?" if close else f"; {has}"
            problems.append(f"--role-budget {role}: no role is named {role!r}{hint}")
        else:
            warnings.append(
                f"--role-budget {role}: no agent of this plan has that role ({has}); it caps "
                "only agents a replan gives it"
            )
    if problems:
        raise UsageError("; ".join(problems) + "; nothing was started")
    return warnings


def unstartable_warning(budget: RunBudget | None, wf: Workflow) -> str | None:
    """The model agents whose share of the budget (their own cap, else the run's reserve) is
    more than the run's whole token limit: none of them can ever be admitted, and the run waits
    on an escalation as soon as one is next (said before it starts, whatever the coordinator)."""
    if budget is None or budget.run.tokens is None:
        return None
    limit = budget.run.tokens
    shares: dict[str, int] = {}
    for agent in wf.agents:
        if tool_name(agent.config) is not None:
            continue  # a direct tool agent spends nothing of the budget
        cap = narrow(
            narrow(budget.per_agent, budget.per_role.get(agent.name)),
            config_budget(agent.config),
        )
        # (as the leader admits it, xsky/leader/budget.py _share: a cap above the reserve
        # starts with the reserve, not with the whole cap)
        reserve = max(budget.reserve_tokens(), MIN_ANSWER)
        share = min(cap.tokens, reserve) if cap is not None and cap.tokens is not None else reserve
        if share > limit:
            shares[f"T-{agent.id}"] = int(share)
    if not shares:
        return None
    named = ", ".join(list(shares)[:6]) + (" …" if len(shares) > 6 else "")
    most = max(shares.values())
    return (
        f"the budget of {limit:,} tokens is less than what {len(shares)} model agent(s) "
        f"({named}) reserve to start — up to {most:,} tokens each (an agent's own cap, else the "
        f"run's reserve, {budget.reserve_tokens():,}: --budget-reserve): they can never start, and "
        f"the run will wait on a budget escalation; give --budget tokens={most} or more, a "
        "smaller --budget-reserve, or --agent-budget tokens=…"
    )


def _checks_warning(settings: Settings, options: RunOptions, wf: Workflow) -> str | None:
    """The run's budget is too small for its leader's checks (said before it starts; the
    board says it too). Not for a run whose coordinator is off, or an ``auto`` one where this
    machine knows of no model (its workers then likely have none either)."""
    if options.coordinator == "off" or (
        options.coordinator == "auto" and not (settings.model or settings.coordinator_model)
    ):
        return None
    models = sum(1 for a in wf.agents if tool_name(a.config) is None)
    return checks_warning(with_plan(options.budget, wf.budget), models)


async def announce(
    args: argparse.Namespace,
    settings: Settings,
    x: XSky,
    start: Coroutine[Any, Any, Run],
    options: RunOptions,
    what: str,
) -> int:
    """Start the run, say what was started and where to see it; with --follow, watch it to
    the end. A run no worker took is said (exit 2 unless followed: it begins once one polls)."""
    unserved: UnservedRunError | None = None
    try:
        run = await start
    except UnservedRunError as e:
        unserved = e
        run = await x.get(e.subject)
    args.started = run.id  # for the Ctrl-C message
    if unserved is not None:
        err.print(f"[yellow]warning:[/] {shown(cli_message(unserved))}")
    code = await _announced(args, settings, run, options, what)
    return 2 if unserved is not None and not args.follow else code


async def _announced(
    args: argparse.Namespace, settings: Settings, run: Run, options: RunOptions, what: str
) -> int:
    if args.json and not args.follow:
        print_json({"workflowId": run.id, "runId": run.handle.result_run_id, "ui": run.ui_url})
        return 0
    if not args.json:
        out.print(f"started [bold]{shown(run.id)}[/] {what}")
        out.print(cell(f"Web UI: {run.ui_url}"))
        if options.allow_hosts:
            out.print(cell(f"opened for this run: {', '.join(options.allow_hosts)} (--allow-host)"))
        if options.review:
            out.print(
                cell(
                    f"waiting for review: `starter.py plan {run.id}` shows the plan and its version N, then "
                    f"`starter.py approve-plan {run.id} --version N`"
                )
            )
    if not args.follow:
        return 0
    return print_result(await follow(run, quiet=args.json), settings, args.json)


def _unknown_tool(rule: str) -> list[str]:
    """The rule's tool, when it is none (as `permissions check` judges a tool): a rule for a
    tool that does not exist reads well and covers nothing, so nothing would be delegated."""
    tool = parse_rule(rule).tool
    if tool in TOOLS or is_mcp(tool) or ("*" in tool and fnmatch.filter(TOOLS, tool)):
        return []
    close = difflib.get_close_matches(tool, list(TOOLS), n=1)
    if close:
        return [f"{rule!r}: unknown tool {tool!r} — did you mean {close[0]}?"]
    return [
        f"{rule!r}: unknown tool {tool!r}; tools: {', '.join(TOOLS)}, and the tools of "
        "MCP servers (mcp__<server>__<tool>)"
    ]


def run_options(args: argparse.Namespace) -> RunOptions:
    """RunOptions from the command line; bad values are usage errors."""
    values: dict[str, Any] = {}
    flags = {
        "max_parallel": "max_parallel",
        "review_timeout": "review_timeout",
        "on_review_timeout": "review_timeout_action",
        "max_replans": "max_auto_replans",
        "hold_on_failure": "hold_on_failure",
        "replan_deterministic": "replan_deterministic",
    }
    flag_of = {key: "--" + flag.replace("_", "-") for flag, key in flags.items()}
    for flag, key in flags.items():
        value = getattr(args, flag, None)
        if value is not None:
            values[key] = value
    if getattr(args, "review", False):
        values["review"] = True
    if getattr(args, "coordinator", None):
        values["coordinator"] = args.coordinator
    if getattr(args, "messages", None):
        values["messages"] = args.messages
    for rule in getattr(args, "delegate", []):
        problems = rule_problems([rule]) or _unknown_tool(rule)
        if problems:
            raise UsageError(f"--delegate {problems[0]}")
        values.setdefault("delegate", []).append(rule.strip())
    for text in getattr(args, "allow_host", []):
        try:
            host_rule(text)
        except ValueError as e:
            raise UsageError(f"--allow-host {e}") from None
        values.setdefault("allow_hosts", []).append(text.strip())
    if (budget := budget_of(args)) is not None:
        values["budget"] = budget
    try:
        return RunOptions.model_validate(values)
    except ValidationError as e:
        raise UsageError(
            "; ".join(
                f"{flag_of.get(str(err['loc'][0]), err['loc'][0])} {plain_error(err)} "
                f"(not {err.get('input')!r})"
                for err in e.errors()
            )
        ) from None


# -- status / result / list --------------------------------------------------------------------


def _past_the_end(args: argparse.Namespace, total: int) -> str:
    """An --offset past the board's end: how many tasks there are, and the offsets that exist."""
    if total == 0:
        what = f"no task of {args.id} is {args.only}" if args.only else f"{args.id} has no tasks"
        return f"--offset {args.offset}: {what}; drop --offset"
    tasks = f"{total} task{'' if total == 1 else 's'}" + (f" {args.only}" if args.only else "")
    return f"--offset {args.offset}: {args.id} has only {tasks}; give --offset 0 to {total - 1}"


async def cmd_status(args: argparse.Namespace) -> int:
    settings = load_settings()
    if not 1 <= args.limit <= 2000 or args.offset < 0:
        raise UsageError("--limit takes 1 to 2000 and --offset 0 or more")
    async with XSky.connect(settings) as x:
        run = await x.get(args.id)
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
        out.print(cell(note.replace("**", "")))
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


def list_query(args: argparse.Namespace) -> str:
    """The Temporal visibility query for ``list``'s filters (what :meth:`XSky.runs` sends)."""
    from client.listing import list_query as build

    return build(
        args.query,
        status=args.status,
        waiting=args.waiting,
        failed=args.failed,
        plan=args.plan,
        descendants=getattr(args, "descendants", None),
    )


async def cmd_list(args: argparse.Namespace) -> int:
    settings = load_settings()
    async with XSky.connect(settings) as x:
        runs = await x.runs(
            args.query,
            status=args.status,
            waiting=args.waiting,
            failed=args.failed,
            plan=args.plan,
            descendants=args.descendants,
            limit=args.limit,
        )
    rows = [
        {
            "workflowId": r.id,
            "status": r.status,
            "xskyStatus": r.xsky_status,
            "plan": r.plan,
            "failed": r.failed,
            # requests waiting for a person: the table's "waiting" column ("pending": its
            # first name, kept for scripts that read it)
            "waiting": r.pending,
            "pending": r.pending,
            "start": r.start.isoformat() if r.start else None,
            "close": r.close.isoformat() if r.close else None,
        }
        for r in runs
    ]
    if args.json:
        print_json(rows)
        return 0
    table = Table(title=cell(f"recent runs ({settings.address})"), title_justify="left")
    for col in ("workflow id", "plan", "status", "failed", "waiting", "started", "took"):
        table.add_column(col)
    for r in runs:
        took = f"{(r.close - r.start).total_seconds():.1f}s" if r.close and r.start else "running"
        # Temporal's status says whether it runs; xsky's what it is doing (paused, waiting, …).
        state = r.status if r.status != "running" or not r.xsky_status else r.xsky_status
        table.add_row(
            cell(r.id),
            cell(r.plan or ""),
            cell(state),
            str(r.failed or ""),
            str(r.pending or ""),
            r.start.isoformat()[:19].replace("T", " ") if r.start else "",
            took,
        )
    out.print(
        table
        if rows
        else (
            "no runs match these filters"
            if any(
                (args.status, args.waiting, args.failed, args.plan, args.descendants, args.query)
            )
            # (examples/demo.xml verbatim fails: it reads a site only `demo` serves — walk10)
            else "no runs yet: start one with `starter.py run examples/chain.xml --follow`, or "
            "`starter.py demo` (it serves the demo's site and runs examples/demo.xml)"
        )
    )
    return 0


__all__ = ["check_names", "new_run_id", "register"]
