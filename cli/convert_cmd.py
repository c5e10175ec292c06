"""``starter.py convert PLAN.xml [-o OUT] [--to native|eko]``: a plan in the other form.

An Eko plan (``<root>``) becomes the equivalent native ``<workflow>``; ``--to eko`` writes any
plan in Eko's form. The plan is checked as ``validate`` checks it first: a converter does
not write out a plan that would be refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.render import cell, err, out, print_problems, say_located
from cli.roles_cmd import resolve_roles
from xsky.config import load_settings
from xsky.errors import PlanError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "convert", help="write an Eko plan (<root>) as a native <workflow>, or back with --to eko"
    )
    p.add_argument("plan", help="path of the workflow XML file (Eko's form or native)")
    p.add_argument("-o", "--output", metavar="OUT", help="write here instead of to stdout")
    p.add_argument(
        "--to",
        choices=["native", "eko"],
        default="native",
        help="the form to write (default native; a native plan is then printed as it is)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # Imported here: the CLI starts without the XML machinery for other commands.
    from xsky.plan.eko import plan_thought, thought_comment, workflow_to_eko
    from xsky.plan.files import load_plan
    from xsky.plan.xml import workflow_to_xml
    from xsky.safe_text import xml_safe

    roles = resolve_roles()
    try:
        plan = load_plan(
            args.plan,
            known_agents=list(roles),
            variables=None,  # the run gives them: --var is not convert's business
            base_roles=roles,
            max_bytes=load_settings().max_plan_bytes,
        )
    except PlanError as e:
        print_problems(e, args.plan)
        return 2
    if plan.dialect:
        err.print(cell(plan.dialect))
    for repair in plan.repairs:
        say_located(f"warning: {repair.format(args.plan)}")
    # Eko's <thought> has no place in the native model: it rides along as a comment of the
    # native plan, and back into <thought> when that is written in Eko's form again.
    thought = plan_thought(plan.text)
    if args.to == "eko":
        text = workflow_to_eko(plan.workflow, thought)
    elif plan.dialect is None:
        err.print(cell(f"{args.plan} is already a native plan: written as it is"))
        text = plan.text
    else:
        text = workflow_to_xml(plan.workflow)
        if thought:
            first, _, rest = text.partition("\n")
            text = f"{first}\n  {thought_comment(thought)}\n{rest}"
    if args.output:
        Path(args.output).write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        err.print(cell(f"wrote {args.output}"))
    else:
        out.print(xml_safe(text), markup=False, highlight=False, soft_wrap=True, emoji=False)
    return 0
