"""``run``, ``status``, ``result``, ``list``: starting runs and looking at them."""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from datetime import datetime, timedelta
from typing import Any, get_args

from pydantic import ValidationError
from rich.live import Live
from rich.table import Table
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from activities.artifacts import ArtifactStore, put_blob, read_blob
from cli.args import parse_pairs
from cli.board import board_table, page_note, result_text, results_table, tally
from cli.connect import connect
from cli.outcome import run_outcome
from cli.plans import UsageError, load_plan
from cli.pollers import require_worker
from cli.render import err, out, print_json, print_problems
from cli.roles_cmd import resolve_permissions, resolve_roles
from workflows.leader import LeaderWorkflow
from xsky.artifacts import blob_ref
from xsky.board import TaskStatus
from xsky.leader_state import BoardPage, PageRequest
from xsky.config import Settings, load_settings
from xsky.errors import PlanError
from xsky.xml import workflow_to_xml
from xsky.models import Workflow
from xsky.runs import AgentReport, RunInput, RunOptions, RunResult
from xsky.variables import agent_references
from xsky.search import SEARCH_ATTRIBUTES, XSKY_STATUSES

QUERY_TIMEOUT = timedelta(seconds=5)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("run", help="validate a workflow XML and start it as a durable run")
    p.add_argument("plan", help="path of the workflow XML file")
    p.add_argument("--var", action="append", default=[], metavar="K=V", help="workflow variable (repeatable)")
    p.add_argument("--context", action="append", default=[], metavar="K=V", help="context value for {{context.K}} (repeatable)")
    p.add_argument("--id", help="workflow id (default: xsky-<taskId>)")
    p.add_argument("--follow", action="store_true", help="show a live task board until the run ends, then the results")
    p.add_argument("--max-parallel", type=int, help="agents running at once (default 8)")
    p.add_argument("--review", action="store_true", help="wait for approve-plan (or a replan) before any agent starts")
    p.add_argument("--review-timeout", type=float, help="seconds to wait for the review (default 3600)")
    p.add_argument("--on-review-timeout", choices=["approve", "cancel"], help="what a review timeout does (default cancel)")
    p.add_argument("--max-replans", type=int, help="automatic replans on failures and stalls (default 2)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_run(a)))

    p = sub.add_parser("status", help="the task board of a run")
    p.add_argument("id", help="workflow id of the run")
    p.add_argument("--offset", type=int, default=0, help="first task to show (large boards come in pages)")
    p.add_argument("--limit", type=int, default=200, help="tasks per page (at most 2000)")
    p.add_argument("--status", dest="only", choices=list(get_args(TaskStatus)), help="only tasks in this status")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_status(a)))

    p = sub.add_parser("result", help="the results of a finished run")
    p.add_argument("id", help="workflow id of the run")
    p.add_argument("--agent", help="print only this agent's full result")
    p.add_argument("--wait", action="store_true", help="wait for a running run to finish")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_result(a)))

    p = sub.add_parser("list", help="recent runs, with what each is doing (xsky's search attributes)")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--status", choices=XSKY_STATUSES, help="only runs in this xsky status")
    p.add_argument("--waiting", action="store_true", help="only runs waiting on a person (XskyPending > 0)")
    p.add_argument("--failed", action="store_true", help="only runs with failed agents (XskyFailed > 0)")
    p.add_argument("--plan", help="only runs of the plan with this name")
    p.add_argument("--query", help="a Temporal list filter added to the above, e.g. \"StartTime > '2026-11-01T00:00:00Z'\"")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_list(a)))


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


def new_run_id(task_id: str) -> str:
    """A run id of its own for every start (so a workspace of its own): the plan's taskId,
    when it started, and a few random characters for starts within the same second."""
    return f"xsky-{task_id}-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:4]}"


def check_names(wf: Workflow, variables: dict[str, str], context: dict[str, Any]) -> None:
    """A --var or --context the plan never uses is a typo: say which names it has."""
    refs = [r for agent in wf.agents for r in agent_references(agent)]
    declared = sorted(set(wf.variables) | {r.key for r in refs if r.kind == "variable"})
    keys = sorted({r.key.split(".")[0] for r in refs if r.kind == "context"})
    for flag, given, known in (("--var", variables, declared), ("--context", context, keys)):
        unknown = sorted(set(given) - set(known))
        if unknown:
            names = ", ".join(known) if known else "none"
            raise UsageError(f"{flag} {', '.join(unknown)}: the plan has no such name (its names: {names}); nothing was started")


