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

from xsky.skills.atoms import EDIT_TOOLS, AtomTask, Provenance, RawAnchor, SplitState, atom_id
from xsky.skills.drafts import Draft, fold
from xsky.skills.trajectory import ANSWER_GAP, Unit
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


def signals(units: list[Unit]) -> Counter[str]:
    """Behavioural signals of how the interaction went, counted from the units (one task)."""
    return Counter(fold(units).state.signals)


def heuristic_ux(sig: dict[str, int]) -> int:
    """The offline UX score from behavioural signals (no model), on UX_RUBRIC's scale.

    A failing command on the way is normal work (reproducing a bug), so only repeated tool
    errors count; what a person had to do — correct, refine, re-ask, interrupt, revert —
    counts most, each critique more than the last few refinements.
    """
    penalty = min(2 * sig.get("corrections", 0), 5)
    penalty += min(sig.get("refinements", 0), 2)
    penalty += min(sig.get("re_asks", 0), 2)
    errors = sig.get("tool_errors", 0)
    penalty += 2 if errors >= 4 else 1 if errors >= 2 else 0
    penalty += 2 * min(sig.get("interrupted", 0), 2)
    penalty += 2 * min(sig.get("reverted_edits", 0), 1)
    penalty += 2 * min(sig.get("unanswered_prompts", 0), 1)
    penalty += 2 * min(sig.get("api_errors", 0), 1)  # a turn the model's API cut short
    # the person undid this work, the agent only asked what to do and no answer came, it
    # answered that it could not do it, or the model's API failed and the agent never answered
    # nor acted: the rubric's "not done … or abandoned"
    if (
        sig.get("rewound")
        or sig.get("unanswered_question")
        or sig.get("declined")
        or sig.get("never_answered")
    ):
        return min(2, max(1, 9 - penalty))
    if penalty == 0:
        return 10 if sig.get("completed") else 9
    return max(1, 9 - penalty)


# How an answer asks the person to choose, besides a question mark.
CHOOSE = re.compile(
    r"(?i)\b(?:let me know which|pick one|choose one|which (?:one|option|approach) do you)|"
    r"\((?:y/n|yes/no)\)|\[y/n\]"
)


# What may close a question's line after its mark: markdown emphasis or code, quotes, and a
# parenthetical example ("**What are you seeing?** (error messages, …)").
_AFTER_MARK = re.compile(r"(?:[*_`\"'’”)\]]|\s+\([^()]*\)\.?)+$")


def ends_asking(text: str) -> bool:
    """Whether an answer's last lines ask the person something (a numbered list alone does
    not: it is as often a report as a menu)."""
    last = [line.strip() for line in text.rstrip().splitlines() if line.strip()][-3:]
    return any(_AFTER_MARK.sub("", line).endswith(("?", "？")) for line in last) or bool(
        CHOOSE.search("\n".join(last))
    )


# A question that offers more after the work leaves nothing open.
OFFER = re.compile(
    r"(?i)\b(?:(?:want|like) me to|shall i|should i|i can also|happy to|"
    r"if you(?:'d)? (?:like|want|prefer)|let me know if)"
)
# A question after the work that checks it landed or offers more, whatever its first word.
CHECK = re.compile(
    r"(?i)\b(?:what else|anything else|how (?:does|do) (?:that|this|it|these) (?:look|sound|work)|"
    r"how(?:'s| is) (?:that|this)|how about\b|does (?:that|this|it) (?:help|make sense|answer|work)|"
    r"makes? sense\?|any (?:other |more |further )?questions|how can i help)"
)
# A prompt that asks nothing ("hello", "."): the agent's "How can I help?" leaves no task open.
GREETING = re.compile(
    r"(?i)^\W*(?:(?:hi|hello|hey|yo|hola|hallo|bonjour|good (?:morning|afternoon|evening))"
    r"(?: there)?)?\W*$"
)
# A question that asks what to do (a wh-word opens its sentence), whatever else it says.
WH_QUESTION = re.compile(
    r"(?im)(?:^|[.!?:]\s+|\n)\s*(?:\d{1,2}[.)]\s+|[-*]\s+)?[*_]{0,2}(?:so,?\s+)?"
    r"(?:what|which|how|where|who)\b[^.!?\n]*\?"
)


