"""Rendering for people: plan trees, tables, problems. Plain text when not a terminal.

Text that comes from a run — results, pages, plans, logs, requests, errors, permission
decisions — can hold escape sequences and rich markup meant for the person's terminal. It is
printed only through :func:`cell` (a rich ``Text``: no markup, controls shown) or
:func:`shown` (inside a message that has markup of its own); JSON through :func:`print_json`.
The consoles themselves show any control character that still reaches them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.markup import escape
from rich.segment import Segment
from rich.text import Text
from rich.tree import Tree

from xsky.safe_text import json_safe, printable

if TYPE_CHECKING:  # (the plan's modules load where a plan is shown: not for `status`, `list`)
    from xsky.errors import PlanError
    from xsky.plan.models import Workflow


class SafeConsole(Console):
    """A console whose output never carries a control character it did not make itself.

    The net under every print: rich passes ESC, C1 and bidi controls in a text straight to
    the terminal, so a print that forgot :func:`cell` would obey an agent's ``ESC[2J``. Only
    rich's own control segments (cursor moves of a live board) go out as they are.
    """

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control:
                yield segment
                continue
            text = printable(segment.text)
            yield segment if text is segment.text else Segment(text, segment.style)


# Piped output gets a generous width instead of rich's 80 columns, so lines are not cut.
out = SafeConsole(highlight=False, width=None if sys.stdout.isatty() else 160)
err = SafeConsole(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160)


def cell(text: object, style: str = "") -> Text:
    """Text from a run, for a table cell or a line of its own: shown literally (no markup,
    no emoji codes), every control character visible."""
    return Text(printable(str(text)), style=style)


def shown(text: object) -> str:
    """Text from a run, to put inside a message that uses rich markup of its own."""
    return escape(printable(str(text)))


def counted(count: int, noun: str) -> str:
    """ "1 agent", "3 agents"."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def one_line(text: str, width: int = 72) -> str:
    """The text on one line, cut at ``width``; its controls shown first, as splitting on
    whitespace would silently drop some of them (\\x1c–\\x1f, \\x85)."""
    flat = " ".join(printable(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def json_text(value: Any, indent: int | None = 2) -> str:
    """JSON for scripts: the exact values, with no character a terminal would obey."""
    return json_safe(json.dumps(value, indent=indent, ensure_ascii=False, default=str))


def print_json(value: Any) -> None:
    sys.stdout.write(json_text(value) + "\n")


def print_problems(error: PlanError, source: str) -> None:
    noun = "problem" if len(error.problems) == 1 else "problems"
    err.print(f"[bold red]{shown(source)}: {len(error.problems)} {noun}[/]")
    for p in error.problems:
        say_located(p.format(source))


def say_located(line: str) -> None:
    """A ``file:line:col: …`` line on stderr, whole: never wrapped into two where the output
    is not a terminal (grep, an editor's error list read it one line each)."""
    err.print(cell(line), soft_wrap=True)


def plan_summary(workflow: Workflow) -> dict[str, Any]:
    from xsky.plan import dag

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


def plan_tree(workflow: Workflow, heading: str | None = None) -> Tree:
    """The plan's agents by level; ``heading`` in place of its name and taskId (a second tree
    of the same plan: as it runs)."""
    summary = plan_summary(workflow)
    cp = summary["criticalPath"]
    title = (
        (
            shown(heading)
            if heading is not None
            else f"[bold]{shown(workflow.name or '(unnamed)')}[/]  taskId={shown(workflow.task_id)}"
        )
        + "\n"
        f"{counted(summary['agents'], 'agent')} · {counted(len(summary['levels']), 'level')} · "
        f"critical path {counted(cp['length'], 'agent')} ({shown(' → '.join(cp['agents']))})"
    )
    tree = Tree(title)
    by_id = {a.id: a for a in workflow.agents}
    for depth, level in enumerate(summary["levels"]):
        branch = tree.add(
            f"[cyan]level {depth}[/]" + (" [dim](parallel)[/]" if len(level) > 1 else "")
        )
        for agent_id in level:
            a = by_id[agent_id]
            after = f"  [dim]after {shown(', '.join(a.depends))}[/]" if a.depends else ""
            if a.for_each:
                after += f"  [dim]for each item of {shown(a.for_each)}[/]"
            branch.add(
                f"[bold]{shown(a.id)}[/] [magenta]{shown(a.name)}[/]  {escape(one_line(a.task))}{after}"
            )
    return tree
