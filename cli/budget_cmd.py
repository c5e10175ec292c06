"""Budgets on the command line: ``run --budget …`` (and ``plan --run``), and ``budget RUN``,
which shows a run's spend or raises and lowers its limits (the ``set_budget`` update)."""

from __future__ import annotations

import argparse
import asyncio

from rich.table import Table

from cli.board import agent_shown, task_spend
from cli.render import cell, err, out, print_json
from client import Run, XSky
from xsky.config import load_settings
from xsky.errors import UsageError
from xsky.leader.state import InterventionResult
from xsky.leader.tasks import TaskView
from xsky.plan.budget import (
    AGENT_KEYS,
    EXAMPLE,
    KEYS,
    BudgetError,
    BudgetView,
    Limits,
    RunBudget,
    describe,
    parse_limits,
)


def add_budget_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--budget",
        metavar="LIMITS",
        help=f"what the run may spend, e.g. {EXAMPLE}: dispatch pauses with an escalation E-n "
        "when it is spent (docs/budgets.md)",
    )
    p.add_argument(
        "--agent-budget",
        metavar="LIMITS",
        help="a cap for every agent: tokens=20000,usd=0.5,minutes=10",
    )
    p.add_argument(
        "--role-budget",
        action="append",
        default=[],
        metavar="ROLE:LIMITS",
        help="a cap for every agent of one role (repeatable): verify:tokens=5000",
    )
    p.add_argument(
        "--budget-reserve",
        type=int,
        metavar="TOKENS",
        help="tokens held for an agent without a cap while it runs (default 4096)",
    )


# The most a limit given here may be. Past these a budget is none in practice, and its numbers
# stop being what was written (a run takes tokens as a float: 10^26 came back as
# 100000000000000004764729344) or readable (usd=1e308 was shown with 300 digits).
MOST: dict[str, int] = {"tokens": 10**12, "usd": 10**6, "minutes": 10**6, "agents": 10**6}
# The least usd limit: spend is shown to the cent, so a smaller one read "$0.00 of $0.00".
LEAST_USD = 0.01


def _limits(text: str, flag: str, keys: tuple[str, ...] = KEYS) -> Limits:
    try:
        limits = parse_limits(text, flag, keys)
    except BudgetError as e:
        raise UsageError(str(e)) from None
    problems = []  # every one at once, as parse_limits says them
    for key in keys:
        value = getattr(limits, key)
        if value is None:
            continue
        said = str(value) if isinstance(value, int) else f"{value:g}"
        if value > MOST[key]:
            problems.append(
                f"{flag}: {key}={said} is more than a budget takes; give at most {key}={MOST[key]}"
            )
        elif key == "usd" and value < LEAST_USD:
            problems.append(
                f"{flag}: usd={said} is less than a cent, and spend is shown in cents; "
                f"give at least usd={LEAST_USD}"
            )
    if problems:
        raise UsageError("; ".join(problems))
    return limits


def budget_of(args: argparse.Namespace) -> RunBudget | None:
    """RunOptions.budget from ``--budget``, ``--agent-budget``, ``--role-budget`` and
    ``--budget-reserve`` (None when none is given)."""
    run = getattr(args, "budget", None)
    agent = getattr(args, "agent_budget", None)
    roles = getattr(args, "role_budget", [])
    reserve = getattr(args, "budget_reserve", None)
    if run is None and agent is None and not roles and reserve is None:
        return None
    per_role: dict[str, Limits] = {}
    for item in roles:
        role, sep, spec = item.partition(":")
        if not sep or not role.strip():
            raise UsageError(
                f"--role-budget {item!r}: write it as ROLE:LIMITS, e.g. verify:tokens=5000"
            )
        per_role[role.strip()] = _limits(spec, f"--role-budget {role.strip()}", AGENT_KEYS)
    if reserve is not None and reserve <= 0:
        raise UsageError(f"--budget-reserve must be more than 0 tokens, not {reserve}")
    return RunBudget(
        run=_limits(run, "--budget") if run is not None else Limits(),
        per_agent=_limits(agent, "--agent-budget", AGENT_KEYS) if agent is not None else None,
        per_role=per_role,
        reserve=reserve,
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "budget",
        help="a run's spend per task and in all; with LIMITS, raise or lower its budget",
    )
    p.add_argument("id", help="workflow id of the run")
    p.add_argument(
        "limits", nargs="?", help=f"new limits, e.g. {EXAMPLE} (only those given change)"
    )
    p.add_argument("--task", help="set this task's own cap instead of the run's (T-3 or 3)")
    p.add_argument("--reserve", type=int, metavar="TOKENS", help="tokens held per uncapped agent")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_budget(a)))