def _edited(st: SplitState) -> bool:
    """The task changed files (an atom saved before ``edited`` was kept: its editing tools)."""
    return st.edited or any(t in EDIT_TOOLS for t in st.tools)


def only_asked(st: SplitState) -> bool:
    """The task's turn ended asking the person what to do (which stack, which option), it
    changed nothing, and no reply came before the task ended: it was never done."""
    answer = st.last_answer
    if not (st.has_prompt and st.completed and answer) or _edited(st):
        return False
    if GREETING.match(st.intent_head or ""):
        return False
    end = answer.rsplit(ANSWER_GAP, 1)[-1]
    if not ends_asking(end):
        return False
    tail = end[-300:]
    if CHECK.search(tail):  # "What else can I help with?", "How does that look?"
        return False
    # "What do you want me to work on?" asks; "Do you want me to add tests?" offers
    return bool(WH_QUESTION.search(tail)) or not OFFER.search(tail)


# An answer whose first sentence says the agent cannot do what was asked: no access, no means
# ("I can't see your account's limits", "I'm unable to browse"). Not "I can't find a bug" or
# "I couldn't reproduce it" — findings of work done — nor a refusal after changes were made.
CANNOT = re.compile(
    r"(?i)^\W*(?:(?:unfortunately|sorry|i['’]?m sorry)\W+)?(?:i|we)"
    r"(?:['’]m\s+(?:unable|not able)\s+to|\s+(?:can['’]?t|cannot|can not|am unable to|"
    r"am not able to|do not have|don['’]?t have))\s+"
    r"(?:(?:directly|currently|actually)\s+)?"
    r"(?:access|browse|look up|retrieve|fetch|connect to|reach|the ability|permission|any way|"
    r"a way|(?:see|view|check|read|open)\s+(?:your|the\s+(?:live|actual|current|real))\b)"
)


def declined(st: SplitState) -> bool:
    """The task's answer opened by saying the agent cannot do it (no access, no means) and it
    changed nothing: the request was not done, however politely the turn ended (real11: "what
    are my rate limits rn" answered "I can't see your account-specific limits…" scored 10)."""
    answer = st.last_answer
    if not (st.has_prompt and st.completed and answer) or _edited(st):
        return False
    return bool(CANNOT.match(answer.split(ANSWER_GAP, 1)[0]))


def judged(st: SplitState, followed: bool = False) -> dict[str, int]:
    """The signals an atom is scored by: its own, and whether it ended on an open question
    that nothing followed (not saved in the state: a prompt in a later delta, an answer or
    the next task — "What do you want me to work on?" answered by a request — closes it)."""
    sig = dict(st.signals)
    if st.api_retry:  # the model's API failed and never answered after its retries
        sig["api_errors"] = sig.get("api_errors", 0) + 1
    if not followed and only_asked(st):
        sig["unanswered_question"] = 1
    if declined(st):
        sig["declined"] = 1
    if never_answered(st, sig):
        sig["never_answered"] = 1
    return sig


def never_answered(st: SplitState, sig: dict[str, int]) -> bool:
    """The model's API failed and the agent never answered nor called a tool in this task:
    nothing was done (real12: "hello" then eight retries, "Credit balance is too low" twice
    for a request asked twice, each scored 7 or 4 as if done with a detour)."""
    failed = sig.get("api_errors", 0) > 0
    return failed and st.has_prompt and st.last_answer is None and not st.tools


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
    # (a list's number — "1. fix it 2. test it" — ends no sentence)
    ends = re.finditer(r"(?<!\S)(?!\d{1,3}\.)\S*?[.!?。！？](?=\s|$)", flat[: limit + 1])
    cut = max((m.end() for m in ends), default=0)
    return flat[:cut].strip() if cut >= limit // 3 else flat[: limit - 1].rstrip() + "…"


