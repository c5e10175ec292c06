"""Rendering for people: plan trees, tables, problems. Plain text when not a terminal."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from xsky import dag
from xsky.errors import PlanError
from xsky.models import Workflow

# Piped output gets a generous width instead of rich's 80 columns, so lines are not cut.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def one_line(text: str, width: int = 72) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def print_problems(error: PlanError, source: str) -> None:
    noun = "problem" if len(error.problems) == 1 else "problems"
    err.print(f"[bold red]{escape(source)}: {len(error.problems)} {noun}[/]")
    for p in error.problems:
        err.print(escape(p.format(source)))


def plan_summary(workflow: Workflow) -> dict[str, Any]:
    lv = dag.levels(workflow)
    length, path = dag.critical_path(workflow)
    return {
        "name": workflow.name,
        "taskId": workflow.task_id,
        "agents": len(workflow.agents),
        "levels": [list(level) for level in lv],
        "criticalPath": {"length": int(length), "agents": path},
        "variables": dict(workflow.variables),
    }


def plan_tree(workflow: Workflow) -> Tree:
    summary = plan_summary(workflow)
    cp = summary["criticalPath"]
    title = (
        f"[bold]{escape(workflow.name or '(unnamed)')}[/]  taskId={escape(workflow.task_id)}\n"
        f"{_n(summary['agents'], 'agent')} · {_n(len(summary['levels']), 'level')} · "
        f"critical path {_n(cp['length'], 'agent')} ({escape(' → '.join(cp['agents']))})"
    )
    tree = Tree(title)
    by_id = {a.id: a for a in workflow.agents}
    for depth, level in enumerate(summary["levels"]):
        branch = tree.add(
            f"[cyan]level {depth}[/]" + (" [dim](parallel)[/]" if len(level) > 1 else "")
        )
        for agent_id in level:
            a = by_id[agent_id]
            after = f"  [dim]after {', '.join(a.depends)}[/]" if a.depends else ""
            branch.add(
                f"[bold]{escape(a.id)}[/] [magenta]{escape(a.name)}[/]  {escape(one_line(a.task))}{after}"
            )
    return tree
