"""TaskClusterAgent: where one new atom belongs in the skill library, decided by a model or offline.

The model sees the atom and the catalogue (names always; descriptions capped at 300
characters and dropped to stay within 25,000 characters) and answers with one of the
tools below; each call is checked on arrival (a known skill, a weightscore 0–10, a new
baby skill only for an atom worth ≥ 7, renames of baby skills only, a spec-valid name).
Without a model, :func:`xsky.skills.clustering.offline_decide` decides by tag and keyword
similarity. The caller records and applies every decision.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

from activities import llm
from xsky.skills.atoms import AtomTask
from xsky.skills.clustering import (
    NEW_SKILL_MIN,
    ClusterDecision,
    SkillSummary,
    catalogue,
    offline_decide,
)
from xsky.skills.models import traj_of
from xsky.skills.spec import NAME_RE

MAX_TURNS = 6

SYSTEM_PROMPT = f"""You organise a library of Agent Skills learned from coding sessions. For one new atom (an episode
of a person's intent: what they wanted, what happened, how well it went), decide where it belongs:
- add_to_skill: it is evidence for an existing skill; give a weightscore 0-10 for how much it can teach that
  skill (10: a clean, complete, reusable example; 0: barely related) and a one-line reason;
- new_skill_folder: it starts a new skill nobody has yet; only for an atom worth >= {NEW_SKILL_MIN}; the name is
  lowercase a-z, 0-9 and hyphens (<= 64), naming the kind of task, not this one instance;
- skip: it is not reusable (chit-chat, a one-off lookup), with a reason.
You may also call rename_skill for a baby skill whose name no longer fits, and move_atom to move an earlier atom
to a better skill. Call exactly one of add_to_skill / new_skill_folder / skip for the new atom."""

_S = {"type": "string"}
_W = {"type": "integer", "minimum": 0, "maximum": 10}
_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "add_to_skill",
            "parameters": {
                "type": "object",
                "required": ["skill", "weightscore", "reason"],
                "properties": {"skill": _S, "weightscore": _W, "reason": _S},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "new_skill_folder",
            "parameters": {
                "type": "object",
                "required": ["name", "description", "weightscore", "reason"],
                "properties": {"name": _S, "description": _S, "weightscore": _W, "reason": _S},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "skip",
            "parameters": {"type": "object", "required": ["reason"], "properties": {"reason": _S}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "rename_skill",
            "parameters": {
                "type": "object",
                "required": ["skill", "new_name", "reason"],
                "properties": {"skill": _S, "new_name": _S, "reason": _S},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "move_atom",
            "parameters": {
                "type": "object",
                "required": ["atom_id", "from_skill", "to_skill", "weightscore", "reason"],
                "properties": {
                    "atom_id": _S,
                    "from_skill": _S,
                    "to_skill": _S,
                    "weightscore": _W,
                    "reason": _S,
                },
            },
        },
    },
]


def atom_card(atom: AtomTask) -> str:
    return (
        f"atom {atom.atom_id} (trajectory {atom.traj_id})\nintent: {atom.intent}\nsummary: {atom.summary}\n"
        f"tags: {', '.join(atom.tags)}\nused skills: {', '.join(atom.used_skills) or 'none'}\nux_score: {atom.ux_score}"
    )


async def cluster(
    atom: AtomTask,
    skills: list[SkillSummary],
    target: llm.LLMTarget | None,
    beat: Callable[[str], None],
) -> list[ClusterDecision]:
    if target is None:
        return [offline_decide(atom, skills)]
    by_name = {s.name: s for s in skills}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": f"The skill catalogue:\n{catalogue(skills)}\n\nThe new atom:\n{atom_card(atom)}",
        },
    ]
    decisions: list[ClusterDecision] = []
    client = llm.client_for(target)
    try:
        for turn in range(MAX_TURNS):
            response = await llm.chat(client, target, messages, _TOOLS, 0)
            beat(f"TaskClusterAgent turn {turn + 1}")
            message = response.choices[0].message
            messages.append(llm.as_message(message))
            if not message.tool_calls:
                if any(
                    d.atom_id == atom.atom_id and d.action in ("add", "new", "skip")
                    for d in decisions
                ):
                    break
                messages.append(
                    {
                        "role": "user",
                        "content": "Decide for the new atom: add_to_skill, new_skill_folder or skip.",
                    }
                )
                continue
            for call in message.tool_calls:
                answer = _check(
                    call.function.name, call.function.arguments, atom, by_name, decisions
                )
                messages.append({"role": "tool", "tool_call_id": call.id, "content": answer})
            if any(
                d.atom_id == atom.atom_id and d.action in ("add", "new", "skip") for d in decisions
            ):
                break
    finally:
        await client.close()
    if not any(d.atom_id == atom.atom_id and d.action in ("add", "new", "skip") for d in decisions):
        fallback = offline_decide(atom, skills)
        fallback.reason = f"the model gave no decision; offline: {fallback.reason}"
        decisions.append(fallback)
    return decisions


def _check(
    name: str,
    raw: str | None,
    atom: AtomTask,
    skills: dict[str, SkillSummary],
    decisions: list[ClusterDecision],
) -> str:
    try:
        args = json.loads(raw or "{}")
        if not isinstance(args, dict):
            raise ValueError
    except ValueError:
        return f"ERROR: the arguments of {name} must be a JSON object"
    reason = str(args.get("reason", ""))[:500]
    decision = partial(
        ClusterDecision, atom_id=atom.atom_id, traj_id=atom.traj_id, by="model", reason=reason
    )
    weight = args.get("weightscore", 0)
    if name in ("add_to_skill", "new_skill_folder", "move_atom") and (
        not isinstance(weight, int) or not 0 <= weight <= 10
    ):
        return "ERROR: weightscore must be a whole number from 0 to 10"
    if name == "add_to_skill":
        skill = str(args.get("skill", ""))
        if skill not in skills:
            return f"ERROR: no skill {skill!r}; skills: {', '.join(skills) or 'none yet (use new_skill_folder)'}"
        decisions.append(decision(action="add", skill=skill, weightscore=weight))
        return f"ok: {atom.atom_id} → {skill} (weight {weight})"
    if name == "new_skill_folder":
        skill = str(args.get("name", ""))
        if not NAME_RE.match(skill) or len(skill) > 64:
            return "ERROR: the name must be 1-64 characters of a-z, 0-9 and single hyphens inside"
        if skill in skills:
            return f"ERROR: {skill!r} exists; use add_to_skill"
        if weight < NEW_SKILL_MIN:
            return f"ERROR: a new skill needs an atom worth at least {NEW_SKILL_MIN}; add it to a skill or skip it"
        description = (
            " ".join(str(args.get("description", "")).split())
            .replace("<", "(")
            .replace(">", ")")[:1024]
        )
        decisions.append(
            decision(action="new", skill=skill, weightscore=weight, description=description)
        )
        return f"ok: new baby skill {skill}"
    if name == "skip":
        decisions.append(decision(action="skip"))
        return "ok: skipped"
    if name == "rename_skill":
        old, new = str(args.get("skill", "")), str(args.get("new_name", ""))
        if old not in skills or skills[old].state != "baby":
            return "ERROR: only an existing baby skill can be renamed"
        if not NAME_RE.match(new) or new in skills:
            return "ERROR: the new name must be a free, valid name (a-z, 0-9, hyphens)"
        decisions.append(decision(action="rename", skill=old, new_name=new))
        return f"ok: {old} → {new}"
    if name == "move_atom":
        moved, source, dest = (
            str(args.get("atom_id", "")),
            str(args.get("from_skill", "")),
            str(args.get("to_skill", "")),
        )
        if source not in skills or dest not in skills or source == dest:
            return "ERROR: from_skill and to_skill must be two different existing skills"
        decisions.append(
            ClusterDecision(
                action="move",
                atom_id=moved,
                traj_id=traj_of(moved),
                skill=dest,
                from_skill=source,
                weightscore=weight,
                by="model",
                reason=reason,
            )
        )
        return f"ok: {moved} moves {source} → {dest}"
    return f"ERROR: unknown tool {name!r}"
