"""AtomTasks: a trajectory cut at semantic boundaries into the smallest units skills are made of.

The seed's fields, exactly (``atom_id, traj_id, offset_start, offset_end, intent, summary,
tags, used_skills, ux_score, pre_atom_id, post_atom_id, context_prefix, raw_segment``),
plus one extra field, ``provenance``: the raw anchors (file, byte range, first and last
record id) and how each judgement was made (model or heuristic, measured or self-reported).

This module is pure: the offline splitter, the UX heuristic, skill measurement and the
bookkeeping that keeps numbering and the linked list right across deltas. The LLM
TaskAgent (activities/skills/task_agent.py) reuses all of it and only replaces the boundary
choice and the wording.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from xsky.skills.trajectory import RENDER_VERSION, Unit
from xsky.skills.transcripts import SKILL_NAME

INPUT_CAP = 30_000  # characters of trajectory one TaskAgent call sees (xskill's cap)
RAW_SEGMENT_CAP = 30_000
KEEP_DELTAS = 20
CONTEXT_PREFIX_CHARS = 600
INTENT_CHARS = 160
SUMMARY_CHARS = 600


class RawAnchor(BaseModel):
    model_config = ConfigDict(extra="ignore")
    path: str
    byte_start: int
    byte_end: int
    uuid_first: str | None = None
    uuid_last: str | None = None
    call_ids: list[str] = Field(default_factory=list)


class Provenance(BaseModel):
    model_config = ConfigDict(extra="ignore")
    raw: list[RawAnchor] = Field(
        default_factory=list
    )  # one per raw file the atom spans (a moved file adds one)
    render_version: str = RENDER_VERSION
    split_by: Literal["model", "offline"] = "offline"
    ux_score_by: Literal["model", "heuristic"] = "heuristic"
    ux_signals: dict[str, int] = Field(default_factory=dict)
    used_skills_by: Literal["measured", "self-reported", "none"] = "none"
    keywords: list[str] = Field(
        default_factory=list
    )  # of the person's prompts: topic-shift checks across deltas
    deltas: list[str] = Field(
        default_factory=list
    )  # "bytes s-e" of every delta that built this atom
    ended: Literal["open", "completed", "interrupted"] = (
        "open"  # how its last prompt's turn ended, so far
    )


class AtomTask(BaseModel):
    model_config = ConfigDict(extra="ignore")
    atom_id: str
    traj_id: str
    offset_start: int
    offset_end: int
    intent: str
    summary: str
    tags: list[str] = Field(default_factory=list)
    used_skills: list[str] = Field(default_factory=list)
    ux_score: int = Field(ge=1, le=10)
    pre_atom_id: str | None = None
    post_atom_id: str | None = None
    context_prefix: str = ""
    raw_segment: str = ""
    provenance: Provenance = Field(default_factory=Provenance)


def atom_id(traj_id: str, number: int) -> str:
    return f"atom_{traj_id}_{number:04d}"


def atom_number(aid: str) -> int:
    return int(aid.rsplit("_", 1)[1])


# -- boundaries and topic shifts ---------------------------------------------------------------

_WORD = re.compile(r"[a-zA-Z][a-zA-Z0-9_\-]{2,}|[\u4e00-\u9fff]{2,}")
STOPWORDS = frozenset(
    """
the and for with that this from have has had was were are but not you your yours can could would should will
into onto about then than them they their there here what when where which while who whom why how all any
some more most other such only own same too very just also now please make sure let lets use using used get got
its it's it’s our out over under again further once both each few nor off did does doing done being been
want need like add fix run file files code one two new see look way thing things work works working
""".split()
)
# Verbs of requests: they say what was asked, not what it was about (kept out of tags and skill names).
VERBS = frozenset(
    """