async def cmd_run(args: argparse.Namespace) -> int:
    settings = load_settings()
    variables = parse_pairs(args.var, "--var")
    context = _parse_context(args.context)
    roles = resolve_roles()
    try:
        plan = load_plan(
            args.plan,
            known_agents=list(roles),
            variables=variables,
            context_keys=list(context),
            max_bytes=settings.max_plan_bytes,
            base_roles=roles,
        )
    except PlanError as e:
        print_problems(e, args.plan)
        err.print("nothing was started")
        return 2
    check_names(plan.workflow, variables, context)
    options = run_options(args)
    workflow_id = args.id or new_run_id(plan.workflow.task_id)
    client = await connect(settings)
    handle = await start_run(
        client, settings, RunInput(workflow=plan.workflow, variables=variables, context=context, options=options, roles=roles, permissions=resolve_permissions()), workflow_id
    )
    return await announce(args, settings, handle, options, f"({len(plan.workflow.agents)} agents)")


async def announce(args: argparse.Namespace, settings: Settings, handle: WorkflowHandle[Any, RunResult], options: RunOptions, what: str) -> int:
    """Say what was started and where to see it; with --follow, watch it to the end."""
    workflow_id = handle.id
    if args.json and not args.follow:
        print_json({"workflowId": workflow_id, "runId": handle.result_run_id, "ui": settings.ui_link(workflow_id)})
        return 0
    if not args.json:
        out.print(f"started [bold]{workflow_id}[/] {what}")
        out.print(f"Web UI: {settings.ui_link(workflow_id)}")
        if options.review:
            out.print(f"waiting for review: `starter.py plan {workflow_id}`, then `starter.py approve-plan {workflow_id}`")
    if not args.follow:
        return 0
    return print_result(await follow(handle, quiet=args.json), settings, args.json)


def run_options(args: argparse.Namespace) -> RunOptions:
    """RunOptions from the command line; bad values are usage errors."""
    values: dict[str, Any] = {}
    for flag, key in (("max_parallel", "max_parallel"), ("review_timeout", "review_timeout"),
                      ("on_review_timeout", "review_timeout_action"), ("max_replans", "max_auto_replans")):
        value = getattr(args, flag, None)
        if value is not None:
            values[key] = value
    if getattr(args, "review", False):
        values["review"] = True
    try:
        return RunOptions.model_validate(values)
    except ValidationError as e:
        raise UsageError("; ".join(f"--{'-'.join(str(err['loc'][0]).split('_'))}: {err['msg']}" for err in e.errors())) from None


async def start_run(client: Client, settings: Settings, inp: RunInput, workflow_id: str) -> WorkflowHandle[Any, RunResult]:
    wf = inp.workflow
    summary = (wf.name if wf else " ".join((inp.task_prompt or "").split())[:120]) or workflow_id
    details = f"{len(wf.agents)} agents · taskId {wf.task_id}" if wf else "planned from a request by the leader"
    await require_worker(client, settings)
    try:
        return await client.start_workflow(
            LeaderWorkflow.run,
            by_reference(inp, settings, workflow_id),
            id=workflow_id,
            task_queue=settings.task_queue,
            static_summary=summary,
            static_details=details,
        )
    except WorkflowAlreadyStartedError:
        raise UsageError(
            f"a run with id {workflow_id} is already running; follow it with `starter.py status {workflow_id}` "
            "or start another with --id NEW_ID"
        ) from None


# A plan whose input would pass this many bytes goes to the artifact store (payloads stay < 1 MiB).
INPUT_LIMIT = 512 * 1024


