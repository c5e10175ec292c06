"""Steering a running run: pause, resume, cancel, retry, skip, nudge, answer, approve, replan,
approve-plan; and looking at it: requests, plan. Each is a Temporal signal, update or query
on the run's LeaderWorkflow (the README shows the same with the stock `temporal` CLI)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from rich.markup import escape
from rich.table import Table
from temporalio.client import WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from cli.plans import UsageError, read_plan_bytes
from cli.render import out, print_json
from cli.runs_cmd import QUERY_TIMEOUT, _handle
from workflows.leader import LeaderWorkflow
from xsky.config import load_settings
from xsky.leader_state import (
    AnswerRequest,
    ApprovePlanRequest,
    ApproveToolRequest,
    NudgeRequest,
    PageRequest,
    PauseRequest,
    ReplanRequest,
    ResumeRequest,
    RetryTaskRequest,
    SkipTaskRequest,
    TaskRequest,
)


def _cmd(sub: argparse._SubParsersAction, name: str, help: str, fn: Any) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    p = sub.add_parser(name, help=help)
    p.add_argument("id", help="workflow id of the run")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=lambda a: asyncio.run(fn(a)))
    return p


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = _cmd(sub, "pause", "stop dispatching new agents", cmd_pause)
    p.add_argument("--cancel-running", action="store_true", help="also stop running agents (they resume later from their checkpoints)")
    p.add_argument("--reason")
    _cmd(sub, "resume", "dispatch again after a pause", cmd_resume)
    p = _cmd(sub, "cancel", "cancel one task, or the whole run when no task is given", cmd_cancel)
    p.add_argument("task", nargs="?", help="task id (T-3 or 3)")
    p = _cmd(sub, "retry", "run a failed, cancelled or escalated task again", cmd_retry)
    p.add_argument("task")
    p.add_argument("--task", dest="text", help="new task text")
    p = _cmd(sub, "skip", "mark a task done without running it", cmd_skip)
    p.add_argument("task")
    p.add_argument("--result", default="", help="what its dependents get as its result")
    p = _cmd(sub, "nudge", "send a message to one agent, delivered at its next step", cmd_nudge)
    p.add_argument("task")
    p.add_argument("message")
    p = _cmd(sub, "answer", "answer a pending question (Q-n) or escalation (E-n)", cmd_answer)
    p.add_argument("request")
    p.add_argument("text")
    p = _cmd(sub, "approve", "decide a pending tool approval (A-n)", cmd_approve)
    p.add_argument("request")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--once", dest="decision", action="store_const", const="allow_once", help="allow this call (default)")
    how.add_argument("--run", dest="decision", action="store_const", const="allow_run", help="allow such calls for the rest of the run")
    how.add_argument("--deny", dest="decision", action="store_const", const="deny", help="refuse it (the agent is told)")
    p.add_argument("--message", help="a note the agent sees with the decision")
    p = _cmd(sub, "replan", "change the plan: a prompt for the planner, or --xml FILE to replace it", cmd_replan)
    p.add_argument("prompt", nargs="?", help="what to change")
    p.add_argument("--xml", help="a workflow XML file with the whole new plan")
    p = _cmd(sub, "approve-plan", "approve the plan under review so agents start", cmd_approve_plan)
    p.add_argument("--version", type=int, help="the plan version you reviewed")
    p.add_argument("--comment")
    _cmd(sub, "requests", "questions, approvals and escalations waiting for a person", cmd_requests)


async def _running(args: argparse.Namespace, what: str) -> Any:
    """The run's handle, if it still runs: steering an ended run is a mistake, said in a sentence."""
    _, handle = await _handle(load_settings(), args.id)
    status = (await handle.describe()).status
    if status != WorkflowExecutionStatus.RUNNING:
        ended = status.name.lower().replace("_", " ") if status else "ended"
        raise UsageError(f"{args.id} has already ended ({ended}): there is nothing to {what}; "
                         f"`starter.py result {args.id}` shows how it ended")
    return handle


async def _update(args: argparse.Namespace, update: Any, request: Any) -> int:
    handle = await _running(args, "change")
    try:
        result = await handle.execute_update(update, request)
    except WorkflowUpdateFailedError as e:
        cause = e.cause
        message = cause.message if isinstance(cause, ApplicationError) else str(cause or e)
        raise UsageError(f"refused: {message}") from None
    except RPCError as e:
        raise UsageError(f"could not reach the run: {e.message} (is a worker running?)") from None
    if args.json:
        print_json(result.wire())
    else:
        out.print(escape(result.message))
    return 0


async def _signal(args: argparse.Namespace, signal: Any, request: Any, done: str, task: str | None = None) -> int:
    handle = await _running(args, args.command if isinstance(getattr(args, "command", None), str) else "steer")
    if task is not None:  # signals cannot refuse: check the task exists first
        board = await handle.query(LeaderWorkflow.task_board, PageRequest(limit=2000), rpc_timeout=QUERY_TIMEOUT)
        ids = {t.id for t in board.tasks} | {t.agent_id for t in board.tasks}
        if task not in ids and board.total <= len(board.tasks):
            raise UsageError(f"no task {task!r} in {args.id}; tasks: {', '.join(t.id for t in board.tasks[:20])}")
    await handle.signal(signal, request)
    if args.json:
        print_json({"ok": True, "message": done})
    else:
        out.print(done)
    return 0


