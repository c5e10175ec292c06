"""Steering a running run: pause, resume, cancel, retry, skip, nudge, answer, approve, replan,
approve-plan; and looking at it: requests, plan. Each is a Temporal signal, update or query
on the run's LeaderWorkflow (docs/steering.md shows the same with the stock `temporal` CLI)."""

from __future__ import annotations

import argparse
import asyncio
import math
import re
from collections.abc import Awaitable, Callable
from typing import Any

from rich.table import Table

from cli.render import cell, err, out, print_json, print_problems, say_located, shown
from client import Run, XSky
from client.settings import resolve_roles
from xsky.config import load_settings
from xsky.errors import PlanError, RunEndedError, UsageError
from xsky.leader.state import REPLY_READ_MARKS, InterventionResult, ToolDecision
from xsky.plan.eko import is_eko
from xsky.plan.files import check_plan_source, read_plan_bytes
from xsky.plan.loops import lower
from xsky.plan.models import Workflow
from xsky.plan.xml import may_name_a_file, parse_workflow, workflow_to_xml
from xsky.safe_text import xml_safe


def _cmd(sub: argparse._SubParsersAction, name: str, help: str, fn: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help)
    p.add_argument("id", help="workflow id of the run")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=lambda a: asyncio.run(fn(a)))
    return p