PLACEHOLDERS = ("(no prompt)", "(agent activity", "(continued)")


def intent_of(st: SplitState) -> str:
    if st.intent_head:
        return sentences(st.intent_head, INTENT_CHARS)
    if st.first_text:
        return f"(no prompt) {first_sentence(st.first_text, INTENT_CHARS - 12)}"
    return "(agent activity without a prompt)"


def offline_intent(units: list[Unit]) -> str:
    return intent_of(fold(units).state)


def summary_of(st: SplitState) -> str:
    """What happened in a task, from its digest (the same whatever the deltas it came in)."""
    parts = []
    if st.intent_head:
        asked = first_sentence(st.intent_head, 160)
        more = st.prompts - 1
        parts.append(f"Asked: {asked}" + (f" (+{more} follow-up prompts)" if more > 0 else ""))
    if st.tools:
        top = sorted(st.tools.items(), key=lambda kv: -kv[1])[:6]  # stable: first use breaks ties
        shown = ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in top)
        errors = st.signals.get("tool_errors", 0)
        parts.append(
            f"Agent used {sum(st.tools.values())} tool calls ({shown})"
            + (f", {errors} failed" if errors else "")
        )
    if st.skills:
        parts.append(f"Skills used: {', '.join(st.skills)}")
    if st.last_answer is not None:
        parts.append(f"Ended with: {first_sentence(st.last_answer, 200)}")
    if st.signals.get("api_errors") or st.api_retry:
        parts.append("The agent's model API failed")
    if st.person_interrupted:
        parts.append("The person interrupted the agent")
    if st.rewound:
        parts.append("The person rewound the conversation past this work (it was undone)")
    if not parts:
        return "(no activity)"
    return ". ".join(p.rstrip(".") for p in parts)[:SUMMARY_CHARS] + "."


def offline_summary(units: list[Unit]) -> str:
    return summary_of(fold(units).state)


def tags_of(st: SplitState) -> list[str]:
    tags = [w.replace("-", "_") for w, _ in sorted(st.words.items(), key=lambda kv: -kv[1])[:3]]
    tools: dict[str, int] = {}
    for name, n in st.tools.items():
        key = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_")
        if key and name != "tool":
            tools[key] = tools.get(key, 0) + n
    tags += [t for t, _ in sorted(tools.items(), key=lambda kv: -kv[1])[:2]]
    tags += st.skills
    return [t for t in dict.fromkeys(tags) if t][:6]


def offline_tags(units: list[Unit]) -> list[str]:
    return tags_of(fold(units).state)


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
    previous_md: str = ""  # the view's text just before md_start (context, and pending units)
    session: str | None = None  # the person's session (xsky.skills.sessions.session_of)

    def slice(self, s: int, e: int) -> str:
        """The view's text ``[s, e)``, as far as this delta and ``previous_md`` reach."""
        base = self.md_start - len(self.previous_md)
        if s >= self.md_start:
            return self.md[max(0, s - self.md_start) : max(0, e - self.md_start)]
        return (self.previous_md + self.md)[max(0, s - base) : max(0, e - base)]


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


CUT_NOTE = "\n[… cut; see provenance.raw]"


def _capped(segment: str) -> str:
    return segment if len(segment) <= RAW_SEGMENT_CAP else segment[:RAW_SEGMENT_CAP] + CUT_NOTE