async def cmd_budget(args: argparse.Namespace) -> int:
    if args.limits is not None:  # a mistake in them is said before the server is asked
        _limits(args.limits, "budget", AGENT_KEYS if args.task else KEYS)
    async with XSky.connect(load_settings()) as x:
        run = await x.get(args.id)
        if args.limits is None and args.reserve is None:
            if args.task:
                raise UsageError("--task sets a task's cap: give LIMITS too, e.g. tokens=20000")
            page = await run.board(limit=2000)
            return show_spend(args, page.budget, page.tasks)
        result = await set_limits(run, args.limits, args.task, args.reserve)
        if args.task:
            note = await ended_note(run, args.task)
        elif args.limits:
            note = spent_note(
                run.id, (await run.board(limit=1)).budget, _limits(args.limits, "budget")
            )
        else:
            note = None
    if args.json:
        print_json({**result.wire(), **({"note": note} if note else {})})
    else:
        out.print(cell(result.message))
        if note:
            err.print(cell(f"note: {note}"))
    return 0


def spent_note(run_id: str, view: BudgetView | None, given: Limits) -> str | None:
    """What a run's limit given already spent does (walk10: ``minutes=30`` on a run 31 minutes
    old was taken in silence): nothing new starts — a task that becomes ready waits on a
    budget escalation — and running agents stop at their next model call."""
    if view is None:
        return None
    used = view.spent.plus(view.unconfirmed)
    spent = []
    for key, now in (
        ("minutes", view.minutes),
        ("tokens", used.tokens),
        ("usd", used.usd),
        ("agents", view.agents),
    ):
        limit = getattr(given, key)
        if limit is not None and now >= limit:
            said = str(limit) if isinstance(limit, int) else f"{limit:g}"
            shown = {
                "minutes": f"the run is {describe(key, now)} old",
                "agents": f"{now:,} task{'s' if now != 1 else ''} started",
            }.get(key, f"{describe(key, now)} used")
            spent.append((key, f"{key}={said} is already spent ({shown})"))
    if not spent:
        return None
    stops = (
        "no new task starts"
        if [key for key, _ in spent] == ["agents"]
        else "no new agent starts (a task that becomes ready waits on a budget escalation, "
        "E-n) and running agents stop at their next model call (a direct tool runs to its end)"
    )
    keys = ",".join(f"{key}=…" for key, _ in spent)
    return (
        f"{'; '.join(said for _, said in spent)}: {stops}; raise it "
        f"(starter.py budget {run_id} {keys}) or end the run (starter.py end {run_id})"
    )


async def ended_note(run: Run, task: str) -> str | None:
    """What a task's cap will do when the task has ended: the run takes the cap (its update
    accepts it), but a completed or skipped task never runs again in this run, and a failed or
    cancelled one only if it is retried — said, rather than a cap set for nothing in silence."""
    row = await run.task(task)
    if row.status in ("completed", "skipped"):
        return (
            f"{row.id} has {row.status} and does not run again in this run: its cap applies "
            "to nothing"
        )
    if row.status in ("failed", "cancelled"):
        return (
            f"{row.id} has {row.status}: its cap applies if it runs again "
            f"(`retry {run.id} {row.id}`)"
        )
    return None


async def set_limits(
    run: Run, limits: str | None, task: str | None = None, reserve: int | None = None
) -> InterventionResult:
    """The ``set_budget`` update from limits as ``budget RUN LIMITS`` takes them (the CLI's
    and the live page's: the same sentences for the same mistakes)."""
    # ("" is limits given empty, said in the CLI's form: not the run's JSON one)
    given = (
        _limits(limits, "budget", AGENT_KEYS if task else KEYS) if limits is not None else Limits()
    )
    return await run.set_budget(task=task, reserve=reserve, **given.model_dump(exclude_none=True))


def show_spend(args: argparse.Namespace, view: BudgetView | None, tasks: list[TaskView]) -> int:
    spent = [t for t in tasks if task_spend(t)]
    if args.json:
        print_json(
            {
                "workflowId": args.id,
                "budget": view.wire() if view else None,
                "tasks": {t.id: t.spend.usage.wire() for t in spent if t.spend is not None},
            }
        )
        return 0
    out.print(cell(view.summary() if view else "no model call has spent anything yet"))
    if view is not None and view.paused:
        out.print(cell(f"dispatch waits: {view.paused}"))
    if spent:
        table = Table(title_justify="left")
        for col in ("task", "agent", "status", "spent"):
            table.add_column(col)
        for t in spent:
            table.add_row(cell(t.id), cell(agent_shown(t)), cell(t.status), cell(task_spend(t)))
        out.print(table)
    return 0
