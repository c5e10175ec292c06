"""TaskClusterAgent: where one new atom belongs in the skill library, decided by a model or offline.

The model sees the atom, the catalogue (names always; descriptions capped at 300
characters and dropped to stay within 25,000 characters) and the seeds (atoms worth a skill
waiting for another session), and answers with one of the tools below; each call is
checked on arrival (a known skill, a weightscore 0–10, no cross-project match below
:data:`xsky.skills.evidence.CROSS_PROJECT_MIN_SIMILARITY`, a new baby skill only for an
atom worth ≥ NEW_SKILL_MIN that a person asked for, renames of baby skills only, a name that is a verb
and an object, :func:`xsky.skills.naming.name_problems`). A new skill needs atoms of two
sessions: until another session's atom joins, the atom is held as a seed. Without a
model, :func:`xsky.skills.clustering.offline_decide` decides by tag and keyword similarity.
The caller records and applies every decision.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, Field

from activities import llm
from activities.model_tools import ModelTool, tool_loop
from xsky.skills.atoms import AtomTask, similarity
from xsky.skills.clustering import (
    NEW_SKILL_MIN,
    ClusterDecision,
    SkillSummary,
    atom_keywords,
    catalogue,
    found_or_seed,
    offline_decide,
)
from xsky.skills.evidence import Seed, can_found, min_similarity, project_of, session_of
from xsky.skills.models import traj_of
from xsky.skills.naming import name_problems

MAX_TURNS = 6

SYSTEM_PROMPT = f"""You organise a library of Agent Skills learned from coding sessions. For one new atom (an episode
of a person's intent: what they wanted, what happened, how well it went), decide where it belongs:
- add_to_skill: it is evidence for an existing skill; give a weightscore 0-10 for how much it can teach that
  skill (10: a clean, complete, reusable example; 0: barely related) and a one-line reason;
- new_skill_folder: it starts a new skill nobody has yet; only for an atom worth >= {NEW_SKILL_MIN}. The name is
  the kind of task as a verb and an object (fix-flaky-tests, write-release-notes), lowercase a-z, 0-9 and
  hyphens, never words of this one prompt, ids or filler. The description is the trigger: what the skill does
  and when to use it, in the user's words. A skill needs evidence from two sessions: name in seed_atoms the
  waiting seeds (atoms of other sessions) that are the same kind of task; without them the atom is held as a
  seed until another session's atom matches;
- skip: it is not reusable (chit-chat, a one-off lookup), with a reason.
You may also call rename_skill for a baby skill whose name no longer fits, and move_atom to move an earlier atom
to a better skill. Call exactly one of add_to_skill / new_skill_folder / skip for the new atom."""

Weight = Annotated[int, Field(strict=True, ge=0, le=10)]


class AddToSkill(BaseModel):
    """The new atom is evidence for an existing skill (weightscore: how much it can teach it)."""

    skill: str
    weightscore: Weight
    reason: str


class NewSkillFolder(BaseModel):
    name: str
    description: str
    weightscore: Weight
    reason: str
    seed_atoms: list[str] = Field(default_factory=list)


class Skip(BaseModel):
    """The new atom is not reusable."""

    reason: str


class RenameSkill(BaseModel):
    """Rename a baby skill whose name no longer fits."""

    skill: str
    new_name: str
    reason: str


class MoveAtom(BaseModel):
    """Move an earlier atom to a better skill."""

    atom_id: str
    from_skill: str
    to_skill: str
    weightscore: Weight
    reason: str


def atom_card(atom: AtomTask) -> str:
    return (
        f"atom {atom.atom_id} (trajectory {atom.traj_id})\nintent: {atom.intent}\nsummary: {atom.summary}\n"
        f"tags: {', '.join(atom.tags)}\nused skills: {', '.join(atom.used_skills) or 'none'}\nux_score: {atom.ux_score}"
    )


def seed_list(seeds: list[Seed], atom: AtomTask, limit: int = 40) -> str:
    """The seeds of other sessions, most similar to the atom first."""
    words = atom_keywords(atom)
    others = [
        s
        for s in seeds
        if s.session != session_of(atom) and s.atom_id != atom.atom_id and s.joined is None
    ]
    others.sort(key=lambda s: -similarity(words, s.keywords))
    if not others:
        return "(no seeds waiting)"
    return "\n".join(
        f"- {s.atom_id} (project {s.project}, worth {s.weightscore}): {s.name or 'no name yet'}; "
        f"keywords {', '.join(s.keywords[:12])}"
        for s in others[:limit]
    )


async def cluster(
    atom: AtomTask,
    skills: list[SkillSummary],
    seeds: list[Seed],
    target: llm.LLMTarget | None,
    beat: Callable[[str], None],
) -> list[ClusterDecision]:
    if target is None:
        return [offline_decide(atom, skills, seeds)]
    placing = _Placing(atom, {s.name: s for s in skills}, seeds)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": f"The skill catalogue:\n{catalogue(skills)}\n\nSeeds waiting for another "
            f"session:\n{seed_list(seeds, atom)}\n\nThe new atom (session {session_of(atom)}, project "
            f"{project_of(atom.traj_id)}):\n{atom_card(atom)}",
        },
    ]
    async with llm.client_for(target) as client:
        await tool_loop(
            client,
            target,
            messages,
            placing.tools(),
            max_turns=MAX_TURNS,
            beat=lambda turn: beat(f"TaskClusterAgent turn {turn}"),
            done=placing.decided,
            nudge=lambda: "Decide for the new atom: add_to_skill, new_skill_folder or skip.",
            temperature=0,
        )
    if not placing.decided():
        fallback = offline_decide(atom, skills, seeds)
        fallback.reason = f"the model gave no decision; offline: {fallback.reason}"
        placing.decisions.append(fallback)
    return placing.decisions


class _Placing:
    """The tools of one atom's conversation; each call is checked on arrival and recorded."""

    def __init__(self, atom: AtomTask, skills: dict[str, SkillSummary], seeds: list[Seed]) -> None:
        self.atom, self.skills, self.seeds = atom, skills, seeds
        self.decisions: list[ClusterDecision] = []

    def decided(self) -> bool:
        """Whether the new atom has its decision (add, new, seed or skip)."""
        return any(
            d.atom_id == self.atom.atom_id and d.action in ("add", "new", "seed", "skip")
            for d in self.decisions
        )

    def tools(self) -> list[ModelTool[Any]]:
        return [
            ModelTool.of("add_to_skill", AddToSkill, self.add_to_skill),
            ModelTool(
                "new_skill_folder",
                f"The new atom starts a new baby skill (only for an atom worth >= {NEW_SKILL_MIN}).",
                NewSkillFolder,
                self.new_skill_folder,
            ),
            ModelTool.of("skip", Skip, self.skip),
            ModelTool.of("rename_skill", RenameSkill, self.rename_skill),
            ModelTool.of("move_atom", MoveAtom, self.move_atom),
        ]

    def _decide(self, reason: str, **fields: Any) -> None:
        fields.setdefault("atom_id", self.atom.atom_id)
        fields.setdefault("traj_id", self.atom.traj_id)
        self.decisions.append(ClusterDecision(**fields, by="model", reason=reason[:500]))

    def add_to_skill(self, a: AddToSkill) -> str:
        if a.skill not in self.skills:
            return f"ERROR: no skill {a.skill!r}; skills: {', '.join(self.skills) or 'none yet (use new_skill_folder)'}"
        skill = self.skills[a.skill]
        sim = similarity(atom_keywords(self.atom), skill.keywords)
        project = project_of(self.atom.traj_id)
        # within a project the model's judgement stands; across projects it needs the bar
        bar = min_similarity(project, skill.projects)
        if skill.projects and project not in skill.projects and sim < bar:
            return (
                f"ERROR: {a.skill} holds atoms of other projects and this atom is only {sim:.2f} similar "
                f"to it (at least {bar:.2f} across projects); skip it or start a new skill"
            )
        self._decide(a.reason, action="add", skill=a.skill, weightscore=a.weightscore)
        return f"ok: {self.atom.atom_id} → {a.skill} (weight {a.weightscore})"

    def new_skill_folder(self, a: NewSkillFolder) -> str:
        wrong = name_problems(a.name)
        if wrong:
            return "ERROR: " + "; ".join(wrong)
        if a.name in self.skills:
            return f"ERROR: {a.name!r} exists; use add_to_skill"
        if a.weightscore < NEW_SKILL_MIN:
            return f"ERROR: a new skill needs an atom worth at least {NEW_SKILL_MIN}; add it to a skill or skip it"
        refused = can_found(self.atom)
        if refused:
            return f"ERROR: this atom cannot start a skill: {refused}; add it to a skill or skip it"
        description = " ".join(a.description.split()).replace("<", "(").replace(">", ")")[:1024]
        d = found_or_seed(  # the seeds the offline similarity matches
            self.atom,
            a.weightscore,
            list(self.skills.values()),
            self.seeds,
            by="model",
            name=a.name,
            description=description,
            reason=a.reason[:500],
        )
        named = [
            s for s in self.seeds if s.atom_id in a.seed_atoms and s.atom_id != self.atom.atom_id
        ]
        if named and d.action == "new":
            d.founders = list(dict.fromkeys([*(s.atom_id for s in named), *d.founders]))[:8]
        elif any(
            s.session != session_of(self.atom) for s in named
        ):  # the model saw what they share
            d = d.model_copy(update={"action": "new", "founders": [s.atom_id for s in named][:8]})
        self.decisions.append(d)
        if d.action == "seed":
            return (
                f"ok: held as a seed for {a.name}: a skill needs atoms of two sessions; it is founded "
                "when an atom of another session matches"
            )
        return f"ok: new baby skill {a.name} from {len(d.founders) + 1} atoms"

    def skip(self, a: Skip) -> str:
        self._decide(a.reason, action="skip")
        return "ok: skipped"

    def rename_skill(self, a: RenameSkill) -> str:
        old = self.skills.get(a.skill)
        if old is None or old.state != "baby":
            return "ERROR: only an existing baby skill can be renamed"
        wrong = name_problems(a.new_name)
        if wrong or a.new_name in self.skills:
            return "ERROR: the new name must be free and " + ("; ".join(wrong) or "unused")
        self._decide(a.reason, action="rename", skill=a.skill, new_name=a.new_name)
        return f"ok: {a.skill} → {a.new_name}"

    def move_atom(self, a: MoveAtom) -> str:
        if (
            a.from_skill not in self.skills
            or a.to_skill not in self.skills
            or a.from_skill == a.to_skill
        ):
            return "ERROR: from_skill and to_skill must be two different existing skills"
        self._decide(
            a.reason,
            action="move",
            atom_id=a.atom_id,
            traj_id=traj_of(a.atom_id),
            skill=a.to_skill,
            from_skill=a.from_skill,
            weightscore=a.weightscore,
        )
        return f"ok: {a.atom_id} moves {a.from_skill} → {a.to_skill}"
