"""TaskClusterAgent's pure parts: the skill catalogue under a budget, decisions, the offline rule.

For every new atom the cluster agent decides one of: add it to a skill's candidates with
a weightscore 0–10 and a reason; hold it as a *seed* (worth a skill, but its session is the
only one seen doing that kind of task, :mod:`xsky.skills.evidence`); create a new baby skill
with the seeds of other sessions it matches (only for an atom worth ≥ NEW_SKILL_MIN, never for one
whose task a model wrote); rename a baby skill; move an atom between skills; or skip it
(not reusable). The model makes that call when one is configured; offline, tag and keyword
similarity does, and the name comes from :func:`xsky.skills.naming.task_name`.

Seeds are matched by *kind of task* (:mod:`xsky.skills.recurrence`: the request without its
particulars, the steps, the outcome), not by words alone, so an unrelated pair that shares
words never founds a skill. The worth bar :data:`NEW_SKILL_MIN` is what an atom needs to be
kept as evidence at all; it was tuned on data (bench/recurrence.py): at 7 the one recurring
workflow of the measured corpus (four "work on bead" sessions, each worth 6) was thrown away;
at 4 one-off lookups would wait as seeds; recurrence across sessions, not one atom's worth,
is what founds a skill.
"""

from __future__ import annotations

from functools import partial
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from xsky.skills.atoms import AtomTask, keywords, similarity
from xsky.skills.evidence import (
    MAX_FOUNDERS,
    MIN_SESSIONS,
    Seed,
    can_found,
    min_similarity,
    project_of,
    session_of,
)
from xsky.skills.naming import task_name
from xsky.skills.recurrence import explain, kind_similarity, same_kind, shape_of

CATALOGUE_BUDGET = (
    25_000  # characters of catalogue the model sees (xskill: ~20 % of a 128k context)
)
DESCRIPTION_CAP = 300
DESCRIPTION_FLOOR = 75  # below this many characters a description says nothing: names only
NEW_SKILL_MIN = 6  # tuned in bench/recurrence.py (see the module's doc)

Action = Literal["add", "new", "seed", "rename", "move", "skip"]


class SkillSummary(BaseModel):
    """What the cluster agent knows of one skill in the library."""

    model_config = ConfigDict(extra="ignore")
    name: str
    description: str = ""
    state: str = "baby"  # baby | main | staging
    keywords: list[str] = Field(default_factory=list)
    projects: list[str] = Field(default_factory=list)  # of its candidates' trajectories


class ClusterDecision(BaseModel):
    model_config = ConfigDict(extra="ignore")
    action: Action
    atom_id: str
    traj_id: str
    skill: str | None = None  # add / new: the skill; rename: the old name; move: the destination
    weightscore: int = Field(0, ge=0, le=10)
    reason: str = ""
    new_name: str | None = None  # rename
    from_skill: str | None = None  # move
    description: str | None = None  # new: the baby skill's first description
    by: Literal["model", "offline"] = "offline"
    founders: list[str] = Field(default_factory=list)  # new: the seeds (atom ids) it founds with
    # the reason and description, kept in skills/.notes/<note_ref>.json: in a workflow's
    # history a decision carries neither (they may quote the transcript)
    note_ref: str | None = None

    def referenced(self, ref: str) -> ClusterDecision:
        """This decision without its text, pointing to where the text is kept."""
        return self.model_copy(update={"reason": "", "description": None, "note_ref": ref})