def finish(
    drafts: list[Draft], view: DeltaView, next_number: int, split_by: Literal["model", "offline"]
) -> list[AtomTask]:
    """Atom files for the drafts: numbered on from ``next_number``, linked, tiling the delta.

    A draft that extends the trajectory's last atom returns that atom updated (range,
    digest, signals, skills, a model's revision); new atoms follow it in the linked list.
    Every field but ``provenance.deltas`` is a function of the units alone, whatever the
    windows and deltas they came in.
    """
    atoms: list[AtomTask] = []
    for i, d in enumerate(drafts):
        nxt = drafts[i + 1] if i + 1 < len(drafts) else None
        # Atoms tile the view: each ends where the next begins; the last where its units end
        # (the window's end, which the next window's atoms continue from).
        if nxt is not None and nxt.units:
            end = nxt.units[0].s
        elif d.units:
            end = d.units[-1].e
        else:
            end = d.extends.offset_end if d.extends is not None else view.md_start
        st = d.state
        if d.extends is not None:
            atom = d.extends.model_copy(deep=True)
            seen_until = atom.offset_end  # what the atom already holds
            atom.offset_end = end
            if atom.intent.startswith(PLACEHOLDERS) and (
                d.intent or st.has_prompt or st.first_text
            ):
                atom.intent = d.intent or intent_of(st)
            elif d.revised and d.intent is None and atom.provenance.split_by == "offline":
                atom.intent = intent_of(st)  # the next prompt showed its preamble for one
            digest = (
                d.extends.provenance.split is not None and atom.provenance.split_by == "offline"
            )
            if d.summary and split_by == "model":
                atom.summary = d.summary  # the model's revision (update_previous)
            elif (d.units or d.revised) and digest:
                atom.summary = summary_of(st)
            elif d.units:  # a model's summary, or an older atom's: what was added follows it
                atom.summary = _join_summary(atom.summary, summary_of(fold(d.units).state))
            if d.tags:
                atom.tags = list(dict.fromkeys(atom.tags + d.tags))[:8]
            elif d.units or (d.revised and digest):
                atom.tags = (
                    tags_of(st) if digest else list(dict.fromkeys(atom.tags + tags_of(st)))[:8]
                )
            if end < seen_until:  # its trailing compaction went to the next prompt's atom
                trimmed = atom.raw_segment
                if not trimmed.endswith(CUT_NOTE):
                    trimmed = trimmed[: max(0, len(trimmed) - (seen_until - end))]
                atom.raw_segment = trimmed
            else:
                atom.raw_segment = _capped(atom.raw_segment + view.slice(seen_until, end))
        else:
            start = d.units[0].s
            atom = AtomTask(
                atom_id=atom_id(view.traj_id, next_number),
                traj_id=view.traj_id,
                offset_start=start,
                offset_end=end,
                intent=d.intent or intent_of(st),
                summary=d.summary or summary_of(st),
                tags=d.tags or tags_of(st),
                ux_score=5,
                context_prefix=_context_prefix(view, start),
                raw_segment=_capped(view.slice(start, end)),
                provenance=Provenance(split_by=split_by),
            )
            next_number += 1
        p = atom.provenance
        if st.skills or p.used_skills_by == "measured":
            kept = atom.used_skills if p.used_skills_by == "measured" else []
            atom.used_skills = list(dict.fromkeys(kept + st.skills))
            p.used_skills_by = "measured"
        elif d.self_reported:
            atom.used_skills = list(dict.fromkeys(atom.used_skills + d.self_reported))
            p.used_skills_by = "self-reported"
        p.ux_signals = judged(st, followed=nxt is not None)
        if d.ux_score is not None:
            atom.ux_score, p.ux_score_by = max(1, min(10, int(d.ux_score))), "model"
        elif p.ux_score_by == "heuristic" or d.extends is None:
            atom.ux_score, p.ux_score_by = heuristic_ux(p.ux_signals), "heuristic"
        p.keywords = (d.keywords or p.keywords)[:40]
        p.ended = "interrupted" if st.interrupted else "completed" if st.completed else "open"
        p.origin = st.origin if st.has_prompt else p.origin
        p.session = view.session or p.session
        saved = st.model_copy(deep=True)
        saved.pending = [u.wire() for u in d.pending]
        p.split = saved
        if d.units or d.carried:
            label = f"bytes {view.byte_start}-{view.byte_end}"
            if label not in p.deltas[-1:]:  # one entry per delta, not per window
                p.deltas = (p.deltas + [label])[-KEEP_DELTAS:]
        _extend_anchor(atom, view.path, d.anchored())
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
    return view.slice(max(0, start - CONTEXT_PREFIX_CHARS), start)