write writes wrote adds added adding create creates created make makes made update updates updated explain explains
show shows tell give find check set sets put build builds implement implements help change changes changed remove
removes delete deletes try tries want wants need needs can could should would will pull push save saves keep
""".split()
)
CORRECTION = re.compile(
    r"(?i)^\s*(no\b|nope\b|wrong\b|that'?s (not|wrong)|this is (not|wrong)|not what|that is not|doesn'?t work|"
    r"didn'?t work|still (not|fail|broken|doesn)|it still\b|you (broke|forgot|missed)|undo\b|revert\b|"
    r"stop\b|wait\b|actually\b|instead\b|不对|错了|不是|还是不行|撤销)"
)
# "go on" keeps the task going even after the agent answered; "also …" adds to a task still in progress.
CONTINUE = re.compile(
    r"(?i)^\s*(ok\b|okay\b|yes\b|yep\b|sure\b|continue\b|go on\b|go ahead\b|do it\b|proceed\b|"
    r"try again\b|again\b|keep going\b|可以|继续)"
)
SEQUEL = re.compile(r"(?i)^\s*(also\b|and\b|plus\b|then\b|one more\b|same\b)")
ACKNOWLEDGEMENT = re.compile(
    r"(?i)^\s*(thanks|thank you|thx|perfect|great|awesome|nice|lgtm|looks good|cool|excellent|works now|谢谢|好的)\b[^\n]{0,60}$"
)
REVERT_COMMAND = re.compile(r"git (checkout --|restore\b|revert\b|reset --hard|stash\b)")
SIMILAR = 0.3  # keyword overlap (Jaccard) above which a prompt is the same topic


def keywords(text: str, limit: int = 40) -> list[str]:
    seen: dict[str, None] = {}
    for w in _WORD.findall(text.lower()):
        if w not in STOPWORDS and not w.isdigit():
            seen.setdefault(w, None)
            if len(seen) >= limit:
                break
    return list(seen)


def similarity(a: list[str], b: list[str]) -> float:
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def containment(a: list[str], b: list[str]) -> float:
    """How much of the shorter keyword list the other holds (a re-ask repeats the first ask)."""
    sa, sb = set(a), set(b)
    if len(sa) < 2 or len(sb) < 2:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))


def is_boundary(u: Unit) -> bool:
    """Where an atom may start: a real prompt, a compaction, a task start."""
    return u.kind in ("user", "compaction") or u.marker in ("task_start", "compaction")


def boundary_indexes(units: list[Unit]) -> list[int]:
    """Indexes of the units an atom may start at; a boundary that only markers and injected
    context separate from the previous one (a task start, then its prompt) is the same one."""
    found: list[int] = []
    quiet = False  # only markers / meta since the last boundary
    for i, u in enumerate(units):
        if is_boundary(u):
            if not (found and quiet):
                found.append(i)
            quiet = True
        elif u.kind not in ("marker", "meta"):
            quiet = False
    return found


def _is_compaction(u: Unit) -> bool:
    return u.kind == "compaction" or u.marker == "compaction"


# -- grouping units into atoms -----------------------------------------------------------------


@dataclass
class Draft:
    """An atom being built from units (new, or the trajectory's last atom being extended)."""

    units: list[Unit] = field(default_factory=list)
    extends: AtomTask | None = None
    keywords: list[str] = field(default_factory=list)
    completed: bool = False  # the agent answered (or the turn ended) since the last prompt
    interrupted: bool = (
        False  # the person interrupted (or the turn was aborted) since its last prompt
    )
    intent: str | None = None  # set by a model
    summary: str | None = None
    tags: list[str] | None = None
    ux_score: int | None = None
    self_reported: list[str] | None = None

    def add(self, u: Unit) -> None:
        self.units.append(u)
        if u.kind == "user":
            self.keywords = list(dict.fromkeys(self.keywords + keywords(u.head)))[:40]
            self.completed = self.interrupted = False
        elif u.kind == "assistant" or u.marker in ("task_complete", "turn_end"):
            self.completed = True
        elif u.kind in ("tool_call", "tool_result", "thinking"):
            self.completed = False
        elif u.marker in ("interrupted", "aborted"):
            self.interrupted = True

    def has_prompt(self) -> bool:
        return self.extends is not None or any(x.kind == "user" for x in self.units)


def starts_new_atom(u: Unit, current: Draft | None) -> bool:
    """Offline rule: does this boundary unit begin a new atom, or continue the current one?"""
    if current is None:
        return True
    if not current.has_prompt():
        # Nothing but agent activity or a compaction so far: this boundary names the task.
        return False
    if _is_compaction(u):
        return True
    if u.kind != "user":
        return current.completed
    text = u.head.strip()
    words = keywords(text)
    if CORRECTION.match(text) and len(text) < 400:
        return False  # a correction belongs to the task it corrects
    if ACKNOWLEDGEMENT.match(text):
        return False  # feedback on the task just done
    if current.interrupted and containment(words, current.keywords) >= 0.5:
        return False  # asked again after an interruption: the same task
    if containment(words, current.keywords) >= 0.75:
        return False  # a re-ask
    if CONTINUE.match(text) and len(text) < 300:
        return False
    if current.completed:
        return True  # the agent had answered: a new ask is a new task
    if SEQUEL.match(text) and len(text) < 300:
        return False  # added to a task still in progress
    return similarity(words, current.keywords) < SIMILAR


def group_offline(units: list[Unit], prior: AtomTask | None) -> list[Draft]:
    """Split one window of units into drafts; the first may extend ``prior``."""
    drafts: list[Draft] = []
    current: Draft | None = None
    if prior is not None:
        current = _continuing(prior)
        drafts.append(current)
    for u in units:
        if current is None or (is_boundary(u) and starts_new_atom(u, current)):
            current = Draft()
            drafts.append(current)
        current.add(u)
    return drafts


def _continuing(prior: AtomTask) -> Draft:
    p = prior.provenance
    return Draft(
        extends=prior,
        keywords=list(p.keywords),
        completed=p.ended == "completed",
        interrupted=p.ended == "interrupted",
    )


def group_at(units: list[Unit], starts: list[int], prior: AtomTask | None) -> list[Draft]:
    """Drafts that start at the given unit indexes (a model's choice). What precedes the
    first start extends ``prior``, or, when the trajectory has no atom yet, joins the first."""
    drafts: list[Draft] = []
    current: Draft | None = None
    if prior is not None:
        current = _continuing(prior)
        drafts.append(current)
    wanted = set(starts)
    absorb_first = prior is None  # leading units without a prior atom: the first start joins them
    for i, u in enumerate(units):
        if current is None:
            current = Draft()
            drafts.append(current)
            absorb_first = absorb_first and i not in wanted
        elif i in wanted:
            if absorb_first:
                absorb_first = False
            else:
                current = Draft()
                drafts.append(current)
        current.add(u)
    return drafts


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


def windows(units: list[Unit], cap: int = INPUT_CAP) -> list[list[Unit]]:
    """Units cut into windows of at most ``cap`` characters of view, at unit boundaries,
    preferring to cut before a prompt; one oversized unit is a window of its own."""
    out: list[list[Unit]] = []
    current: list[Unit] = []
    for u in units:
        if current and u.e - current[0].s > cap:
            cut = len(current)
            for j in range(len(current) - 1, 0, -1):  # the last prompt in the window, if any
                if is_boundary(current[j]) and current[j].s - current[0].s >= cap // 2:
                    cut = j
                    break
            out.append(current[:cut])
            current = current[cut:]
        current.append(u)
    if current:
        out.append(current)
    return out
