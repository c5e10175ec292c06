"""The task board: every agent of a run is a task ``T-<id>`` with LingXiao's fields.

Only a few states are stored (``pending``, ``dispatched``, ``in_progress`` and the
terminal ones); ``blocked`` is derived — a task waits on a person, or a dependency of it
ended without completing — so the board, the CLI and the Web UI can never disagree.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from datetime import datetime
from functools import lru_cache
from typing import Literal

from pydantic import Field

from xsky.artifacts import ArtifactRef
from xsky.outcomes import provider_label
from xsky.plan.budget import TaskSpend
from xsky.plan.models import WireModel
from xsky.safe_text import markdown_inline, printable

StoredStatus = Literal[
    "pending", "dispatched", "in_progress", "completed", "failed", "cancelled", "skipped"
]
TaskStatus = Literal[
    "pending", "dispatched", "in_progress", "completed", "failed", "blocked", "cancelled", "skipped"
]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled", "skipped"})
# A dependency in one of these states can never satisfy its dependents.
DEAD_END: frozenset[str] = frozenset({"failed", "cancelled"})


def task_id_for(agent_id: str) -> str:
    return f"T-{agent_id}"


class TaskState(WireModel):
    id: str  # T-<agent id>
    agent_id: str
    session_id: str  # the run (workflow id)
    subject: str
    description: str
    assigned_agent: str  # the agent kind or role
    blocked_by: list[str] = Field(default_factory=list)  # task ids this one waits for
    stored: StoredStatus = "pending"
    attempt: int = 0  # dispatches of this task (each may retry inside Temporal)
    activity_attempt: int = 0  # Temporal's attempt number of the current dispatch
    tries: int = 0  # every attempt of every dispatch (Temporal's retries included)
    # why attempts were retried: "attempt 2 after worker lost: …"
    retries: list[str] = Field(default_factory=list)
    iterations: int = 0
    tokens: int = 0
    dispatched_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    last_progress_at: datetime | None = None
    last_progress: str | None = None
    # The progress its attempts last reported ("bash running for 20s"): once the task has
    # completed it is stale, and its note is not it (a note of the leader's still shows).
    agent_note: str | None = None
    error: str | None = None
    result: str | None = None
    result_ref: ArtifactRef | None = None
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    waiting_on: str | None = None  # id of a pending human request
    # who answered the completed task: a model's name, "offline" (no model), None (a tool)
    provider: str | None = None
    leader_retries: int = 0  # times the leader sent a result back with an instruction
    spend: TaskSpend | None = None  # what its model calls used (None: none yet)
    host: str | None = None  # the host its latest attempt ran on (the worker's XSKY_HOST)
    # How the leader checked its result when it could not consult its coordinator: "not
    # checked (budget)" (None: checked, or not a result the leader checks).
    check: str | None = None
    # One agent steered by a person (pause_task, reset_task, set_task_timeout): held back from
    # dispatch; the dispatch that starts without its checkpoint (0: none); its attempts' timeout.
    held: bool = False
    fresh: int = 0
    timeout: float | None = None

    @property
    def terminal(self) -> bool:
        return self.stored in TERMINAL


def status_shown(status: str, provider: str | None) -> str:
    """The status as people read it: an offline answer says so ("completed (offline)")."""
    return f"{status} (offline)" if status == "completed" and provider_label(provider) else status


def summary_after(status: str, summary: str) -> str:
    """A run's summary as it follows its status ("cancelled: 0 of 4 …"): said once when the
    summary begins with the status, as a cancelled run's does."""
    return summary.removeprefix(f"{status}: ")


def note_of(task: TaskState, status: str, reason: str | None) -> str:
    """A task's note: its error, why it is blocked, how an offline answer was made, its progress
    (a completed task's last own progress report is stale: not shown)."""
    label = provider_label(task.provider) if status == "completed" else None
    if status == "completed" and task.check:
        label = f"{label}; {task.check}" if label else task.check
    progress = task.last_progress
    if status == "completed" and progress is not None and progress == task.agent_note:
        progress = None
    return task.error or reason or label or progress or ""


