"""What SkillEditAgent is told to write, and what is written when there is no model: a draft.

With a model, the Agent Skills authoring rules (:data:`AUTHORING_RULES`, in the model's
system prompt; :mod:`xsky.skills.rules` checks them): the description is the trigger — what
the skill does and when, in the user's words; the body is imperative steps, commands and
pitfalls drawn from the atoms that went badly; no absolute paths, no atom ids, no quotes.

Without one, nothing pretends to be a skill: :func:`draft_skill_md` says it is a draft,
what evidence was gathered (counts only — no prompts, tool counts, paths or ids) and what
it needs (a model), and it stays on ``baby``: never merged to ``main``, promoted or exported.
"""

from __future__ import annotations

from collections.abc import Sequence

from xsky.skills.atoms import AtomTask
from xsky.skills.evidence import session_of
from xsky.skills.models import EDIT_THRESHOLD
from xsky.skills.spec import render

NEEDS_MODEL = "needs a model to write: set XSKY_SKILLS_MODEL"
# Why a draft stays one, true whether a model is configured or not (`skills list` says which).
DRAFT_UNTIL = (
    f"a model writes its first version once its evidence reaches weight {EDIT_THRESHOLD} "
    "(XSKY_SKILLS_MODEL on the skills worker; `skills list` shows how far it is)"
)
DRAFT_STATE = "draft"

AUTHORING_RULES = """SKILL.md must follow the Agent Skills specification and its authoring rules:
- front matter with only: name (exactly "{slug}"), description, optional license, compatibility,
  and metadata (a map of strings to strings, for anything else) — no allowed-tools: a skill
  pre-approves nothing;
- no step that runs what it downloads (curl … | sh, bash <(curl …), iwr … | iex): name the
  package, or download, check, then run;
- the description is the trigger: one or two sentences saying what the skill does AND when to use
  it ("... Use when ..."), in the words a user would use when asking for this kind of task; 1-1024
  characters, no < or >, never a list of keywords;
- the body (at most 500 lines) is imperative: numbered steps, the exact commands, how to verify, and
  the pitfalls seen in the atoms with low UX scores. Focused beats comprehensive; move long detail
  into references/;
- never an absolute path of the machine the sessions were recorded on (/home/..., /Users/...,
  C:\\..., /tmp/...): write paths relative to the project, or ~ / $HOME;
- never an atom or trajectory id (atom_..., traj_...): the agent reading the skill cannot open them;
- never quote the recorded prompts or the transcript: no "When to use" list of what people typed;
  describe situations and steps in your own words."""


def draft_skill_md(slug: str, atoms: Sequence[AtomTask], version: int = 0) -> str:
    """A baby skill's draft: honest about being one, with counts of the evidence only."""
    words = slug.replace("-", " ")
    sessions = len({session_of(a) for a in atoms})
    scores = [a.ux_score for a in atoms]
    used = sorted({s for a in atoms for s in a.used_skills})
    lines = [
        f"# {words.capitalize()} (draft)",
        "",
        "**Draft, not a skill yet.** xsky has seen this kind of task in "
        f"{len(atoms)} task(s) from {sessions} session(s), but it writes skills only with a model. "
        "Set `XSKY_SKILLS_MODEL` on the worker (with `OPENAI_BASE_URL` or `OPENAI_API_KEY`) and the "
        "next edit writes the first version from all the evidence gathered. Until then this draft "
        "stays on the `baby` branch: it is not published, promoted or exported.",
        "",
        "## Evidence so far",
        "",
        f"- {len(atoms)} task(s) from {sessions} session(s)",
    ]
    if scores:
        lines.append(f"- UX score of those tasks: mean {sum(scores) / len(scores):.1f} of 10")
    if used:
        lines.append(f"- skills used in them: {', '.join(used[:10])}")
    description = (
        f"Draft of a skill to {words}, not written yet. Use when asked to {words}, once a model "
        "has written its steps."
    )
    metadata = {
        "state": DRAFT_STATE,
        "version": str(version),
        "evidence": f"{len(atoms)} tasks from {sessions} sessions",
        "written_by": f"xsky offline: a draft ({NEEDS_MODEL})",
    }
    return render(slug, description, "\n".join(lines), metadata)


def is_draft(text: str | None) -> bool:
    """Whether a SKILL.md is an offline draft (its ``metadata.state``)."""
    from xsky.skills.spec import split

    if not text:
        return False
    meta = split(text)[0].get("metadata")
    return isinstance(meta, dict) and meta.get("state") in (DRAFT_STATE, "baby")
