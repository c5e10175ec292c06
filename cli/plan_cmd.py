"""``plan``: turn a sentence into a plan (print it, or ``--run`` it), or show a run's plan.

starter.py plan "1. open https://example.com 2. summarize it"      # prints XML + tree
starter.py plan "…" --run [--review] [--follow]                      # the leader plans and runs
starter.py plan xsky-demo-… [--history]                              # a run's current plan
"""

from __future__ import annotations

import argparse
import asyncio
import re
import uuid

from temporalio.exceptions import ApplicationError

from cli.args import parse_pairs
from cli.budget_cmd import add_budget_flags
from cli.render import cell, err, out, plan_tree, print_json
from cli.roles_cmd import resolve_roles
from cli.runs_cmd import _parse_context, add_allow_host, announce, run_options
from cli.steer_cmd import show_run_plan
from client import Run, XSky
from xsky.config import load_settings
from xsky.errors import ConnectError, RunNotFoundError, UsageError
from xsky.kinds import AgentInfo
from xsky.plan.agent_config import plan_warnings
from xsky.plan.planning import PlanRequest
from xsky.run_ids import near_run_ids
from xsky.safe_text import xml_safe


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan",
        help="plan a request (print it: planned here, with this command's model; or --run it: "
        "planned on the workers), or show a run's plan by its id",
    )
    p.add_argument("text", help='the request in words ("1. … 2. …", "… then …"), or a run id')
    p.add_argument(
        "--run", action="store_true", help="start a run: the leader plans the request and runs it"
    )
    p.add_argument(
        "--review",
        action="store_true",
        help="with --run: wait for approve-plan before any agent starts",
    )
    p.add_argument(
        "--follow", action="store_true", help="with --run: show the live board until the run ends"
    )
    add_allow_host(p)
    add_budget_flags(p)
    p.add_argument(
        "--id",
        help="with --run: workflow id (default: a new xsky-<the request's first words>-<6 hex>)",
    )
    p.add_argument("--var", action="append", default=[], metavar="K=V")
    p.add_argument("--context", action="append", default=[], metavar="K=V")
    p.add_argument(
        "--history", action="store_true", help="for a run id: every plan version and why it changed"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_plan(a)))


async def _existing_run(text: str) -> Run | None:
    """The run with this id, if ``text`` looks like an id and such a run exists."""
    if any(c.isspace() for c in text):
        return None
    try:
        x = await XSky.connect(load_settings())
    except ConnectError:
        if text.startswith("xsky-"):
            raise
        return None
    try:
        return await x.get(text)
    except RunNotFoundError as e:
        # A run id, mistyped: planning it as a request would puzzle (and, with a model, spend).
        # One word shaped as an id (`my-frist-run`, `b2x`, `fail-run-ef435`) close to a recent
        # run's id is taken for one; a one-word request in plain letters is planned.
        close: list[str] = []
        if not text.startswith("xsky-") and _id_shaped(text):
            recent = [r.id for r in await x.runs(limit=200)]
            close = near_run_ids(text, recent, parts=False, most=1)
            if not close:  # planned, as a one-word request; said, should an id have been meant
                err.print(
                    cell(
                        f"(no run has the id {text}: planned as a request; `starter.py list` "
                        "shows the runs)"
                    )
                )
                return None
        elif not text.startswith("xsky-"):
            return None
        said = f"no run with id {text} — did you mean {close[0]}?" if close else e.fact
        raise RunNotFoundError(
            f"{said}; `starter.py list` shows the recent ones (to plan a request, write it in "
            "words)"
        ) from None


def _id_shaped(text: str) -> bool:
    """One word as run ids are written: letters, digits, '-', '_' or '.', with a '-' or a digit."""
    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]*", text)) and any(
        c == "-" or c.isdigit() for c in text
    )


async def cmd_plan(args: argparse.Namespace) -> int:
    if not args.text.strip():
        raise UsageError("the request is empty: say what should be done")
    if args.allow_host and not args.run:
        raise UsageError("--allow-host opens hosts for a run: add --run to start one")
    if not args.run:
        run = await _existing_run(args.text)
        if run is not None:
            return await show_run_plan(args, run)
        if args.history:
            raise UsageError(f"no run with id {args.text}; --history needs a run id")
    roles = resolve_roles()
    variables = parse_pairs(args.var, "--var")
    context = _parse_context(args.context)
    task_id = str(uuid.uuid4())
    if args.run:
        settings = load_settings()
        options = run_options(args)
        x = await XSky.connect(settings)
        start = x.run(
            args.text,
            variables=variables,
            context=context,
            options=options,
            id=args.id,
            on_wait=lambda note: out.print(cell(note)),
            on_start=lambda wid: setattr(args, "starting", wid),  # for Ctrl-C
        )
        return await announce(
            args, settings, x, start, options, ": the leader plans the request, then runs it"
        )

    request = PlanRequest(
        task_id=task_id,
        task_prompt=args.text,
        agents=[AgentInfo(name=r.name, description=r.description) for r in roles.values()],
        variables=sorted(variables),
        context_keys=sorted(context),
    )
    try:
        # Imported here: the planner brings the openai client, a second of start-up for every
        # other command.
        from activities.planner import make_plan

        result = await make_plan(request)
    except ApplicationError as e:
        raise UsageError(f"planning failed: {e.message}") from None
    if args.json:
        print_json({"xml": result.xml, "provider": result.provider, "attempts": result.attempts})
        return 0
    # exact: a saved copy must validate (bidi and C1 controls as character references)
    out.print(xml_safe(result.xml), markup=False, highlight=False, soft_wrap=True, emoji=False)
    # Only the XML goes to stdout (`plan "…" > plan.xml` saves a valid plan); the rest to stderr.
    err.print()
    if result.notes:  # e.g. the reply was in Eko's form: what was mapped, what repaired
        err.print(cell(result.notes))
    err.print(plan_tree(result.workflow))
    # what `validate` of the saved XML warns of, said here too (walk12: the offline planner made
    # "list the files" an llm agent with nothing to read — it fails at once on a worker without
    # a model — and only a later `validate plan.xml` said so)
    for warning in plan_warnings(result.workflow):
        err.print(cell(f"warning: {warning.message}"), style="yellow")
    err.print(cell(planned_where(result.provider, result.attempts)))
    return 0


def planned_where(provider: str, attempts: int) -> str:
    """Where a printed plan was made: here, with this command's settings — not where a run would
    plan it (`--run`: the leader's worker, with the workers' model), which may differ (walk9: a
    CLI without a model planned offline while the workers had one, and did not say so)."""
    if provider == "offline":
        made = (
            "planned by the offline provider on this machine: no model is set for this command "
            "(XSKY_MODEL); the workers may have one, and `--run` plans with theirs"
        )
    else:
        made = (
            f"planned by {provider} on this machine, with this command's settings (`--run` plans "
            f"on the workers, with their model) in {attempts} attempt(s)"
        )
    return (
        f'{made}; run it with `starter.py plan "…" --run` or save the XML '
        '(`starter.py plan "…" > plan.xml`) and `starter.py run plan.xml`'
    )