def by_reference(inp: RunInput, settings: Settings, workflow_id: str, limit: int = INPUT_LIMIT) -> RunInput:
    """The run's input, with a large plan stored as XML in the artifact store."""
    if inp.workflow is None or len(inp.model_dump_json(by_alias=True)) <= limit:
        return inp
    xml = workflow_to_xml(inp.workflow)
    ref = blob_ref(workflow_id, "plan-input", xml)
    put_blob(ArtifactStore(settings.artifacts), ref, xml)
    return inp.model_copy(update={"workflow": None, "plan_ref": ref})


# --follow shows the first page of a large board (with the whole board's counts).
FOLLOW_PAGE = PageRequest(limit=60)


async def follow(handle: WorkflowHandle[Any, RunResult], quiet: bool = False) -> RunResult:
    """Show the live board until the run ends; return its result."""
    result_task = asyncio.ensure_future(run_outcome(handle))
    if quiet:
        return await result_task
    with Live(console=out, refresh_per_second=4, transient=False) as live:
        while not result_task.done():
            try:
                page = await handle.query(LeaderWorkflow.task_board, FOLLOW_PAGE, rpc_timeout=QUERY_TIMEOUT)
                live.update(board_table(page.tasks, title=f"{handle.id} — {tally(page.counts)}", caption=page_note(page)))
            except RPCError:
                pass  # the worker is busy or restarting; the next poll will show it
            await asyncio.wait([result_task], timeout=0.7)
        try:
            page = await handle.query(LeaderWorkflow.task_board, FOLLOW_PAGE, rpc_timeout=QUERY_TIMEOUT)
            live.update(board_table(page.tasks, title=f"{handle.id} — {tally(page.counts)}", caption=page_note(page)))
        except RPCError:
            pass
    return await result_task


def print_result(result: RunResult, settings: Settings, as_json: bool) -> int:
    store = ArtifactStore(settings.artifacts)
    if as_json:
        print_json(result.wire())
    else:
        out.print(results_table(result, store.read_text))
        out.print(f"Web UI: {settings.ui_link(result.workflow_id)}")
    return 0 if result.status == "completed" else 1


# -- status / result / list --------------------------------------------------------------------


async def _handle(settings: Settings, workflow_id: str) -> tuple[Client, WorkflowHandle[Any, RunResult]]:
    client = await connect(settings)
    handle = client.get_workflow_handle_for(LeaderWorkflow.run, workflow_id)
    try:
        await handle.describe()
    except RPCError as e:
        raise UsageError(f"no run with id {workflow_id} ({e.message}); `starter.py list` shows the recent ones") from None
    return client, handle


async def cmd_status(args: argparse.Namespace) -> int:
    settings = load_settings()
    _, handle = await _handle(settings, args.id)
    desc = await handle.describe()
    if not 1 <= args.limit <= 2000 or args.offset < 0:
        raise UsageError("--limit takes 1 to 2000 and --offset 0 or more")
    try:
        page: BoardPage = await handle.query(LeaderWorkflow.task_board, PageRequest(offset=args.offset, limit=args.limit, status=args.only),
                                             rpc_timeout=QUERY_TIMEOUT)
    except RPCError as e:
        if desc.status == WorkflowExecutionStatus.RUNNING:
            raise UsageError(f"the run is {desc.status.name.lower()} but no worker answered ({e.message}); is `python worker.py` running?") from None
        raise UsageError(f"the run is {desc.status.name.lower()}; its board needs a worker to read ({e.message})") from None
    status = desc.status.name.lower() if desc.status else "unknown"
    if args.json:
        print_json({"workflowId": args.id, "status": status, **page.wire()})
        return 0
    state = page.state if status == "running" else status  # running: say what it is doing (paused, waiting …)
    out.print(board_table(page.tasks, title=f"{args.id} — {state} — {tally(page.counts)}", caption=page_note(page)))
    for note in page.notes:
        out.print(note.replace("**", ""))
    out.print(f"Web UI: {settings.ui_link(args.id)}")
    return 0


