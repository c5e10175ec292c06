"""TaskAgent: cut a delta of a trajectory into AtomTasks, with a model or offline.

With a model configured (``XSKY_MODEL`` + an OpenAI-compatible server), each window of at
most 30,000 characters is shown to the model with its candidate boundaries marked
(``[[B1]]``, ``[[B2]]`` … before each real prompt, compaction or task start); the model
reads more with ``read_delta`` / ``recent_atoms`` and answers with ``submit_atom`` calls,
each checked on arrival (a known boundary, after the previous one, a score of 1–10), and
may revise the trajectory's previous atom with ``update_previous``. Without a model the
offline splitter of :mod:`xsky.skills.atoms` decides. Either way ``used_skills`` is measured
from the transcript (the model's claim is kept only when nothing was measured, marked
"self-reported"), and the result is staged for the commit step.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, WithJsonSchema

from activities import llm
from activities.fsio import read_json, write_json
from activities.model_tools import ModelTool, tool_loop
from activities.skills.scan import md_tail
from activities.skills.store import SkillStore
from xsky.skills.atom_finish import UX_RUBRIC, DeltaView, finish
from xsky.skills.atoms import (
    INPUT_CAP,
    AtomTask,
    Draft,
    atom_number,
    boundary_indexes,
    group_at,
    group_offline,
    is_boundary,
    windows,
)
from xsky.skills.layout import atom_path, staging_dir, tasks_dir
from xsky.skills.runs import DeltaRef, SplitResult
from xsky.skills.trajectory import Unit

MAX_MODEL_TURNS = 12
RECENT_ATOMS = 3

SYSTEM_PROMPT = f"""You cut a coding agent's transcript into AtomTasks: each atom is one coherent episode of the
person's intent (one goal, with its clarifications and corrections) that could be analysed on its own
and later distilled into a reusable skill.

Rules:
- An atom may only start at a marked boundary [[Bn]] (a real prompt, a compaction, a task start).
- Cut where the person's intent changes (a new goal or topic). Do NOT cut for clarifications,
  corrections ("no, use Decimal"), retries, "continue", or because the agent switched tools.
- A compaction summary is written by a model, not the person: it is never an intent.
- Text before the first atom you submit continues the trajectory's previous atom (shown to you).
  If the first prompt only continues that previous task, do not submit it.
- Submit atoms in order with submit_atom; when done, answer with a short plain-text note.
- intent: the person's goal in one line (<= 160 characters). summary: what happened and how it
  ended (root cause, key actions, result, verification; <= 600 characters). tags: 3-5 lowercase
  words. used_skills: only skills the agent explicitly used, if you see any.

{UX_RUBRIC}"""

Score = Annotated[int, Field(strict=True, ge=1, le=10)]


class SubmitAtom(BaseModel):
    """Start an atom at a marked boundary and describe it. Checked on arrival."""

    boundary: str = Field(description="a boundary marker id, e.g. B2")
    intent: str
    summary: str
    tags: list[str]
    ux_score: Score
    used_skills: list[str] | None = None


class UpdatePrevious(BaseModel):
    """Revise the summary and ux_score of the trajectory's previous atom, which this window extends."""

    summary: str
    ux_score: Score


class ReadDelta(BaseModel):
    """Read part of this delta's transcript view by character offset (to look beyond the window)."""

    start: int
    # The limits are advertised, and clamped to rather than refused.
    length: Annotated[int, WithJsonSchema({"type": "integer", "maximum": 8000})] | None = None


class RecentAtoms(BaseModel):
    """The trajectory's most recent atoms (intent, summary, range)."""

    count: Annotated[int, WithJsonSchema({"type": "integer", "maximum": 10})] | None = None


