"""Finishing atoms: judging how an atom went, and turning drafts into AtomTask files.

The UX heuristic and its behavioural signals (corrections, re-asks, interruptions, reverted
edits …), skill measurement, the offline intent, summary and tags, and :func:`finish`, the
bookkeeping that keeps numbering, ranges and the linked list right across deltas and windows.
The drafts come from :mod:`xsky.skills.atoms` (the offline splitter, or a model's boundaries
in activities/skills/task_agent.py, which replaces only the boundary choice and the wording).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from xsky.skills.atoms import (
    CORRECTION,
    REVERT_COMMAND,
    VERBS,
    AtomTask,
    Draft,
    Provenance,
    RawAnchor,
    atom_id,
    containment,
    keywords,
)
from xsky.skills.trajectory import Unit
from xsky.skills.transcripts import SKILL_NAME

RAW_SEGMENT_CAP = 30_000
KEEP_DELTAS = 20
CONTEXT_PREFIX_CHARS = 600
INTENT_CHARS = 160
SUMMARY_CHARS = 600


# -- judging an atom -----------------------------------------------------------------------------

UX_RUBRIC = """ux_score rubric (1-10), judged on this atom only, from what the person experienced:
10 right first time, accepted without clarification; 9 one small clarification; 8 correct with one
detour (an extra read, one command fixed); 7 correct after 2-3 clarifications or corrections;
6 barely acceptable ("fine, I guess"); 5 core done but clear gaps the person had to point out;
4 near-correct only after repeated errors ("no", "wrong" twice or more); 3 done but the person is
visibly disappointed or takes over ("forget it, I'll do it"); 2 not done, blockers, or abandoned;
1 failed with damage (wrong files deleted, broken code, unwanted push). Never score by amount of work."""


def signals(units: list[Unit], previous_user: list[str] | None = None) -> Counter[str]:
    """Behavioural signals of how the interaction went, counted from the units."""
    found: Counter[str] = Counter()
    last_prompt: list[str] | None = previous_user
    replied = True
    for u in units:
        if u.kind == "user":
            text = u.head.strip()
            if CORRECTION.match(text):
                found["corrections"] += 1
            words = keywords(text)
            if last_prompt is not None and containment(words, last_prompt) >= 0.75:
                found["re_asks"] += 1
            if not replied:
                found["unanswered_prompts"] += 1
            last_prompt, replied = words, False
        elif u.kind in ("assistant", "tool_call"):
            replied = True
            if u.kind == "tool_call" and REVERT_COMMAND.search(u.head):
                found["reverted_edits"] += 1
        elif u.kind == "tool_result" and u.error:
            found["tool_errors"] += 1
        elif u.marker in ("interrupted", "aborted"):
            found["interrupted"] += 1
            replied = True  # counted as an interruption, not as an abandoned prompt
        elif u.marker == "task_complete":
            found["completed"] += 1
    return found


def heuristic_ux(sig: dict[str, int]) -> int:
    """The offline UX score from behavioural signals (no model), on UX_RUBRIC's scale.

    A failing command on the way is normal work (reproducing a bug), so only repeated tool
    errors count; what a person had to do — correct, re-ask, interrupt, revert — counts most.
    """
    penalty = min(2 * sig.get("corrections", 0), 5)
    penalty += min(sig.get("re_asks", 0), 2)
    errors = sig.get("tool_errors", 0)
    penalty += 2 if errors >= 4 else 1 if errors >= 2 else 0
    penalty += 2 * min(sig.get("interrupted", 0), 2)
    penalty += 2 * min(sig.get("reverted_edits", 0), 1)
    penalty += 2 * min(sig.get("unanswered_prompts", 0), 1)
    if penalty == 0:
        return 10 if sig.get("completed") else 9
    return max(1, 9 - penalty)


def measured_skills(units: list[Unit]) -> list[str]:
    return list(dict.fromkeys(u.skill for u in units if u.skill and SKILL_NAME.match(u.skill)))


def first_sentence(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    m = re.match(r"(.+?[.!?。！？])(\s|$)", flat)
    sentence = m.group(1) if m and len(m.group(1)) >= 12 else flat
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def sentences(text: str, limit: int) -> str:
    """As many whole sentences as fit in ``limit`` characters (at least the start of the first)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = max((m.end() for m in re.finditer(r"[.!?。！？](\s|$)", flat[: limit + 1])), default=0)
    return flat[:cut].strip() if cut >= limit // 3 else flat[: limit - 1].rstrip() + "…"


