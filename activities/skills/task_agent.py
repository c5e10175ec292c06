"""TaskAgent: cut a delta of a trajectory into AtomTasks (one per task), with a model or offline.

With a model configured (``XSKY_MODEL`` + an OpenAI-compatible server), each window of at
most 30,000 characters — the reading unit, not the unit of judgement — is shown to the
model with the map of *every* user turn of the trajectory so far (position, first
sentence, who wrote it, how the offline rules read it) and the window's candidate
boundaries marked (``[[B1]]``, ``[[B2]]`` … before each of the person's prompts, a queued one
too); a window with no prompt is shown as well, with no boundary, so the model can revise
the atom it continues; the map holds the turns of the whole delta, later windows' too; the model
reads any part of the view with ``read_view`` and the latest atoms with ``recent_atoms``,
answers with ``submit_atom`` calls, each checked on arrival (a known boundary, after the
previous one, a score of 1–10), and revises the trajectory's previous atom with
``update_previous`` — a revision that lands in that atom's file even when the window
only continues it, or starts at once with a new atom. Without a model the offline splitter
of :mod:`xsky.skills.drafts` decides. Either way ``used_skills`` is measured from the
transcript (the model's claim is kept only when nothing was measured, marked
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
from activities.skills.store import SkillStore, TrajRow
from xsky.skills.atom_finish import UX_RUBRIC, DeltaView, finish
from xsky.skills.atoms import INPUT_CAP, AtomTask, atom_number, windows
from xsky.skills.drafts import (
    Draft,
    assume_model_prompts,
    group_at,
    group_offline,
    is_person_prompt,
)
from xsky.skills.layout import atom_path, index_path, md_path, staging_dir, tasks_dir
from xsky.skills.runs import DeltaRef, SplitResult
from xsky.skills.sessions import is_subagent_path, session_of
from xsky.skills.trajectory import Unit
from xsky.skills.turns import Turn, turn_map

MAX_MODEL_TURNS = 12
RECENT_ATOMS = 3

SYSTEM_PROMPT = f"""You cut a coding agent's transcript into AtomTasks: each atom is one coherent episode of the
person's intent (one goal, with its clarifications and corrections) that could be analysed on its own
and later distilled into a reusable skill.

