"""TaskClusterAgent's pure parts: the skill catalogue under a budget, decisions, the offline rule.

For every new atom the cluster agent decides one of: add it to a skill's candidates with
a weightscore 0–10 and a reason; create a new baby skill (only for an atom scoring ≥ 7);
rename a baby skill; move an atom between skills; or skip it (not reusable). The model
makes that call when one is configured; offline, tag and keyword similarity does.
"""

from __future__ import annotations

from functools import partial
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from xsky.skills.atoms import VERBS, AtomTask, keywords, similarity
from xsky.skills.spec import slugify

CATALOGUE_BUDGET = (
    25_000  # characters of catalogue the model sees (xskill: ~20 % of a 128k context)
)
DESCRIPTION_CAP = 300
DESCRIPTION_FLOOR = 75  # below this many characters a description says nothing: names only
NEW_SKILL_MIN = 7
ADD_MIN_SIMILARITY = 0.15

Action = Literal["add", "new", "rename", "move", "skip"]


class SkillSummary(BaseModel):
    """What the cluster agent knows of one skill in the library."""

    model_config = ConfigDict(extra="ignore")
    name: str
    description: str = ""
    state: str = "baby"  # baby | main | staging
    keywords: list[str] = Field(default_factory=list)


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


def offline_decide(atom: AtomTask, skills: list[SkillSummary]) -> ClusterDecision:
    """Add to the most similar skill, else a new baby skill when the atom is worth ≥ 7, else skip."""
    words = atom_keywords(atom)
    value = worth(atom)
    best, best_sim = None, 0.0
    for s in skills:
        sim = similarity(words, s.keywords)
        if sim > best_sim:
            best, best_sim = s, sim
    decision = partial(ClusterDecision, atom_id=atom.atom_id, traj_id=atom.traj_id, by="offline")
    if best is not None and best_sim >= ADD_MIN_SIMILARITY:
        relevance = min(1.0, best_sim / 0.4)
        weight = max(1, round(value * relevance))
        return decision(
            action="add",
            skill=best.name,
            weightscore=weight,
            reason=f"keyword similarity {best_sim:.2f} with {best.name}; atom worth {value}/10",
        )
    if value >= NEW_SKILL_MIN:
        name = slugify("-".join(_name_words(atom)), {s.name for s in skills})
        return decision(
            action="new",
            skill=name,
            weightscore=value,
            description=baby_description(atom),
            reason=f"no similar skill (best similarity {best_sim:.2f}); atom worth {value}/10",
        )
    return decision(
        action="skip",
        weightscore=value,
        reason=f"no similar skill (best similarity {best_sim:.2f}) and worth {value}/10 < {NEW_SKILL_MIN}",
    )


def _name_words(atom: AtomTask) -> list[str]:
    """What the task was about: the intent's first content words (no request verbs, no tool names)."""
    words = [w for w in keywords(atom.intent) if w not in VERBS and len(w) >= 3 and w.isascii()][:3]
    return [w.replace("_", "-") for w in words or ["task"]]


def baby_description(atom: AtomTask) -> str:
    intent = " ".join(atom.intent.split()).replace("<", "(").replace(">", ")")
    return (
        f"How to {intent[:200].rstrip('.?!').lower()}. Use when a task like this comes up again."[
            :1024
        ]
    )


def skill_keywords(name: str, description: str, candidate_tags: list[str]) -> list[str]:
    return list(dict.fromkeys(name.split("-") + keywords(description) + candidate_tags))[:80]