def _seconds(text: str) -> float:
    """A timeout's seconds. NaN and infinity are no timeout, and cannot be sent at all (the
    run answered "Failed decoding arguments"): refused here, as the run words a number out of
    its range (xsky/leader/checks.py); a finite one is the run's to judge."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan  # (argparse would say "invalid _seconds value")
    if not math.isfinite(seconds):
        raise argparse.ArgumentTypeError(
            f"a timeout of {text} seconds is not one: give 1 to 604800 seconds"
        )
    return seconds


def register(sub: argparse._SubParsersAction) -> None:
    p = _cmd(
        sub, "pause", "stop dispatching new agents (with a task: pause that agent alone)", cmd_pause
    )
    p.add_argument("task", nargs="?", help="one agent to pause (T-3 or 3): the rest go on")
    p.add_argument(
        "--cancel-running",
        action="store_true",
        help="also stop running agents (they resume later from their checkpoints)",
    )
    p.add_argument("--reason")
    p = _cmd(sub, "resume", "dispatch again after a pause (with a task: that agent)", cmd_resume)
    p.add_argument("task", nargs="?", help="the agent paused alone to resume")
    p = _cmd(sub, "reset", "start one agent's attempt again, from its checkpoint", cmd_reset)
    p.add_argument("task")
    p.add_argument("--fresh", action="store_true", help="from scratch, not from its checkpoint")
    p = _cmd(sub, "timeout", "seconds one agent's next attempt may take", cmd_timeout)
    p.add_argument("task")
    p.add_argument("seconds", type=_seconds, help="1 to 604800")
    p = _cmd(sub, "cancel", "cancel one task, or the whole run when no task is given", cmd_cancel)
    p.add_argument("task", nargs="?", help="task id (T-3 or 3)")
    p = _cmd(
        sub,
        "retry",
        "run a failed, cancelled or escalated task again (on an ended run: a follow-up run "
        "that carries every completed result over)",
        cmd_retry,
    )
    p.add_argument("task")
    p.add_argument("--task", dest="text", help="new task text")
    p.add_argument(
        "--again",
        action="store_true",
        help="on an ended run: also run again, unasked, agents it was not asked to retry whose "
        "calls must not be repeated (without it they are named and nothing starts)",
    )
    p = _cmd(sub, "skip", "mark a task done without running it", cmd_skip)
    p.add_argument("task")
    p.add_argument(
        "--result", default=None, help="what its dependents get as its result (default: nothing)"
    )
    p = _cmd(sub, "nudge", "send a message to one agent, delivered at its next step", cmd_nudge)
    p.add_argument("task")
    p.add_argument("message")
    p = _cmd(sub, "answer", "answer a pending question (Q-n) or escalation (E-n)", cmd_answer)
    p.add_argument("request", type=request_id)
    p.add_argument("text")
    p = _cmd(sub, "approve", "decide a pending tool approval (A-n)", cmd_approve)
    p.add_argument("request", type=request_id)
    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--once",
        dest="decision",
        action="store_const",
        const="allow_once",
        help="allow this call (default)",
    )
    how.add_argument(
        "--run",
        dest="decision",
        action="store_const",
        const="allow_run",
        help="allow this command for the rest of the run (later calls of it are allowed with other {{…}} values, except a value that could be code or an option there, which is asked again; requests already waiting with other values still wait)",
    )
    how.add_argument(
        "--deny",
        dest="decision",
        action="store_const",
        const="deny",
        help="refuse it: a direct-tool agent then fails, an agent with a model is told and may go on",
    )
    p.add_argument("--message", help="a note the agent sees with the decision")
    p = _cmd(
        sub,
        "replan",
        "change the plan: a prompt for the planner, or --xml FILE to replace it",
        cmd_replan,
    )
    p.add_argument("prompt", nargs="?", help="what to change")
    p.add_argument("--xml", help="a workflow XML file with the whole new plan")
    p = _cmd(sub, "approve-plan", "approve the plan under review so agents start", cmd_approve_plan)
    p.add_argument(
        "--version",
        type=int,
        help="the plan version you reviewed (required: a newer one is refused; `plan ID` says which waits)",
    )
    p.add_argument("--comment")
    p = _cmd(
        sub, "end", "end a run held open after a failure (--hold-on-failure) or paused", cmd_end
    )
    p.add_argument("--reason", help="why (kept in the plan history)")
    _cmd(sub, "requests", "questions, approvals and escalations waiting for a person", cmd_requests)


async def _run(args: argparse.Namespace) -> tuple[XSky, Run]:
    x = await XSky.connect(load_settings())
    return x, await x.get(args.id)


def _say(args: argparse.Namespace, message: str, result: InterventionResult | None = None) -> int:
    if args.json:
        print_json(result.wire() if result is not None else {"ok": True, "message": message})
    else:
        out.print(cell(message))  # the leader's answer quotes task ids, texts and reasons
    return 0


async def _update(
    args: argparse.Namespace, step: Callable[[Run], Awaitable[InterventionResult]]
) -> int:
    _, run = await _run(args)
    result = await step(run)
    return _say(args, result.message, result)


async def cmd_pause(args: argparse.Namespace) -> int:
    if args.task is not None:
        if args.cancel_running or args.reason:
            raise UsageError("pausing one agent takes no --cancel-running or --reason")
        return await _update(args, lambda run: run.pause_task(args.task))
    return await _update(
        args, lambda run: run.pause(cancel_running=args.cancel_running, reason=args.reason)
    )


async def cmd_resume(args: argparse.Namespace) -> int:
    if args.task is not None:
        return await _update(args, lambda run: run.resume_task(args.task))
    return await _update(args, lambda run: run.resume())


async def cmd_reset(args: argparse.Namespace) -> int:
    return await _update(args, lambda run: run.reset_task(args.task, args.fresh))


async def cmd_timeout(args: argparse.Namespace) -> int:
    return await _update(args, lambda run: run.set_task_timeout(args.task, args.seconds))


async def cmd_cancel(args: argparse.Namespace) -> int:
    _, run = await _run(args)
    return _say(args, await run.cancel(args.task))


async def cmd_retry(args: argparse.Namespace) -> int:
    return await _update(args, lambda run: run.retry(args.task, args.text, again=args.again))


async def cmd_end(args: argparse.Namespace) -> int:
    return await _update(args, lambda run: run.end(args.reason))


async def cmd_skip(args: argparse.Namespace) -> int:
    async def skip(run: Run) -> InterventionResult:
        if args.result is None:  # a task that asks a person: the answer is likely what was meant
            asked = [r for r in await run.requests() if r.kind == "question"]
            if asked:
                # the task the run means by the name, among all its tasks (review19: with
                # agents `a` and `A`, `skip a` was refused for T-A's question)
                try:
                    meant: str | None = (await run.task(args.task)).id
                except UsageError:
                    meant = None  # (no such task, or several: the skip's refusal says so)
                asked = [r for r in asked if r.task_id == meant]
            if asked:
                r = asked[0]
                raise UsageError(
                    f"{r.task_id} is waiting for your answer to {r.id} ({r.text[:120]}): answer it "
                    f"with `starter.py answer {args.id} {r.id} TEXT`; to skip it instead, say what "
                    "its dependents get as its result: --result TEXT (--result '' for nothing)"
                )
        return await run.skip(args.task, args.result or "")

    return await _update(args, skip)


async def cmd_nudge(args: argparse.Namespace) -> int:
    if not args.message.strip():
        raise UsageError("the nudge message is empty: say what the agent should know")
    return await _update(args, lambda run: run.nudge(args.task, args.message))


def request_id(text: str) -> str:
    """A request's id as the run names them (``Q-1``, ``A-2``, ``E-3``): typed in lower case
    (``q-1``) it was refused as no such request."""
    text = text.strip()
    return text.upper() if re.fullmatch(r"[qae]-\d+", text) else text


async def cmd_answer(args: argparse.Namespace) -> int:
    return await _update(args, lambda run: run.answer(args.request, args.text))


async def cmd_approve(args: argparse.Namespace) -> int:
    decision: ToolDecision = args.decision or "allow_once"
    _, run = await _run(args)
    asked = next((r for r in await run.requests() if r.id == args.request), None)
    result = await run.approve(args.request, decision, args.message)
    _say(args, result.message, result)
    if asked is not None and asked.tool and decision != "deny" and not args.json:
        # A loop's items ask the same call with their own values ({{item}}), which an approval
        # — even for the run — does not cover: one decision a call, said here, not found later.
        same = [
            r.id
            for r in await run.requests()
            if r.kind == "approval"
            and r.tool == asked.tool
            and _without_values(r.arguments) == _without_values(asked.arguments)
        ]
        if same:
            shown = ", ".join(same[:6]) + (" …" if len(same) > 6 else "")
            # (walk8: it said "an approval covers a call with its own values, for the run too",
            # while an allow for the run lets every later call of the command run, any values)
            covers = (
                "they still wait: an allow for the run answers only its own request, and lets "
                f"later calls of this {asked.tool} command run whatever their values — but a "
                "value that could be code or an option there, which is asked again"
                if decision == "allow_run"
                else "they still wait: an approval answers only its own request"
            )
            out.print(
                cell(
                    f"note: {len(same)} other request(s) wait on the same {asked.tool} call with "
                    f"other values ({shown}): {covers}; decide each (`starter.py approve "
                    f"{args.id} {same[0]}`), or look at them first (`starter.py requests {args.id}`)"
                )
            )
    return 0


def _without_values(arguments: dict[str, Any] | None) -> dict[str, Any]:
    """A call's arguments but its values (a loop item's, a reference's: XSKY_V1 …)."""
    return {k: v for k, v in (arguments or {}).items() if k != "values"}