def subject_of(task: str, width: int = 60) -> str:
    first = " ".join(task.strip().splitlines()[0].split()) if task.strip() else ""
    return first if len(first) <= width else first[: width - 1] + "…"


def derive_statuses(tasks: Mapping[str, TaskState]) -> dict[str, tuple[TaskStatus, str | None]]:
    """Status and blocked-reason of every task in one pass (memoised: linear in the board)."""
    out: dict[str, tuple[TaskStatus, str | None]] = {}
    for root_id in tasks:
        if root_id in out:
            continue
        stack = [root_id]
        while stack:
            tid = stack[-1]
            task = tasks[tid]
            if task.terminal or task.stored in ("dispatched", "in_progress"):
                out[tid] = (task.stored, None)
                stack.pop()
                continue
            if task.waiting_on is not None:
                out[tid] = ("blocked", f"waiting for request {task.waiting_on}")
                stack.pop()
                continue
            if task.held:
                out[tid] = ("blocked", "paused by a person (resume_task)")
                stack.pop()
                continue
            todo = [d for d in task.blocked_by if d in tasks and d not in out and d not in stack]
            if todo:
                stack.extend(todo)
                continue
            reason = None
            for dep_id in task.blocked_by:
                dep_status, _ = out.get(dep_id, ("pending", None))
                if dep_status in DEAD_END or dep_status == "blocked":
                    reason = f"{dep_id} {dep_status}"
                    break
            out[tid] = ("blocked", reason) if reason else ("pending", None)
            stack.pop()
    return out


def derive_status(task: TaskState, tasks: Mapping[str, TaskState]) -> TaskStatus:
    """The status people see: stored state, or ``blocked`` when it cannot move on its own."""
    return derive_statuses(tasks)[task.id][0]


def duration_seconds(task: TaskState, now: datetime) -> float | None:
    start = task.started_at or task.dispatched_at
    if start is None:
        return None
    return ((task.ended_at or now) - start).total_seconds()


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


# Text glyphs, not emoji: common fonts draw emoji (⏸ above all) as empty boxes, and a glyph
# of double width would push the board's columns out of line.
_GLYPHS = {
    "pending": ".",
    "dispatched": ">",
    "in_progress": ">",
    "completed": "+",
    "failed": "!",
    "blocked": "#",
    "cancelled": "x",
    "skipped": "-",
}


MAX_BOARD_ROWS = 150
# Widest a column's text gets: the Web UI's details pane is narrow, and a wider block scrolls.
_COLUMNS = {"task": 16, "agent": 18, "status": 26, "duration": 16, "tries": 30, "subject": 36}
NOTE_CHARS = 1000  # a note (an error, why it waits) is whole up to this, under the table