async def cmd_pause(args: argparse.Namespace) -> int:
    what = "paused; running agents stop and resume later" if args.cancel_running else "paused: running agents finish, no new ones start"
    return await _signal(args, LeaderWorkflow.pause, PauseRequest(cancel_running=args.cancel_running, reason=args.reason), what)


async def cmd_resume(args: argparse.Namespace) -> int:
    return await _signal(args, LeaderWorkflow.resume, ResumeRequest(), "resumed")


async def cmd_cancel(args: argparse.Namespace) -> int:
    if args.task:
        return await _update(args, LeaderWorkflow.cancel_task, TaskRequest(task_id=args.task))
    handle = await _running(args, "cancel")
    await handle.cancel()
    message = f"cancellation of {args.id} requested: it ends Cancelled once any running agents have stopped"
    print_json({"ok": True, "message": message}) if args.json else out.print(message)
    return 0


async def cmd_retry(args: argparse.Namespace) -> int:
    return await _update(args, LeaderWorkflow.retry_task, RetryTaskRequest(task_id=args.task, task=args.text))


async def cmd_skip(args: argparse.Namespace) -> int:
    return await _update(args, LeaderWorkflow.skip_task, SkipTaskRequest(task_id=args.task, result=args.result))


async def cmd_nudge(args: argparse.Namespace) -> int:
    if not args.message.strip():
        raise UsageError("the nudge message is empty")
    return await _signal(args, LeaderWorkflow.nudge, NudgeRequest(task_id=args.task, message=args.message),
                         f"nudge sent to {args.task}", task=args.task)


async def cmd_answer(args: argparse.Namespace) -> int:
    return await _update(args, LeaderWorkflow.answer, AnswerRequest(request_id=args.request, text=args.text))


async def cmd_approve(args: argparse.Namespace) -> int:
    decision = args.decision or "allow_once"
    return await _update(args, LeaderWorkflow.approve_tool, ApproveToolRequest(request_id=args.request, decision=decision, message=args.message))


async def cmd_replan(args: argparse.Namespace) -> int:
    if (args.prompt is None) == (args.xml is None):
        raise UsageError("give what to change as a PROMPT, or --xml FILE with the whole new plan (one of the two)")
    if args.xml:
        _, data = read_plan_bytes(args.xml)
        request = ReplanRequest(xml=data.decode("utf-8", errors="replace"))
    else:
        if not args.prompt.strip():
            raise UsageError("the prompt is empty: say what to change")
        request = ReplanRequest(prompt=args.prompt)
    return await _update(args, LeaderWorkflow.replan, request)


async def cmd_approve_plan(args: argparse.Namespace) -> int:
    return await _update(args, LeaderWorkflow.approve_plan, ApprovePlanRequest(version=args.version, comment=args.comment))


async def cmd_requests(args: argparse.Namespace) -> int:
    settings = load_settings()
    _, handle = await _handle(settings, args.id)
    requests = await handle.query(LeaderWorkflow.pending_requests, rpc_timeout=QUERY_TIMEOUT)
    if args.json:
        print_json([r.wire() for r in requests])
        return 0
    if not requests:
        out.print("nothing is waiting for a person")
        return 0
    table = Table(title=f"{args.id}: waiting for a person", title_justify="left")
    for col in ("request", "kind", "task", "asks", "answer with"):
        table.add_column(col, overflow="fold")
    for r in requests:
        how = {"approval": f"starter.py approve {args.id} {r.id} [--run|--deny]",
               "review": f"starter.py approve-plan {args.id} --version {r.id.removeprefix('R-')} (or replan)"}.get(
            r.kind, f"starter.py answer {args.id} {r.id} TEXT")
        table.add_row(r.id, r.kind, r.task_id, escape(r.text), escape(how))
    out.print(table)
    return 0


async def show_run_plan(args: argparse.Namespace, handle: Any) -> int:
    """Print the current plan of a run (or its history with --history)."""
    if args.history:
        history = await handle.query(LeaderWorkflow.plan_history, rpc_timeout=QUERY_TIMEOUT)
        if args.json:
            print_json([v.wire() for v in history])
        else:
            for v in history:
                out.print(f"[bold]v{v.version}[/] {v.at:%Y-%m-%d %H:%M:%S} — {escape(v.reason)}")
        return 0
    xml = await handle.query(LeaderWorkflow.plan, rpc_timeout=QUERY_TIMEOUT)
    if args.json:
        print_json({"xml": xml})
    else:
        out.print(xml, markup=False, highlight=False, soft_wrap=True)  # exact: a saved copy must validate
    return 0


__all__ = ["register"]