async def cmd_replan(args: argparse.Namespace) -> int:
    if (args.prompt is None) == (args.xml is None):
        raise UsageError(
            "give what to change as a PROMPT, or --xml FILE with the whole new plan (one of the two)"
        )
    xml = None
    new_plan: Workflow | None = None
    if args.xml:
        checked = checked_plan_file(args.xml, "nothing was changed")
        if checked is None:
            return 2
        xml, new_plan = checked[0].decode("utf-8", errors="replace"), checked[1]
    elif not args.prompt.strip():
        raise UsageError("the prompt is empty: say what to change")

    async def replanned(run: Run) -> InterventionResult:
        if xml is not None and new_plan is not None and is_eko(xml):
            await _no_eko_remainder(run, new_plan, args.xml)
        result = await run.replan(args.prompt if xml is None else None, xml)
        if xml is None or args.json:  # (--json: the run's reply as it is)
            return result
        # What reading the file said was shown above, at the file's lines: the run's reply says
        # it again (for the stock `temporal` CLI), not needed twice here.
        lines = result.message.splitlines()
        kept = [line for line in lines if not line.startswith(REPLY_READ_MARKS)]
        return result.model_copy(update={"message": "\n".join(kept)})

    return await _update(args, replanned)


async def _no_eko_remainder(run: Run, new: Workflow, path: str) -> None:
    """An Eko replan lists only the work left, numbered from 0 (Eko appends it after what ran);
    `replan --xml` takes the whole new plan. Given as Eko writes it, it would drop agents that
    ran and put new work in their ids: refused, saying how to write it."""
    raw = {a.id for a in new.agents}
    kept = raw | {a.id for a in lower(new)[0].agents}  # (the plan as it runs: 0.list, 0.links)
    # an id kept with other work: Eko's renumbered rest (its "0" is not the run's 0)
    now = {a.id: a.task for a in parse_workflow(await run.plan()).agents}
    other = {a.id for a in new.agents if a.id in now and now[a.id].strip() != a.task.strip()}
    ran: list[str] = []
    async for page in run.board_pages():
        for t in page.tasks:
            grown_from = re.split(r"[.\[]", t.agent_id, maxsplit=1)[0]  # 3[2], 0.page → 3, 0
            gone = t.agent_id not in kept and grown_from not in raw
            if t.status in _RAN and (gone or grown_from in other or t.agent_id in other):
                ran.append(t.id)
    if not ran:
        return
    raise UsageError(
        f"{path} is an Eko plan without {', '.join(ran[:6])} as they ran or run: `replan --xml` "
        "takes the whole new plan (an Eko replan lists only what is left, numbered from 0), so "
        f"it would drop them or give their ids other work; start from the plan as it is (`starter.py plan "
        f"{run.id} > plan.xml`) and edit it, or say what to change as a PROMPT"
    )


_RAN = ("completed", "in_progress", "dispatched")


async def no_version_given(run: Run) -> UsageError:
    """Why an approval that names no plan version is refused (the CLI's and the live page's):
    approving "whatever is current" could approve a replan nobody has read."""
    current = await run.review_version()
    if current is None:
        return UsageError(f"no plan of {run.id} is waiting for review: there is nothing to approve")
    return UsageError(
        f"say which plan version you reviewed: v{current} waits for review — read it with "
        f"`starter.py plan {run.id}`, then `starter.py approve-plan {run.id} --version {current}`"
    )