def offline_intent(units: list[Unit], fallback: str | None) -> str:
    prompt = next((u for u in units if u.kind == "user"), None)
    if prompt is not None:
        return sentences(prompt.head, INTENT_CHARS)
    if fallback:
        return (
            fallback
            if fallback.startswith("(continued)")
            else f"(continued) {fallback}"[:INTENT_CHARS]
        )
    first = next((u for u in units if u.kind in ("assistant", "compaction")), None)
    return (
        f"(no prompt) {first_sentence(first.head, INTENT_CHARS - 12)}"
        if first
        else "(agent activity without a prompt)"
    )


def offline_summary(units: list[Unit]) -> str:
    tools = Counter(u.tool or "tool" for u in units if u.kind == "tool_call")
    errors = sum(1 for u in units if u.kind == "tool_result" and u.error)
    prompts = [u for u in units if u.kind == "user"]
    parts = []
    if prompts:
        asked = first_sentence(prompts[0].head, 160)
        parts.append(
            f"Asked: {asked}"
            + (f" (+{len(prompts) - 1} follow-up prompts)" if len(prompts) > 1 else "")
        )
    if tools:
        shown = ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in tools.most_common(6))
        parts.append(
            f"Agent used {sum(tools.values())} tool calls ({shown})"
            + (f", {errors} failed" if errors else "")
        )
    skills = measured_skills(units)
    if skills:
        parts.append(f"Skills used: {', '.join(skills)}")
    answer = next((u for u in reversed(units) if u.kind == "assistant"), None)
    if answer is not None:
        parts.append(f"Ended with: {first_sentence(answer.head, 200)}")
    if any(u.marker in ("interrupted", "aborted") for u in units):
        parts.append("The person interrupted the agent")
    return (
        ". ".join(p.rstrip(".") for p in parts)[:SUMMARY_CHARS] + "." if parts else "(no activity)"
    )


def offline_tags(units: list[Unit]) -> list[str]:
    tags: list[str] = []
    words = Counter(
        w
        for u in units
        if u.kind == "user"
        for w in keywords(u.head)
        if len(w) >= 4 and w not in VERBS
    )
    tags += [w.replace("-", "_") for w, _ in words.most_common(3)]
    tools = Counter((u.tool or "").lower() for u in units if u.kind == "tool_call" and u.tool)
    for tool, _ in tools.most_common(2):
        tags.append(re.sub(r"[^a-z0-9_]+", "_", tool).strip("_"))
    tags += measured_skills(units)
    return [t for t in dict.fromkeys(tags) if t][:6]


# -- drafts → atom files -----------------------------------------------------------------------


@dataclass
class DeltaView:
    """What the splitter knows about the delta being cut."""

    traj_id: str
    path: str  # the raw file
    md: str  # this delta's part of the view
    md_start: int  # where it starts in the whole view
    byte_start: int
    byte_end: int
    previous_md: str = ""  # the view's text just before md_start (for context_prefix)

    def slice(self, s: int, e: int) -> str:
        return self.md[max(0, s - self.md_start) : max(0, e - self.md_start)]


def _anchor(path: str, units: list[Unit]) -> RawAnchor:
    uuids = [u.uuid for u in units if u.uuid]
    calls = list(dict.fromkeys(u.call_id for u in units if u.call_id))[:50]
    return RawAnchor(
        path=path,
        byte_start=min(u.offset for u in units),
        byte_end=max(u.end for u in units),
        uuid_first=uuids[0] if uuids else None,
        uuid_last=uuids[-1] if uuids else None,
        call_ids=calls,
    )