def _plain(text: str, width: int) -> str:
    """One line of literal text: controls shown, whitespace runs made one space, cut at width."""
    if (
        len(text) <= width
        and text.isprintable()  # no control, and no whitespace but the space
        and "  " not in text
        and text[:1] != " "
        and text[-1:] != " "
    ):
        return text  # already so (most cells: ids, names, statuses, durations)
    flat = " ".join(printable(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _width(text: str) -> int:
    """Columns ``text`` takes in a monospace font (East Asian wide characters take two)."""
    if text.isascii():  # one column each (the board's common case: a character loop costs)
        return len(text)
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


@lru_cache(maxsize=4096)
def _row(
    task_id: str, agent: str, status: str, took: str, tries: str, description: str, note: str
) -> tuple[tuple[str, ...], tuple[int, ...], str]:
    """A task's row on the board — its cells made one line each, their widths — and its note's
    line under the table ("" for none). Remembered: the leader draws its board again after
    every workflow task, and most rows have not changed since the last (a 200-agent fan-out
    drew it some 20 times; py-spy: a third of the leader's thread). A worker keeps the last
    4,096 rows: short cells, a note of at most NOTE_CHARS."""
    cells = (task_id, agent, status, took, tries, subject_of(printable(description), 36))
    row = tuple(_plain(c, w) for c, w in zip(cells, _COLUMNS.values(), strict=True))
    line = (
        f"- **{markdown_inline(task_id)}** {markdown_inline(note, NOTE_CHARS)}"
        if note.strip()
        else ""
    )
    return row, tuple(_width(c) for c in row), line


def board_markdown(
    title: str,
    tasks: list[TaskState],
    now: datetime,
    footer: str = "",
    state: str = "running",
    shown: Callable[[str, str], str] | None = None,
) -> str:
    """The board for the Web UI's current details: a first line with the run's state (PAUSED
    there, not only in a search attribute) and the tally, then the table in a fenced block —
    the Web UI renders markdown tables without cell padding, so columns ran together — in
    fixed-width columns; under it each task's note, whole and wrapped (an error, why it waits),
    where a last column would run off the narrow pane.

    Inside the block nothing is markup; every cell is made one line of literal text, so no
    line of the agents' words can close the fence (each row starts with its task id). The
    title is literal markdown text (:func:`~xsky.safe_text.markdown_inline`); the footer is
    markdown of the leader's own, its controls shown. ``shown``: a task's text as people read
    it (a forEach item's with its item: LeaderViews.item_text)."""
    by_id = {t.id: t for t in tasks}
    derived = derive_statuses(by_id)
    counts: dict[str, int] = {}
    rows: list[tuple[str, ...]] = []
    sizes: list[tuple[int, ...]] = []  # each cell's width in screen columns
    notes: list[str] = []
    for t in tasks:
        status, reason = derived[t.id]
        counts[status] = counts.get(status, 0) + 1
        if len(rows) >= MAX_BOARD_ROWS:
            continue
        note = note_of(t, status, reason)
        if t.retries and status not in ("completed", "skipped"):
            note = f"{note} [{t.retries[-1]}]"
        tokens = f" · {t.tokens:,} tok" if t.tokens else ""
        if t.spend is not None and not t.spend.usage.empty():  # settled spend, with its cost
            used = t.spend.usage
            tokens = f" · {used.tokens:,} tok" + (f" · ${used.usd:,.4f}" if used.usd else "")
        # A running task's clock would stand still between workflow tasks: say since when instead.
        # (Not strftime: it imports `time` on every call, a slow import in a workflow's sandbox.)
        since = t.started_at or t.dispatched_at
        took = (
            f"since {since.hour:02}:{since.minute:02}:{since.second:02}"
            if status in ("dispatched", "in_progress") and since
            else format_duration(duration_seconds(t, now))
        )
        row, size, note_line = _row(
            t.id,
            t.assigned_agent,
            f"{_GLYPHS[status]} {status_shown(status, t.provider)}",
            took,
            f"{t.tries or t.attempt}{tokens}",
            shown(t.agent_id, t.description) if shown is not None else t.description,
            note,
        )
        rows.append(row)
        sizes.append(size)
        if note_line:
            notes.append(note_line)
    if len(tasks) > MAX_BOARD_ROWS:
        more = ("…", "", "", "", "", f"{len(tasks) - MAX_BOARD_ROWS} more: query task_board")
        rows.append(more)
        sizes.append(tuple(_width(c) for c in more))
    table = [tuple(_COLUMNS), *rows]
    sizes.insert(0, tuple(_width(c) for c in _COLUMNS))
    widths = [max(r[i] for r in sizes) for i in range(len(_COLUMNS))]
    lines = [
        "  ".join(c + " " * (w - n) for c, n, w in zip(r, size, widths, strict=True)).rstrip()
        for r, size in zip(table, sizes, strict=True)
    ]
    tally = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    out = [
        f"**{markdown_inline(title)}** · {state.upper()} · {tally}",
        "",
        "```text",
        *lines,
        "```",
    ]
    if notes:
        out += ["", *notes]
    if footer:
        out += ["", printable(footer)]
    return "\n".join(out)


class TaskView(TaskState):
    """A task as queries show it: the stored fields plus what is derived from them."""

    status: TaskStatus
    blocked_reason: str | None = None
    duration_s: float | None = None

    @classmethod
    def of(cls, task: TaskState, status: TaskStatus, reason: str | None, now: datetime) -> TaskView:
        return cls(
            **task.__dict__,
            status=status,
            blocked_reason=reason,
            duration_s=duration_seconds(task, now),
        )