async def split_delta(
    home: Path, delta: DeltaRef, target: llm.LLMTarget | None, beat: Callable[[str], None]
) -> SplitResult:
    stage_dir = staging_dir(home, delta.key)
    stage = read_json(stage_dir / "render.json")
    result = SplitResult(key=delta.key, split_by="model" if target else "offline")
    store = SkillStore(home)
    try:
        lanes_out = []
        for lane in stage["lanes"]:
            tid = lane["traj_id"]
            trow = store.traj(tid)
            prior = _load(home, tid, trow.last_atom) if trow and trow.last_atom else None
            view = DeltaView(
                tid,
                stage["path"],
                lane["md"],
                lane["md_start"],
                delta.start,
                delta.end,
                previous_md=md_tail(home, tid, trow.md_bytes) if trow else "",
            )
            number = (trow.atoms if trow else 0) + 1
            produced: dict[str, AtomTask] = {}
            for window in windows([Unit.from_wire(u) for u in lane["units"]]):
                result.windows += 1
                beat(f"{delta.label()}: window {result.windows}")
                drafts: list[Draft] | None = None
                if target is not None and any(is_boundary(u) for u in window):
                    drafts, calls, note = await _model_drafts(
                        target, window, view, prior, home, tid, beat
                    )
                    result.model_calls += calls
                    if note:
                        result.note = note
                split_by: Literal["model", "offline"] = "model" if drafts is not None else "offline"
                if drafts is None:
                    drafts = group_offline(window, prior)
                atoms = finish(drafts, view, number, split_by)
                for atom in atoms:
                    produced[atom.atom_id] = atom
                if atoms:
                    number = max(number, *(atom_number(a.atom_id) + 1 for a in atoms))
                    prior = max(atoms, key=lambda a: atom_number(a.atom_id))
            existing = trow.atoms if trow else 0
            result.new_atoms += sum(
                1 for a in produced.values() if atom_number(a.atom_id) > existing
            )
            result.updated_atoms += sum(
                1 for a in produced.values() if atom_number(a.atom_id) <= existing
            )
            lanes_out.append(
                {"traj_id": tid, "atoms": [a.model_dump(mode="json") for a in produced.values()]}
            )
        write_json(
            stage_dir / "atoms.json", {"lanes": lanes_out, "split_by": result.split_by}, sync=False
        )
        return result
    finally:
        store.close()


def _load(home: Path, tid: str, aid: str) -> AtomTask | None:
    path = atom_path(home, tid, aid)
    return AtomTask.model_validate(read_json(path)) if path.exists() else None


def _recent(home: Path, tid: str, count: int) -> list[dict[str, Any]]:
    paths = sorted(tasks_dir(home, tid).glob("atom_*.json"))[-count:]
    return [
        {
            k: v
            for k, v in read_json(p).items()
            if k in ("atom_id", "intent", "summary", "offset_start", "offset_end", "ux_score")
        }
        for p in paths
    ]


def window_prompt(
    window: list[Unit], view: DeltaView, prior: AtomTask | None, marks: dict[int, str]
) -> str:
    parts = []
    for i, u in enumerate(window):
        if i in marks:
            parts.append(f"[[{marks[i]}]]\n")
        parts.append(view.slice(u.s, u.e))
    text = "".join(parts)
    if len(text) > INPUT_CAP:
        text = (
            text[:INPUT_CAP] + "\n[… window cut at 30,000 characters; use read_delta for the rest]"
        )
    previous = (
        f"atom {prior.atom_id}: intent: {prior.intent}\nsummary: {prior.summary}\nux_score: {prior.ux_score}"
        if prior
        else "(none: this is the start of the trajectory)"
    )
    return (
        f"Trajectory {view.traj_id}; this window covers view characters {window[0].s}–{window[-1].e} "
        f"(the delta covers {view.md_start}–{view.md_start + len(view.md)}).\n\n"
        f"The trajectory's previous atom:\n{previous}\n\nBoundaries you may start atoms at: "
        f"{', '.join(marks.values())}\n\n--- transcript window ---\n{text}\n--- end of window ---"
    )


