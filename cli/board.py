"""The task board and run results for people (rich tables) and for scripts (JSON)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cli.render import one_line
from xsky.artifacts import ArtifactRef
from xsky.board import TaskView, format_duration
from xsky.leader_state import BoardPage
from xsky.runs import RunResult

STATUS_STYLE = {
    "pending": "dim",
    "dispatched": "cyan",
    "in_progress": "bold cyan",
    "completed": "green",
    "failed": "bold red",
    "blocked": "yellow",
    "cancelled": "magenta",
    "skipped": "blue",
}


def board_table(tasks: list[TaskView], title: str = "", caption: str = "") -> Table:
    table = Table(
        title=title or None,
        title_justify="left",
        expand=False,
        caption=caption or None,
        caption_justify="left",
    )
    for col in ("task", "agent", "status", "duration", "tries", "subject", "note"):
        table.add_column(
            col,
            overflow="fold" if col in ("subject", "note") else "ellipsis",
            no_wrap=col not in ("subject", "note"),
        )
    for t in tasks:
        note = t.error or t.blocked_reason or t.last_progress or ""
        if t.retries and t.status not in ("completed", "skipped"):
            note = f"{note} [{t.retries[-1]}]".strip()
        if t.tokens:
            note = f"{note} ({t.tokens} tokens)".strip()
        table.add_row(
            t.id,
            escape(t.assigned_agent),
            Text(t.status, style=STATUS_STYLE.get(t.status, "")),
            format_duration(live_duration(t)),
            str(t.tries or t.attempt),
            escape(one_line(t.subject, 48)),
            escape(one_line(note, 70)),
        )
    return table


def live_duration(t: TaskView) -> float | None:
    """A running task's duration by this machine's clock (a query's clock stops between
    workflow tasks); a finished one's as the board says."""
    if t.status in ("dispatched", "in_progress") and (t.started_at or t.dispatched_at):
        return (datetime.now(UTC) - (t.started_at or t.dispatched_at)).total_seconds()  # type: ignore[operator]
    return t.duration_s


def tally(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))


def page_note(page: BoardPage) -> str:
    """What a page of a large board leaves out, and how to see it."""
    shown = len(page.tasks)
    if page.total <= shown:
        return ""
    return (
        f"showing tasks {page.offset + 1}–{page.offset + shown} of {page.total}; "
        "--offset N, --limit N and --status STATUS page through the rest"
    )


def result_text(result: str | None, ref: ArtifactRef | None, read_artifact: Any) -> str:
    """The full result: inline, else read from the artifact store, else the preview."""
    if result is not None:
        return result
    if ref is None:
        return ""
    try:
        return read_artifact(ref)
    except (FileNotFoundError, ValueError, OSError):
        return f"{ref.preview}… [stored as {ref.uri}, {ref.size:,} bytes; not readable from here]"


def results_table(result: RunResult, read_artifact: Any, width: int = 400) -> Table:
    table = Table(
        title=f"{escape(result.name or result.workflow_id)} — {result.status}: {escape(result.summary)}",
        title_justify="left",
    )
    table.add_column("task", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("result / error", overflow="fold")
    for a in result.agents:
        text = (
            a.error
            if a.status != "completed" and a.error
            else result_text(a.result, a.result_ref, read_artifact)
        )
        shown = (
            text
            if len(text) <= width
            else text[:width]
            + f"… [{len(text):,} characters; `starter.py result {result.workflow_id} --agent {a.id}` shows all]"
        )
        for art in a.artifacts:
            shown += f"\n[{art.media_type}: {art.uri}]"
        table.add_row(
            a.task_id, Text(a.status, style=STATUS_STYLE.get(a.status, "")), escape(shown)
        )
    if result.results_ref is not None:
        table.caption = (
            f"{result.agents_total:,} agents: {tally(result.counts)}; only those that did not complete are listed — "
            f"`starter.py result {result.workflow_id} --agent ID` shows any agent's result"
        )
        table.caption_justify = "left"
    return table
