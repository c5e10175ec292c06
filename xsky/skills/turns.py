"""The map of a trajectory's user turns that the TaskAgent reads before it cuts a window.

A window is only the reading unit: the model sees every user turn of the whole trajectory
(its position in the view, its first sentence, who wrote it, and how the offline rules read
it against the task before it), so a critique three windows after its task, or a new goal
asked while the agent worked, is judged with the whole dialogue in view.
"""

from __future__ import annotations

from dataclasses import dataclass

from xsky.skills.atoms import keywords
from xsky.skills.followups import classify, is_machine, own_part

MAP_LINES = 240  # turns shown; the rest are counted
SENTENCE_CHARS = 140


@dataclass
class Turn:
    s: int  # where the turn starts in the view
    head: str
    origin: str | None = None
    mark: str | None = None  # its boundary id when it is in the window being cut


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    for stop in (". ", "? ", "! ", "\n"):
        at = flat.find(stop)
        if 12 <= at < SENTENCE_CHARS:
            return flat[: at + 1]
    return flat if len(flat) <= SENTENCE_CHARS else flat[: SENTENCE_CHARS - 1] + "…"


def classes(turns: list[Turn]) -> list[str]:
    """Each turn's class: who wrote it, and the offline reading ("new", "correction", …)."""
    out: list[str] = []
    task: list[str] = []
    before: str | None = None  # the last prompt (a preamble it shares with the next)
    for t in turns:
        if t.origin is None and is_machine(t.head):
            out.append("machine")
            continue
        head = own_part(t.head, before)
        follow = "new" if not task else classify(head, t.origin, task, True, False)
        if follow == "new":
            task = []
        if follow not in ("answer", "machine"):
            task = list(dict.fromkeys(task + keywords(head)))[:40]
            before = t.head
        out.append(f"{t.origin or 'prompt'}/{follow}")
    return out


def turn_map(turns: list[Turn], focus: int) -> str:
    """One line per turn (``@position [class] first sentence``), nearest ``focus`` first kept."""
    labels = classes(turns)
    rows = list(zip(turns, labels, strict=True))
    hidden = 0
    if len(rows) > MAP_LINES:
        keep = set(range(10))  # how the trajectory began
        by_distance = sorted(range(len(rows)), key=lambda i: abs(rows[i][0].s - focus))
        keep.update(by_distance[: MAP_LINES - 10])
        hidden = len(rows) - len(keep)
        rows = [r for i, r in enumerate(rows) if i in keep]
    lines = [
        f"@{t.s} [{label}]{' [[' + t.mark + ']]' if t.mark else ''} {_first_sentence(t.head)}"
        for t, label in rows
    ]
    if hidden:
        lines.append(f"(+{hidden} more turns far from this window; read_view reads any position)")
    return "\n".join(lines) or "(no user turns yet)"