async def cmd_result(args: argparse.Namespace) -> int:
    settings = load_settings()
    _, handle = await _handle(settings, args.id)
    desc = await handle.describe()
    if desc.status == WorkflowExecutionStatus.RUNNING and not args.wait:
        raise UsageError(f"{args.id} is still running; add --wait, or watch it with `starter.py status {args.id}`")
    try:
        result = await run_outcome(handle)
    except Exception as e:  # noqa: BLE001 - terminated / cancelled runs raise here
        raise UsageError(f"{args.id} ended without a result: {e}") from None
    if args.agent:
        reports = all_reports(result, settings)
        report = next((a for a in reports if a.id == args.agent or a.task_id == args.agent), None)
        if report is None:
            raise UsageError(f"no agent {args.agent} in {args.id}; agents: {', '.join(a.id for a in reports[:40])}")
        text = result_text(report.result, report.result_ref, ArtifactStore(settings.artifacts).read_text)
        if args.json:
            print_json({**report.wire(), "result": text})
        else:
            out.print(text, markup=False, highlight=False)
        return 0
    return print_result(result, settings, args.json)


def all_reports(result: RunResult, settings: Settings) -> list[AgentReport]:
    """Every agent's report: inline, or for a large run from the artifact store."""
    if result.results_ref is None:
        return result.agents
    try:
        text = read_blob(ArtifactStore(settings.artifacts), result.results_ref)
    except (FileNotFoundError, ValueError) as e:
        raise UsageError(f"the full results of {result.workflow_id} are not readable here ({e})") from None
    return [AgentReport.model_validate_json(line) for line in text.splitlines() if line.strip()]


def list_query(args: argparse.Namespace) -> str:
    """The Temporal visibility query for ``list``'s filters."""
    clauses = ["WorkflowType='LeaderWorkflow'"]
    if args.status:
        clauses.append(f"XskyStatus='{args.status}'")
    if args.waiting:
        clauses.append("XskyPending > 0")
    if args.failed:
        clauses.append("XskyFailed > 0")
    if args.plan:
        clauses.append("XskyPlan=" + "'" + args.plan.replace("\\", "\\\\").replace("'", "\\'") + "'")
    if args.query:
        clauses.append(f"({args.query})")
    return " AND ".join(clauses)


async def cmd_list(args: argparse.Namespace) -> int:
    settings = load_settings()
    client = await connect(settings)
    rows = []
    query = list_query(args)
    try:
        async for wf in client.list_workflows(query, limit=args.limit):
            attrs = {key.name: value for key, value in wf.typed_search_attributes}
            rows.append(
                {
                    "workflowId": wf.id,
                    "status": wf.status.name.lower() if wf.status else "unknown",
                    "xskyStatus": attrs.get("XskyStatus"),
                    "plan": attrs.get("XskyPlan"),
                    "failed": attrs.get("XskyFailed"),
                    "pending": attrs.get("XskyPending"),
                    "start": wf.start_time.isoformat() if wf.start_time else None,
                    "close": wf.close_time.isoformat() if wf.close_time else None,
                }
            )
    except RPCError as e:
        if "Xsky" in query and ("not defined" in e.message or "invalid" in e.message.lower()):
            raise UsageError(f"this server does not know xsky's search attributes ({e.message}); start it with `starter.py server` "
                             "(or `up`), or register them: " + "; ".join(
                                 f"temporal operator search-attribute create --name {n} --type {t}" for n, t in SEARCH_ATTRIBUTES.items())) from None
        raise UsageError(f"the list query was refused: {e.message} (query: {query})") from None
    if args.json:
        print_json(rows)
        return 0
    table = Table(title=f"recent runs ({settings.address})", title_justify="left")
    for col in ("workflow id", "plan", "status", "failed", "waiting", "started", "took"):
        table.add_column(col)
    for r in rows:
        took = "running"
        if r["close"] and r["start"]:
            took = f"{(datetime.fromisoformat(r['close']) - datetime.fromisoformat(r['start'])).total_seconds():.1f}s"
        # Temporal's status says whether it runs; xsky's what it is doing (paused, waiting, …).
        shown = r["status"] if r["status"] != "running" or not r["xskyStatus"] else r["xskyStatus"]
        table.add_row(r["workflowId"], r["plan"] or "", shown, str(r["failed"] or ""), str(r["pending"] or ""),
                      (r["start"] or "")[:19].replace("T", " "), took)
    out.print(table if rows else "no runs yet: start one with `starter.py run examples/demo.xml --follow`")
    return 0
