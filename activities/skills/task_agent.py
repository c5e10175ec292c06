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
from typing import Any, Literal

from activities import llm
from activities.fsio import read_json, write_json
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

_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "submit_atom",
            "description": "Start an atom at a marked boundary and describe it. Checked on arrival.",
            "parameters": {
                "type": "object",
                "required": ["boundary", "intent", "summary", "tags", "ux_score"],
                "properties": {
                    "boundary": {"type": "string", "description": "a boundary marker id, e.g. B2"},
                    "intent": {"type": "string"},
                    "summary": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "ux_score": {"type": "integer", "minimum": 1, "maximum": 10},
                    "used_skills": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "update_previous",
            "description": "Revise the summary and ux_score of the trajectory's previous atom, which this window extends.",
            "parameters": {
                "type": "object",
                "required": ["summary", "ux_score"],
                "properties": {
                    "summary": {"type": "string"},
                    "ux_score": {"type": "integer", "minimum": 1, "maximum": 10},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_delta",
            "description": "Read part of this delta's transcript view by character offset (to look beyond the window).",
            "parameters": {
                "type": "object",
                "required": ["start"],
                "properties": {
                    "start": {"type": "integer"},
                    "length": {"type": "integer", "maximum": 8000},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "recent_atoms",
            "description": "The trajectory's most recent atoms (intent, summary, range).",
            "parameters": {
                "type": "object",
                "properties": {"count": {"type": "integer", "maximum": 10}},
            },
        },
    },
]


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
    boundary_idx = boundary_indexes(window)
    marks = {i: f"B{n + 1}" for n, i in enumerate(boundary_idx)}
    by_mark = {m: i for i, m in marks.items()}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": window_prompt(window, view, prior, marks)},
    ]
    submitted: list[tuple[int, dict[str, Any]]] = []
    previous_update: dict[str, Any] | None = None
    reminded = False
    calls = 0
    client = llm.client_for(target)
    try:
        for _ in range(MAX_MODEL_TURNS):
            response = await llm.chat(client, target, messages, _TOOLS, 0)
            calls += 1
            beat(f"TaskAgent turn {calls}")
            message = response.choices[0].message
            messages.append(llm.as_message(message))
            if not message.tool_calls:
                if submitted or reminded:
                    break
                reminded = True
                messages.append(
                    {
                        "role": "user",
                        "content": "You submitted no atom. Submit at least the atoms that start "
                        "at the boundaries, with submit_atom.",
                    }
                )
                continue
            for call in message.tool_calls:
                answer = _tool(
                    call.function.name,
                    call.function.arguments,
                    window,
                    view,
                    by_mark,
                    submitted,
                    home,
                    tid,
                )
                if isinstance(answer, dict):  # update_previous accepted
                    previous_update, answer = answer, "ok: the previous atom will be updated"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": answer})
    finally:
        await client.close()
    if not submitted:
        return None, calls, "the model submitted no atoms; the offline splitter decided"
    drafts = group_at(window, [i for i, _ in submitted], prior)
    fresh = [
        d for d in drafts if d.extends is None
    ]  # one per submission (leading units join the first)
    for draft, (_, fields) in zip(fresh, submitted, strict=True):
        draft.intent, draft.summary, draft.tags = (
            fields["intent"],
            fields["summary"],
            fields["tags"],
        )
        draft.ux_score, draft.self_reported = fields["ux_score"], fields["used_skills"] or None
    if previous_update is not None:
        for d in drafts:
            if d.extends is not None:
                d.summary, d.ux_score = previous_update["summary"], previous_update["ux_score"]
    return drafts, calls, ""


def _tool(
    name: str,
    raw: str | None,
    window: list[Unit],
    view: DeltaView,
    by_mark: dict[str, int],
    submitted: list[tuple[int, dict[str, Any]]],
    home: Path,
    tid: str,
) -> str | dict[str, Any]:
    try:
        args = json.loads(raw or "{}")
        if not isinstance(args, dict):
            raise ValueError("not an object")
    except ValueError:
        return f"ERROR: the arguments of {name} must be a JSON object"
    if name == "read_delta":
        start = _int(args.get("start"), view.md_start)
        length = max(1, min(_int(args.get("length"), 4000), 8000))
        return (
            view.slice(start, start + length)
            or f"(nothing there: the delta covers {view.md_start}–{view.md_start + len(view.md)})"
        )
    if name == "recent_atoms":
        return json.dumps(
            _recent(home, tid, max(1, min(_int(args.get("count"), RECENT_ATOMS), 10))),
            ensure_ascii=False,
        )
    if name == "update_previous":
        score = args.get("ux_score")
        if not isinstance(score, int) or not 1 <= score <= 10:
            return "ERROR: ux_score must be a whole number from 1 to 10"
        return {"summary": _text(args.get("summary"), 600) or "(no summary)", "ux_score": score}
    if name != "submit_atom":
        return f"ERROR: unknown tool {name!r}"
    mark = str(args.get("boundary", "")).strip().strip("[]")
    if mark not in by_mark:
        return f"ERROR: {mark!r} is not a boundary of this window; boundaries: {', '.join(by_mark)}"
    index = by_mark[mark]
    if submitted and index <= submitted[-1][0]:
        return f"ERROR: atoms must be submitted in order; {mark} is not after the last one you submitted"
    score = args.get("ux_score")
    if not isinstance(score, int) or isinstance(score, bool) or not 1 <= score <= 10:
        return "ERROR: ux_score must be a whole number from 1 to 10 (see the rubric)"
    intent = _text(args.get("intent"), 160)
    if not intent:
        return "ERROR: intent must say the person's goal in one line"
    tags = [
        re.sub(r"[^a-z0-9_]+", "_", str(t).lower()).strip("_")
        for t in args.get("tags") or []
        if str(t).strip()
    ][:6]
    skills = [str(s) for s in args.get("used_skills") or [] if isinstance(s, str) and s.strip()][
        :10
    ]
    submitted.append(
        (
            index,
            {
                "intent": intent,
                "summary": _text(args.get("summary"), 600) or intent,
                "tags": tags,
                "ux_score": score,
                "used_skills": skills,
            },
        )
    )
    return f"ok: atom {len(submitted)} starts at {mark}"


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _text(value: Any, limit: int) -> str:
    flat = " ".join(str(value or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