async def _model_drafts(
    target: llm.LLMTarget,
    window: list[Unit],
    view: DeltaView,
    prior: AtomTask | None,
    home: Path,
    tid: str,
    beat: Callable[[str], None],
) -> tuple[list[Draft] | None, int, str]:
    """Drafts chosen by the model, or None (the offline splitter decides) when it gave none."""
    marks = {i: f"B{n + 1}" for n, i in enumerate(boundary_indexes(window))}
    chat = _WindowChat(view, {m: i for i, m in marks.items()}, home, tid)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": window_prompt(window, view, prior, marks)},
    ]
    async with llm.client_for(target) as client:
        end = await tool_loop(
            client,
            target,
            messages,
            chat.tools(),
            max_turns=MAX_MODEL_TURNS,
            beat=lambda turn: beat(f"TaskAgent turn {turn}"),
            nudge=chat.remind_once,
            temperature=0,
        )
    if not chat.submitted:
        return None, end.turns, "the model submitted no atoms; the offline splitter decided"
    drafts = group_at(window, [i for i, _ in chat.submitted], prior)
    # One fresh draft per submission (the leading units join the first).
    fresh = [d for d in drafts if d.extends is None]
    for draft, (_, atom) in zip(fresh, chat.submitted, strict=True):
        draft.intent, draft.summary, draft.tags = atom.intent, atom.summary, atom.tags
        draft.ux_score, draft.self_reported = atom.ux_score, atom.used_skills or None
    if chat.previous is not None:
        for d in drafts:
            if d.extends is not None:
                d.summary, d.ux_score = chat.previous.summary, chat.previous.ux_score
    return drafts, end.turns, ""


class _WindowChat:
    """The tools of one window's conversation; each submission is checked on arrival."""

    def __init__(self, view: DeltaView, by_mark: dict[str, int], home: Path, tid: str) -> None:
        self.view, self.by_mark, self.home, self.tid = view, by_mark, home, tid
        self.submitted: list[tuple[int, SubmitAtom]] = []  # (unit index, normalised fields)
        self.previous: UpdatePrevious | None = None
        self.reminded = False

    def tools(self) -> list[ModelTool[Any]]:
        return [
            ModelTool.of("submit_atom", SubmitAtom, self.submit_atom),
            ModelTool.of("update_previous", UpdatePrevious, self.update_previous),
            ModelTool.of("read_delta", ReadDelta, self.read_delta),
            ModelTool.of("recent_atoms", RecentAtoms, self.recent_atoms),
        ]

    def remind_once(self) -> str | None:
        if self.submitted or self.reminded:
            return None
        self.reminded = True
        return "You submitted no atom. Submit at least the atoms that start at the boundaries, with submit_atom."

    def submit_atom(self, a: SubmitAtom) -> str:
        mark = a.boundary.strip().strip("[]")
        if mark not in self.by_mark:
            return f"ERROR: {mark!r} is not a boundary of this window; boundaries: {', '.join(self.by_mark)}"
        index = self.by_mark[mark]
        if self.submitted and index <= self.submitted[-1][0]:
            return f"ERROR: atoms must be submitted in order; {mark} is not after the last one you submitted"
        intent = _text(a.intent, 160)
        if not intent:
            return "ERROR: intent must say the person's goal in one line"
        tags = [re.sub(r"[^a-z0-9_]+", "_", t.lower()).strip("_") for t in a.tags if t.strip()]
        atom = SubmitAtom(
            boundary=mark,
            intent=intent,
            summary=_text(a.summary, 600) or intent,
            tags=tags[:6],
            ux_score=a.ux_score,
            used_skills=[s for s in a.used_skills or [] if s.strip()][:10],
        )
        self.submitted.append((index, atom))
        return f"ok: atom {len(self.submitted)} starts at {mark}"

    def update_previous(self, a: UpdatePrevious) -> str:
        self.previous = UpdatePrevious(
            summary=_text(a.summary, 600) or "(no summary)", ux_score=a.ux_score
        )
        return "ok: the previous atom will be updated"

    def read_delta(self, a: ReadDelta) -> str:
        view = self.view
        length = max(1, min(4000 if a.length is None else a.length, 8000))
        return (
            view.slice(a.start, a.start + length)
            or f"(nothing there: the delta covers {view.md_start}–{view.md_start + len(view.md)})"
        )

    def recent_atoms(self, a: RecentAtoms) -> str:
        count = max(1, min(RECENT_ATOMS if a.count is None else a.count, 10))
        return json.dumps(_recent(self.home, self.tid, count), ensure_ascii=False)


def _text(value: Any, limit: int) -> str:
    flat = " ".join(str(value or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