def catalogue(skills: list[SkillSummary], budget: int = CATALOGUE_BUDGET) -> str:
    """``- name [state]: description`` lines within the budget: names always, descriptions
    capped at 300 characters and shortened evenly, dropped when they would fall under 75."""
    if not skills:
        return "(no skills yet)"
    heads = [f"- {s.name} [{s.state}]" for s in skills]
    room = budget - sum(len(h) + 1 for h in heads)
    per = min(DESCRIPTION_CAP, room // len(skills) - 2) if room > 0 else 0
    if per < DESCRIPTION_FLOOR:
        return "\n".join(heads)
    lines = []
    for head, s in zip(heads, skills, strict=True):
        text = " ".join(s.description.split())
        lines.append(
            f"{head}: {text if len(text) <= per else text[: per - 1] + '…'}" if text else head
        )
    return "\n".join(lines)


def atom_keywords(atom: AtomTask) -> list[str]:
    return list(
        dict.fromkeys(
            atom.tags + atom.used_skills + keywords(atom.intent) + atom.provenance.keywords
        )
    )[:60]


def worth(atom: AtomTask) -> int:
    """How much an atom can teach a skill (0–10), offline: procedural work that went well."""
    calls = sum(len(r.call_ids) for r in atom.provenance.raw)
    score = 3 if calls >= 3 else 2 if calls >= 1 else 0
    if atom.provenance.ux_signals.get("completed") or atom.ux_score >= 8:
        score += 2
    score += 2 if atom.ux_score >= 8 else 1 if atom.ux_score >= 6 else 0
    if atom.used_skills:
        score += 1
    if len(atom.intent) >= 20 and not atom.intent.startswith("("):
        score += 2
    return min(10, score)


def best_skill(atom: AtomTask, skills: list[SkillSummary]) -> tuple[SkillSummary | None, float]:
    """The most similar skill the atom may join (the cross-project bar applied), and its similarity."""
    words, project = atom_keywords(atom), project_of(atom.traj_id)
    best, best_sim = None, 0.0
    for s in skills:
        sim = similarity(words, s.keywords)
        if sim >= min_similarity(project, s.projects) and sim > best_sim:
            best, best_sim = s, sim
    return best, best_sim


def matching_seeds(atom: AtomTask, seeds: list[Seed]) -> list[Seed]:
    """The seeds of the same kind of task as this atom (most similar first); a seed kept by an
    older version, without its shape, is matched by keywords with the cross-project bar."""
    words, project, shape = atom_keywords(atom), project_of(atom.traj_id), shape_of(atom)
    scored = []
    for seed in seeds:
        if seed.atom_id == atom.atom_id:
            continue
        if seed.shape is not None:
            if same_kind(shape, seed.shape) and (
                seed.project == project
                or similarity(words, seed.keywords) >= min_similarity(project, [seed.project])
            ):
                scored.append((kind_similarity(shape, seed.shape), seed))
            continue
        sim = similarity(words, seed.keywords)
        if sim >= min_similarity(project, [seed.project]):
            scored.append((sim, seed))
    scored.sort(key=lambda x: -x[0])
    return [seed for _, seed in scored]


def offline_decide(
    atom: AtomTask, skills: list[SkillSummary], seeds: list[Seed] | None = None
) -> ClusterDecision:
    """Add to the most similar skill; else, for an atom worth ≥ NEW_SKILL_MIN, found a skill with the
    seeds of other sessions it matches, or become a seed itself; else skip."""
    value = worth(atom)
    decision = partial(ClusterDecision, atom_id=atom.atom_id, traj_id=atom.traj_id, by="offline")
    best, best_sim = best_skill(atom, skills)
    if best is not None:
        relevance = min(1.0, best_sim / 0.4)
        return decision(
            action="add",
            skill=best.name,
            weightscore=max(1, round(value * relevance)),
            reason=f"keyword similarity {best_sim:.2f} with {best.name}; atom worth {value}/10",
        )
    names = {s.name for s in skills}
    kin = next((m for m in matching_seeds(atom, seeds or []) if m.joined in names), None)
    if kin is not None and kin.shape is not None:  # the same kind of task as a skill's atom
        return decision(
            action="add",
            skill=kin.joined,
            weightscore=value,
            reason=f"the same kind of task as {kin.atom_id} of {kin.joined} "
            f"({explain(shape_of(atom), kin.shape)}); atom worth {value}/10",
        )
    if value < NEW_SKILL_MIN:
        return decision(
            action="skip",
            weightscore=value,
            reason=f"no similar skill and worth {value}/10 < {NEW_SKILL_MIN} (the bar an atom needs "
            "to be kept as evidence of a kind of task)",
        )
    refused = can_found(atom)
    if refused:
        return decision(action="skip", weightscore=value, reason=f"no similar skill; {refused}")
    return found_or_seed(atom, value, skills, seeds or [], by="offline")


def found_or_seed(
    atom: AtomTask,
    value: int,
    skills: list[SkillSummary],
    seeds: list[Seed],
    by: Literal["model", "offline"],
    name: str | None = None,
    description: str | None = None,
    reason: str = "",
) -> ClusterDecision:
    """A new skill when the atom and the seeds it matches span ≥ 2 sessions and name a kind
    of task; else the atom waits as a seed (its proposed name kept with it)."""
    decision = partial(ClusterDecision, atom_id=atom.atom_id, traj_id=atom.traj_id, by=by)
    matches = [m for m in matching_seeds(atom, seeds) if m.joined is None]
    others = [m for m in matches if m.session != session_of(atom)]
    founders = (others + [m for m in matches if m not in others])[:MAX_FOUNDERS]
    taken = {s.name for s in skills}
    name = name or task_name([*(m.name or "" for m in founders), atom.intent], taken)
    sessions = {m.session for m in founders} | {session_of(atom)}
    if len(sessions) >= MIN_SESSIONS and name:
        return decision(
            action="new",
            skill=name,
            weightscore=value,
            founders=[m.atom_id for m in founders],
            description=description or draft_description(name),
            reason=(reason + "; " if reason else "")
            + f"the same kind of task in {len(sessions)} sessions ({len(founders)} earlier atoms); worth {value}/10",
        )
    why = (
        "no atom of another session matches it yet"
        if len(sessions) < MIN_SESSIONS
        else "no kind of task can be named from it yet"
    )
    return decision(
        action="seed",
        skill=name,
        weightscore=value,
        reason=(reason + "; " if reason else "") + f"held as a seed: {why}; worth {value}/10",
    )


def draft_description(name: str) -> str:
    """A baby skill's first description, from its name alone (never from a prompt)."""
    words = name.replace("-", " ")
    return (
        f"Draft of a skill to {words}, not written yet. Use when asked to {words}, once a model "
        "has written its steps."
    )


def skill_keywords(name: str, description: str, candidate_tags: list[str]) -> list[str]:
    return list(dict.fromkeys(name.split("-") + keywords(description) + candidate_tags))[:80]