Rules:
- An atom may only start at a marked boundary [[Bn]] (one of the person's prompts).
- An atom is a task, not a turn. Cut only where the person names a new goal. Do NOT cut for
  clarifications, critiques and refinements of an iterative dialogue ("it's good, but…",
  "don't produce code, design the solution first", "not acceptable, revise", "no, use
  Decimal", "also …", "what else?"), retries, "continue", menu answers, or because the agent
  switched tools: those belong to the task they refine, and critiques lower its ux_score.
- The map lists every user turn of the trajectory with its class (who wrote it / how the
  offline rules read it); read_view reads the view around any position.
- A correction is known by its relation to the request before it, not by its first word: a
  statement that negates or judges what was just done ("it's a bad idea, since…", "that's not
  a jsonl file"), a pointer at the last output, a critique. A new goal typed right after the
  person interrupted the agent (class after_interrupt/new) starts a task.
- A compaction summary is written by a model, not the person: it is never an intent; nor are
  task notifications, warm-ups, command output or menu letters (they are not in the map).
- A window may have no boundary (no prompt of the person's): it continues the previous atom;
  revise that atom with update_previous when the window changes how it went.
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


class ReadView(BaseModel):
    """Read the trajectory's view around a character position (any position of the map)."""

    position: int
    # The limits are advertised, and clamped to rather than refused.
    before: Annotated[int, WithJsonSchema({"type": "integer", "maximum": 4000})] | None = None
    after: Annotated[int, WithJsonSchema({"type": "integer", "maximum": 8000})] | None = None


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
            units = [Unit.from_wire(u) for u in lane["units"]]
            if is_subagent_path(delta.kind, stage["path"]):
                assume_model_prompts(units)
            # Machine units an earlier delta left without an atom open this trajectory's first.
            lead = _unplaced(home, tid, trow) if prior is None else []
            view = _view(home, delta, stage["path"], lane, trow, prior, lead)
            context = _Context(home, tid, trow, view) if target is not None else None
            if context is not None:  # the map holds every turn read so far, later windows' too
                context.delta_turns = _turns_of(units)
            number = (trow.atoms if trow else 0) + 1
            produced: dict[str, AtomTask] = {}
            for window in windows(units):
                result.windows += 1
                beat(f"{delta.label()}: window {result.windows}")
                window = lead + window
                drafts: list[Draft] | None = None
                # Every window is read with the map, one without a prompt too (it may change
                # how the previous atom went); without a previous atom it has nothing to revise.
                if context is not None and (
                    prior is not None or any(is_person_prompt(u) for u in window)
                ):
                    assert target is not None
                    drafts, calls, note = await _model_drafts(
                        target, window, view, prior, context, beat
                    )
                    result.model_calls += calls
                    if note:
                        result.note = note
                split_by: Literal["model", "offline"] = "model" if drafts is not None else "offline"
                if drafts is None:
                    drafts = group_offline(window, prior)
                if prior is None and not any(d.has_content() for d in drafts):
                    lead = window  # only machine units so far: they wait for the first task
                    continue
                lead = []
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


CONTEXT_CHARS = 2000  # of view before the delta: an atom's context_prefix and the units it takes


def _view(
    home: Path,
    delta: DeltaRef,
    path: str,
    lane: dict[str, Any],
    trow: TrajRow | None,
    prior: AtomTask | None,
    lead: list[Unit],
) -> DeltaView:
    """The delta as the splitter sees it, with enough of the view before it that an atom
    starting at an earlier unit (a pending compaction, an unplaced first unit) has its text."""
    md_start = lane["md_start"]
    earliest = md_start
    if prior is not None and prior.provenance.split is not None and prior.provenance.split.pending:
        earliest = min(
            earliest, *(int(w.get("s", md_start)) for w in prior.provenance.split.pending)
        )
    if lead:
        earliest = min(earliest, lead[0].s)
    chars = CONTEXT_CHARS + max(0, md_start - earliest)
    return DeltaView(
        lane["traj_id"],
        path,
        lane["md"],
        md_start,
        delta.start,
        delta.end,
        previous_md=md_tail(home, lane["traj_id"], trow.md_bytes, chars) if trow else "",
        # a sub-agent's file may name its parent's session (Codex); else its path tells
        session=lane.get("session") or session_of(delta.kind, path),
    )


def _index_units(home: Path, tid: str, trow: TrajRow) -> list[Unit]:
    """The committed units of a trajectory, as its index records them."""
    path = index_path(home, tid)
    if not path.exists():
        return []
    out: list[Unit] = []
    with open(path, "rb") as f:
        data = f.read(trow.index_bytes).decode("utf-8", errors="replace")  # committed lines only
        for line in data.splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and "kind" in row and "s" in row:
                out.append(Unit.from_wire(row))
    return out


def _unplaced(home: Path, tid: str, trow: TrajRow | None) -> list[Unit]:
    """Units committed before the trajectory had an atom (machine text only, by construction)."""
    if trow is None or trow.atoms or not trow.md_chars:
        return []
    units = _index_units(home, tid, trow)
    for u in units:
        if u.kind == "user" and not u.head:
            u.kind = (
                "meta"  # an older index without the text: it made no atom, so it was machine text
            )
    return units


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


class _Context:
    """The whole trajectory as the model may read it: the committed view and this delta's."""

    def __init__(self, home: Path, tid: str, trow: TrajRow | None, view: DeltaView) -> None:
        self.home, self.tid, self.view = home, tid, view
        path = md_path(home, tid)
        committed = ""
        if trow is not None and path.exists():
            with open(path, "rb") as f:
                committed = f.read(trow.md_bytes).decode("utf-8", errors="replace")
        self.committed = committed[: view.md_start]
        self.delta_turns: list[Turn] = []  # the user turns of the delta being split
        self.turns = [
            Turn(u.s, u.head or _block_text(self.text(u.s, u.e)), u.origin)
            for u in (_index_units(home, tid, trow) if trow is not None else [])
            if u.kind == "user"
        ]

    def text(self, s: int, e: int) -> str:
        s, e = max(0, s), max(0, e)
        start = self.view.md_start
        before = self.committed[s : min(e, start)] if s < start else ""
        return before + self.view.md[max(0, s - start) : max(0, e - start)]

    def length(self) -> int:
        return self.view.md_start + len(self.view.md)


def _turns_of(units: list[Unit]) -> list[Turn]:
    return [Turn(u.s, u.head, u.origin) for u in units if u.kind == "user"]


def _block_text(md: str) -> str:
    """The text of one rendered block (its heading line dropped)."""
    return md.split("\n", 1)[1] if md.startswith("#") and "\n" in md else md


def window_prompt(
    window: list[Unit],
    view: DeltaView,
    prior: AtomTask | None,
    marks: dict[int, str],
    context: _Context,
) -> str:
    parts = []
    for i, u in enumerate(window):
        if i in marks:
            parts.append(f"[[{marks[i]}]]\n")
        parts.append(view.slice(u.s, u.e))
    text = "".join(parts)
    if len(text) > INPUT_CAP:
        text = (
            text[:INPUT_CAP] + "\n[… window cut at 30,000 characters; use read_view for the rest]"
        )
    previous = (
        f"atom {prior.atom_id}: intent: {prior.intent}\nsummary: {prior.summary}\nux_score: {prior.ux_score}"
        if prior
        else "(none: this is the start of the trajectory)"
    )
    in_window = {u.s: marks[i] for i, u in enumerate(window) if i in marks}
    fresh = context.delta_turns + [u for u in _turns_of(window) if u.s >= view.md_start]
    turns = context.turns + [
        Turn(t.s, t.head, t.origin, in_window.get(t.s)) for t in fresh if t.s >= view.md_start
    ]
    turns = sorted({t.s: t for t in turns}.values(), key=lambda t: t.s)
    bounds = (
        ", ".join(marks.values())
        if marks
        else "(none: no prompt of the person's in this window; it continues the previous atom — "
        "revise that atom with update_previous if what happens here changes how it went)"
    )
    return (
        f"Trajectory {view.traj_id}; this window covers view characters {window[0].s}–{window[-1].e} "
        f"(the view so far covers 0–{context.length()}).\n\n"
        f"Map of the user turns of the whole trajectory (@position [who/offline reading] first "
        f"sentence; [[Bn]]: a boundary of this window):\n{turn_map(turns, window[0].s)}\n\n"
        f"The trajectory's previous atom:\n{previous}\n\nBoundaries you may start atoms at: "
        f"{bounds}\n\n--- transcript window ---\n{text}\n--- end of window ---"
    )


async def _model_drafts(
    target: llm.LLMTarget,
    window: list[Unit],
    view: DeltaView,
    prior: AtomTask | None,
    context: _Context,
    beat: Callable[[str], None],
) -> tuple[list[Draft] | None, int, str]:
    """Drafts chosen by the model, or None (the offline splitter decides) when it gave none."""
    prompts = [i for i, u in enumerate(window) if is_person_prompt(u)]
    marks = {i: f"B{n + 1}" for n, i in enumerate(prompts)}
    chat = _WindowChat(context, {m: i for i, m in marks.items()}, prior)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": window_prompt(window, view, prior, marks, context)},
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
    if not chat.submitted and (chat.previous is None or prior is None):
        return None, end.turns, "the model submitted no atoms; the offline splitter decided"
    # No submission but a revision: the whole window continues the previous atom.
    drafts = group_at(window, [i for i, _ in chat.submitted], prior)
    # One fresh draft per submission (the leading units join the first).
    fresh = [d for d in drafts if d.extends is None]
    for draft, (_, atom) in zip(fresh, chat.submitted, strict=True):
        draft.intent, draft.summary, draft.tags = atom.intent, atom.summary, atom.tags
        draft.ux_score, draft.self_reported = atom.ux_score, atom.used_skills or None
    if chat.previous is not None:
        for d in drafts:
            if d.extends is not None:  # applied by finish even when the window adds no unit
                d.summary, d.ux_score = chat.previous.summary, chat.previous.ux_score
    return drafts, end.turns, ""


class _WindowChat:
    """The tools of one window's conversation; each submission is checked on arrival."""

    def __init__(self, context: _Context, by_mark: dict[str, int], prior: AtomTask | None) -> None:
        self.context, self.by_mark, self.prior = context, by_mark, prior
        self.submitted: list[tuple[int, SubmitAtom]] = []  # (unit index, normalised fields)
        self.previous: UpdatePrevious | None = None
        self.reminded = False

    def tools(self) -> list[ModelTool[Any]]:
        return [
            ModelTool.of("submit_atom", SubmitAtom, self.submit_atom),
            ModelTool.of("update_previous", UpdatePrevious, self.update_previous),
            ModelTool.of("read_view", ReadView, self.read_view),
            ModelTool.of("recent_atoms", RecentAtoms, self.recent_atoms),
        ]

    def remind_once(self) -> str | None:
        if self.submitted or self.previous is not None or self.reminded:
            return None
        self.reminded = True
        return (
            "You submitted no atom. Submit the atoms that start at the boundaries with "
            "submit_atom, or, if the whole window continues the previous atom, say so with "
            "update_previous."
        )

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
        if self.prior is None:
            return "ERROR: this trajectory has no previous atom yet; submit atoms instead"
        self.previous = UpdatePrevious(
            summary=_text(a.summary, 600) or "(no summary)", ux_score=a.ux_score
        )
        return f"ok: {self.prior.atom_id} will carry this summary and ux_score"

    def read_view(self, a: ReadView) -> str:
        before = max(0, min(1000 if a.before is None else a.before, 4000))
        after = max(1, min(3000 if a.after is None else a.after, 8000))
        text = self.context.text(a.position - before, a.position + after)
        return text or f"(nothing there: the view covers 0–{self.context.length()})"

    def recent_atoms(self, a: RecentAtoms) -> str:
        count = max(1, min(RECENT_ATOMS if a.count is None else a.count, 10))
        return json.dumps(_recent(self.context.home, self.context.tid, count), ensure_ascii=False)


def _text(value: Any, limit: int) -> str:
    flat = " ".join(str(value or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
