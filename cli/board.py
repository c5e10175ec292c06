"""The task board and run results for people (rich tables) and for scripts (JSON)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.table import Table
from rich.text import Text

from cli.render import cell, one_line
from xsky.artifacts import ArtifactRef
from xsky.leader.state import BoardPage
from xsky.leader.tasks import TaskView, format_duration, note_of, status_shown, summary_after
from xsky.plan.watches import poll_of, poll_said
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
    """The board; every cell and the title are literal text (a task's subject, error and
    progress note are the plan's and the agent's words)."""
    table = Table(
        title=cell(title) if title else None,
        title_justify="left",
        expand=False,
        caption=Text(caption) if caption else None,
        caption_justify="left",
    )
    # Where each task ran, once a run's tasks ran on more than one host (workers on several machines).
    hosts = len({t.host for t in tasks if t.host}) > 1
    columns = ("task", "agent", "status", "duration", "tries", *(("host",) if hosts else ()))
    for col in (*columns, "subject", "note"):
        table.add_column(
            col,
            overflow="fold" if col in ("subject", "note") else "ellipsis",
            no_wrap=col not in ("subject", "note"),
        )
    for t in tasks:
        note = note_of(t, t.status, t.blocked_reason)
        if t.retries and t.status not in ("completed", "skipped"):
            note = f"{note} [{t.retries[-1]}]".strip()
        if spent := task_spend(t):
            note = f"{note} ({spent})".strip()
        table.add_row(
            cell(t.id),
            cell(agent_shown(t)),
            Text(status_shown(t.status, t.provider), style=STATUS_STYLE.get(t.status, "")),
            format_duration(live_duration(t)),
            str(t.tries or t.attempt),
            *((cell(t.host or ""),) if hosts else ()),
            Text(one_line(t.subject, 48)),
            Text(one_line(note, 70)),
        )
    return table


def agent_shown(t: TaskView) -> str:
    """The board's agent column: a watch's poll is ``watch`` (it runs the watch tool, no model,
    on the queue of the kind that can look — a timer's and a URL's are the llm kind's, which
    read as a model's work), every other task its kind or role."""
    return "watch" if poll_of(t.agent_id) is not None else t.assigned_agent


def task_spend(t: TaskView) -> str:
    """A task's spend for its row: ``1,000 tokens · $0.0012`` (empty when it used none)."""
    if t.spend is not None and not t.spend.usage.empty():
        return t.spend.usage.text()
    return f"{t.tokens:,} tokens" if t.tokens else ""


def live_duration(t: TaskView) -> float | None:
    """A running task's duration by this machine's clock (a query's clock stops between
    workflow tasks); a finished one's as the board says."""
    if t.status in ("dispatched", "in_progress") and (t.started_at or t.dispatched_at):
        return (datetime.now(UTC) - (t.started_at or t.dispatched_at)).total_seconds()  # type: ignore[operator]
    return t.duration_s


def tally(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))


def leader_line(text: str) -> str:
    """The leader's line as a person reads it: a parenthesis inside another said after a
    semicolon instead (walk11: ``leader: off (no model configured on the workers (T-3 was
    answered offline)): …`` → ``leader: off (no model configured on the workers; T-3 was
    answered offline): …``). Other lines, and parentheses one deep, are left as they are."""
    if not text.startswith("leader:"):
        return text
    said: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
            if depth == 2:
                while said and said[-1] == " ":  # ("workers (T-3": no space before the ;)
                    said.pop()
                said.append("; ")
                continue
        elif ch == ")":
            depth = max(depth - 1, 0)
            if depth == 1:
                continue
        said.append(ch)
    return "".join(said)


def page_note(page: BoardPage) -> str:
    """What a page of a large board leaves out, and how to see it."""
    shown = len(page.tasks)
    if page.total <= shown:
        return ""
    if not shown:  # an offset past the end ("showing tasks 1001–1000 of 4")
        return (
            f"no task at offset {page.offset}: there are {page.total}; "
            f"--offset takes 0 to {page.total - 1}"
        )
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
    except (FileNotFoundError, ValueError, OSError) as e:
        # removed by gc (activities.artifacts.RemovedByGc): said, not "not readable from here",
        # which reads as a store this machine cannot reach
        gone = getattr(e, "gone", None)
        why = f"its run's stored objects were {gone}" if gone else "not readable from here"
        return f"{ref.preview}… [stored as {ref.uri}, {ref.size:,} bytes; {why}]"


def results_table(result: RunResult, read_artifact: Any, width: int = 400) -> Table:
    table = Table(
        title=cell(
            f"{result.name or result.workflow_id} — {result.status}: "
            + summary_after(result.status, result.summary)
        ),
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
        if poll_of(a.id) is not None:  # a watch's poll: what it saw, not its JSON
            text = poll_said(text) or text
        visible = (
            text
            if len(text) <= width
            else text[:width]
            + f"… [{len(text):,} characters; `starter.py result {result.workflow_id} --agent {a.id}` shows all]"
        )
        for art in a.artifacts:
            visible += f"\n[{art.media_type}: {art.uri}]"
        table.add_row(
            cell(a.task_id),
            Text(status_shown(a.status, a.provider), style=STATUS_STYLE.get(a.status, "")),
            cell(visible),
        )
    if result.results_ref is not None:
        table.caption = cell(
            f"{result.agents_total:,} agents: {tally(result.counts)}; only those that did not complete are listed — "
            f"`starter.py result {result.workflow_id} --agent ID` shows any agent's result"
        )
        table.caption_justify = "left"
    return table