def finish(
    drafts: list[Draft], view: DeltaView, next_number: int, split_by: Literal["model", "offline"]
) -> list[AtomTask]:
    """Atom files for the drafts: numbered on from ``next_number``, linked, tiling the delta.

    A draft that extends the trajectory's last atom returns that atom updated (range,
    summary, signals, skills); new atoms follow it in the linked list.
    """
    atoms: list[AtomTask] = []
    for i, d in enumerate(drafts):
        nxt = drafts[i + 1] if i + 1 < len(drafts) else None
        new_units = d.units
        # Atoms tile the view: each ends where the next begins; the last where its units end
        # (the window's end, which the next window's atoms continue from).
        if nxt is not None and nxt.units:
            end = nxt.units[0].s
        elif new_units:
            end = new_units[-1].e
        else:
            end = d.extends.offset_end if d.extends is not None else view.md_start
        if d.extends is not None:
            atom = d.extends.model_copy(deep=True)
            if not new_units:
                atoms.append(atom)
                continue
            prev_signals = Counter(atom.provenance.ux_signals)
            sig = prev_signals + signals(new_units, atom.provenance.keywords or None)
            if atom.intent.startswith("(no prompt)") or atom.intent.startswith("(agent activity"):
                atom.intent = d.intent or offline_intent(new_units, None)
            seen_until = atom.offset_end  # what the atom already holds (an earlier delta or window)
            atom.offset_end = end
            added = d.summary or offline_summary(new_units)
            atom.summary = (
                d.summary
                if (d.summary and split_by == "model")
                else _join_summary(atom.summary, added)
            )
            atom.tags = list(dict.fromkeys(atom.tags + (d.tags or offline_tags(new_units))))[:8]
        else:
            start = new_units[0].s
            atom = AtomTask(
                atom_id=atom_id(view.traj_id, next_number),
                traj_id=view.traj_id,
                offset_start=start,
                offset_end=end,
                intent=d.intent or offline_intent(new_units, atoms[-1].intent if atoms else None),
                summary=d.summary or offline_summary(new_units),
                tags=d.tags or offline_tags(new_units),
                ux_score=5,
                context_prefix=_context_prefix(view, start),
                provenance=Provenance(split_by=split_by),
            )
            next_number += 1
            sig = signals(new_units)
        found = measured_skills(new_units)
        if found or atom.provenance.used_skills_by == "measured":
            kept = atom.used_skills if atom.provenance.used_skills_by == "measured" else []
            atom.used_skills = list(dict.fromkeys(kept + found))
            atom.provenance.used_skills_by = "measured"
        elif d.self_reported:
            atom.used_skills = list(dict.fromkeys(atom.used_skills + d.self_reported))
            atom.provenance.used_skills_by = "self-reported"
        atom.provenance.ux_signals = dict(sig)
        if d.ux_score is not None:
            atom.ux_score, atom.provenance.ux_score_by = max(1, min(10, int(d.ux_score))), "model"
        elif atom.provenance.ux_score_by == "heuristic" or d.extends is None:
            atom.ux_score, atom.provenance.ux_score_by = heuristic_ux(sig), "heuristic"
        atom.provenance.keywords = (d.keywords or atom.provenance.keywords)[:40]
        atom.provenance.ended = (
            "interrupted" if d.interrupted else "completed" if d.completed else "open"
        )
        label = f"bytes {view.byte_start}-{view.byte_end}"
        if label not in atom.provenance.deltas[-1:]:  # one entry per delta, not per window
            atom.provenance.deltas = (atom.provenance.deltas + [label])[-KEEP_DELTAS:]
        _extend_anchor(atom, view.path, new_units)
        if d.extends is not None:
            segment = atom.raw_segment + view.slice(max(seen_until, view.md_start), end)
        else:
            segment = view.slice(max(atom.offset_start, view.md_start), end)
        atom.raw_segment = (
            segment
            if len(segment) <= RAW_SEGMENT_CAP
            else segment[:RAW_SEGMENT_CAP] + "\n[… cut; see provenance.raw]"
        )
        atoms.append(atom)
    for a, b in zip(atoms, atoms[1:], strict=False):
        a.post_atom_id, b.pre_atom_id = b.atom_id, a.atom_id
    return atoms


def _extend_anchor(atom: AtomTask, path: str, units: list[Unit]) -> None:
    if not units:
        return
    fresh = _anchor(path, units)
    raws = atom.provenance.raw
    if raws and raws[-1].path == path:
        last = raws[-1]
        last.byte_start, last.byte_end = (
            min(last.byte_start, fresh.byte_start),
            max(last.byte_end, fresh.byte_end),
        )
        last.uuid_first = last.uuid_first or fresh.uuid_first
        last.uuid_last = fresh.uuid_last or last.uuid_last
        last.call_ids = list(dict.fromkeys(last.call_ids + fresh.call_ids))[:50]
    else:
        raws.append(fresh)


def _join_summary(before: str, added: str) -> str:
    text = f"{before.rstrip('.')}. Then: {added}"
    return text if len(text) <= SUMMARY_CHARS else "…" + text[-(SUMMARY_CHARS - 1) :]


def _context_prefix(view: DeltaView, start: int) -> str:
    """The view's text just before the atom (what the agent had just done), cut to a few lines."""
    before = view.previous_md + view.md[: max(0, start - view.md_start)]
    return before[-CONTEXT_PREFIX_CHARS:]