async def cmd_approve_plan(args: argparse.Namespace) -> int:
    if args.version is None:
        _, run = await _run(args)
        raise await no_version_given(run)
    return await _update(args, lambda run: run.approve_plan(args.version, args.comment))


def checked_plan_file(path: str, nothing_done: str) -> tuple[bytes, Workflow] | None:
    """A plan file a command hands to a run (replan --xml, fork --plan), checked here first so
    a mistake is shown at its line:col (the run checks the rest — its variables and roles —
    and refuses with its reason); None, with the problems and ``nothing_done`` said."""
    settings = load_settings()
    p, data = read_plan_bytes(path, settings.max_plan_bytes)
    try:
        parsed = check_plan_source(
            data,
            known_agents=list(resolve_roles(settings)),
            variables=None,
            max_bytes=settings.max_plan_bytes,
            base_dir=p.parent,  # a schema file it names is read here, beside it
        )
    except PlanError as e:
        print_problems(e, path)
        err.print(nothing_done)
        return None
    if parsed.dialect:  # an Eko plan: what was mapped, repaired or left out, as validate says
        err.print(cell(parsed.dialect))
    for repair in parsed.repairs:
        say_located(f"warning: {repair.format(path)}")
    if may_name_a_file(data):  # the run reads no file: the schemas it names go inline
        data = workflow_to_xml(parsed.workflow).encode("utf-8")
    return data, parsed.workflow


# The limit a budget escalation names in its fix ("raise it (starter.py budget … agents=…)").
_SPENT_KEY = re.compile(r"\b([a-z_]+)=…")


async def cmd_requests(args: argparse.Namespace) -> int:
    _, run = await _run(args)
    requests = await run.requests()
    if args.json:
        print_json([r.wire() for r in requests])
        return 0
    if not requests:
        out.print("nothing is waiting for a person")
        return 0
    table = Table(title=cell(f"{args.id}: waiting for a person"), title_justify="left")
    for col in ("request", "kind", "task", "asks", "answer with"):
        table.add_column(col, overflow="fold")
    for r in requests:
        how = {
            "approval": f"starter.py approve {args.id} {r.id} [--run|--deny]",
            "review": f"starter.py approve-plan {args.id} --version {r.id.removeprefix('R-')} (or replan)",
        }.get(r.kind, f"starter.py answer {args.id} {r.id} TEXT")
        if r.about == "budget":  # raised, not answered
            task = "" if r.task_id == "run" else f" --task {r.task_id}"
            spent = _SPENT_KEY.search(r.text)  # the limit it names (agents=…, usd=…)
            key = spent.group(1) if spent else "tokens"
            how = f"starter.py budget {args.id}{task} {key}=… (or {'end' if not task else 'skip'})"
        elif r.about == "goal":
            how = f"starter.py answer {args.id} {r.id} 'what is missing' (a replan follows), or end"
        elif r.choices:  # a tool call in doubt
            how = (
                f"starter.py answer {args.id} {r.id} {'|'.join(r.choices)} (done: what it returned)"
            )
        asks = r.text + (f"\n({leader_said(r.suggestion)})" if r.suggestion else "")
        table.add_row(cell(r.id), cell(r.kind), cell(r.task_id), cell(asks), cell(how))
    out.print(table)
    return 0


async def show_run_plan(args: argparse.Namespace, run: Run) -> int:
    """Print the current plan of a run (or its history with --history)."""
    if args.history:
        history = await run.plan_history()
        if args.json:
            print_json([v.wire() for v in history])
        else:
            for v in history:
                out.print(f"[bold]v{v.version}[/] {v.at:%Y-%m-%d %H:%M:%S} — {shown(v.reason)}")
        return 0
    xml = await run.plan()
    try:
        review = await run.review_version()
    except RunEndedError:
        review = None
    if args.json:
        print_json({"xml": xml, "review": review})
    else:
        if review is not None:  # on stderr: the XML on stdout stays a plan that validates
            err.print(
                cell(
                    f"plan v{review} waits for review: approve it with "
                    f"`starter.py approve-plan {args.id} --version {review}`, or replan"
                )
            )
        # exact: a saved copy must validate (bidi and C1 controls as character references)
        out.print(xml_safe(xml), markup=False, highlight=False, soft_wrap=True, emoji=False)
    return 0


__all__ = ["no_version_given", "register"]


def leader_said(suggestion: str) -> str:
    """The leader's note on a request, said once as the leader's ("the leader: the leader left
    it to you: …" was said twice)."""
    return suggestion if suggestion.startswith("the leader") else f"the leader: {suggestion}"
