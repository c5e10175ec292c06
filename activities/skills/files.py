"""The skill library on disk: ``<skills home>/skills/<slug>/`` folders, their bookkeeping files,
the catalogue, and reading atoms back.

    skills/<slug>/SKILL.md, scripts/, references/, assets/    the published version (git: main, or baby)
    skills/<slug>/.candidates.yml                             atoms that may shape its next version
    skills/<slug>/.ux_scores.jsonl                            canary scores, bound to (side, commit)
    skills/.decisions.jsonl                                   every TaskClusterAgent decision
    skills/.seeds.json                                        atoms waiting for a second session
    skills/.notes/<digest>.json                               a decision's reason and description

Only the skill's entity workflow writes its ``.candidates.yml`` (through an activity), so
concurrent atoms never race on it; only the library workflow's activities write the seeds.
Workflows carry the digest of a note, never its text (it may quote a transcript).
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from activities.fsio import atomic_write, read_json
from activities.skills import git as skill_git
from xsky.skills.atoms import AtomTask
from xsky.skills.authoring import is_draft
from xsky.skills.clustering import SkillSummary, atom_keywords, skill_keywords
from xsky.skills.evidence import Seed, project_of
from xsky.skills.layout import atom_path
from xsky.skills.models import Candidate, Score, SkillEntityState, edit_weight
from xsky.skills.spec import NAME_RE, description_of

CANDIDATES = ".candidates.yml"
SCORES = ".ux_scores.jsonl"
DECISIONS = ".decisions.jsonl"
SEEDS = ".seeds.json"
NOTES = ".notes"


def library(home: Path) -> Path:
    return home / "skills"


def skill_dir(home: Path, slug: str) -> Path:
    """A skill's folder; only a spec name can name one (no path can be smuggled in)."""
    if not NAME_RE.match(slug) or len(slug) > 64:
        raise ValueError(f"{slug!r} is not a skill name")
    return library(home) / slug


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_atom(home: Path, traj_id: str, aid: str) -> AtomTask | None:
    path = atom_path(home, traj_id, aid)
    return AtomTask.model_validate(read_json(path)) if path.is_file() else None


def slugs(home: Path) -> list[str]:
    root = library(home)
    if not root.is_dir():
        return []
    return sorted(
        p.name
        for p in root.iterdir()
        if p.is_dir()
        and NAME_RE.match(p.name)
        and ((p / ".git").is_dir() or (p / "SKILL.md").is_file())
    )


def published_text(folder: Path) -> tuple[str | None, str]:
    """(SKILL.md text, state) of the version agents may read: main, else a hand-written folder."""
    if skill_git.is_repo(folder):
        main = skill_git.show(folder, "main")
        if main is not None:
            return main, "staging" if skill_git.branch_commit(folder, "staging") else "main"
        return skill_git.show(folder, "baby"), "baby"
    path = folder / "SKILL.md"
    return (path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None), "main"


def summaries(home: Path) -> list[SkillSummary]:
    out = []
    for slug in slugs(home):
        folder = skill_dir(home, slug)
        text, state = published_text(folder)
        description = description_of(text or "")
        # a draft's description is boilerplate: its words would match every draft
        own = "" if is_draft(text) else description
        out.append(
            SkillSummary(
                name=slug,
                description=description,
                state=state,
                keywords=skill_keywords(slug, own, candidate_tags(folder)),
                projects=candidate_projects(folder),
            )
        )
    return out


def candidate_projects(folder: Path) -> list[str]:
    """The projects of the trajectories a skill's candidates come from."""
    data = _yaml(folder / CANDIDATES)
    items = data.get("candidates", []) if isinstance(data, dict) else []
    found = {
        project_of(str(c["traj_id"])) for c in items if isinstance(c, dict) and c.get("traj_id")
    }
    return sorted(found)


# -- seeds and notes ----------------------------------------------------------------------------


def read_seeds(home: Path) -> list[Seed]:
    data = read_json(library(home) / SEEDS) if (library(home) / SEEDS).is_file() else []
    out = []
    for item in data if isinstance(data, list) else []:
        try:
            out.append(Seed.model_validate(item))
        except ValueError:
            continue
    return out


def write_seeds(home: Path, seeds: list[Seed]) -> None:
    atomic_write(
        library(home) / SEEDS,
        json.dumps([s.model_dump(mode="json") for s in seeds], ensure_ascii=False, indent=1),
        sync=True,
    )


def write_note(home: Path, note: dict[str, Any]) -> str:
    """Keep a decision's text on disk; its digest is what workflows carry."""
    data = json.dumps(note, ensure_ascii=False, sort_keys=True)
    ref = hashlib.sha256(data.encode()).hexdigest()[:20]
    path = library(home) / NOTES / f"{ref}.json"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data, sync=True)
    return ref


def read_note(home: Path, ref: str | None) -> dict[str, Any]:
    if not ref or not ref.isalnum():
        return {}
    path = library(home) / NOTES / f"{ref}.json"
    data = read_json(path) if path.is_file() else {}
    return data if isinstance(data, dict) else {}


def candidate_tags(folder: Path) -> list[str]:
    data = _yaml(folder / CANDIDATES)
    tags = data.get("keywords") if isinstance(data, dict) else None
    return [str(t) for t in tags] if isinstance(tags, list) else []


def _yaml(path: Path) -> Any:
    if not path.is_file():
        return {}
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        return {}


def write_state(home: Path, state: SkillEntityState) -> None:
    """Mirror an entity's state to ``.candidates.yml`` and ``.ux_scores.jsonl`` (its own files)."""
    folder = skill_dir(home, state.slug)
    if not folder.is_dir():
        return
    tags: list[str] = []
    for c in state.candidates:
        atom = read_atom(home, c.traj_id, c.atom_id)
        if atom is not None:
            tags += atom.tags + atom.used_skills + atom_keywords(atom)[:20]
    candidates = []
    for c in state.candidates:
        item = c.model_dump(mode="json", by_alias=False, exclude_none=True)
        if not item.get("reason") and c.note_ref:  # the reason, from the decision's note
            item["reason"] = str(read_note(home, c.note_ref).get("reason", ""))
        candidates.append(item)
    doc = {
        "skill": state.slug,
        "state": state.state,
        # what counts toward the next edit (without the founding atom's before the first)
        "cumulative_weightscore": edit_weight(state.candidates, state.state),
        "keywords": list(dict.fromkeys(tags))[:60],
        "candidates": candidates,
    }
    atomic_write(
        folder / CANDIDATES,
        yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120),
        sync=True,
    )
    atomic_write(
        folder / SCORES,
        "".join(json.dumps(s.model_dump(mode="json", by_alias=False)) + "\n" for s in state.scores),
        sync=True,
    )


def load_state(home: Path, slug: str) -> SkillEntityState:
    """An entity's state rebuilt from its folder (a new or restarted entity workflow)."""
    folder = skill_dir(home, slug)
    state = SkillEntityState(slug=slug)
    data = _yaml(folder / CANDIDATES)
    for item in data.get("candidates", []) if isinstance(data, dict) else []:
        try:
            c = Candidate.model_validate(item)
        except ValueError:
            continue
        if c.reason:  # the state goes into the entity's history: the reason stays in a note
            ref = c.note_ref or write_note(home, {"reason": c.reason})
            c = c.model_copy(update={"reason": "", "note_ref": ref})
        state.candidates.append(c)
    scores = folder / SCORES
    if scores.is_file():
        for line in scores.read_text(encoding="utf-8").splitlines():
            try:
                state.scores.append(Score.model_validate_json(line))
            except ValueError:
                continue
    if skill_git.is_repo(folder):
        state.main_commit = skill_git.branch_commit(folder, "main")
        state.staging_commit = skill_git.branch_commit(folder, "staging")
        state.state = "main" if state.main_commit else "baby"
        if state.staging_commit:  # the canary's clock starts when staging was committed, not now
            state.staging_started_at = skill_git.git(
                folder, "log", "-1", "--format=%cI", state.staging_commit
            )
    elif (folder / "SKILL.md").is_file():
        state.state = "main"
    return state


def record_decision(home: Path, decision: dict[str, Any]) -> None:
    path = library(home) / DECISIONS
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"at": now_iso(), **decision}, ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


OFFLINE_MAIN = (
    "written offline by an earlier xsky, not by a model: it is not exported until a model "
    "writes its next version (set XSKY_SKILLS_MODEL), or `skills discard` it"
)


def offline_written(folder: Path, commit: str) -> bool:
    """Whether a version's SKILL.md was written by an offline writer (its ``written_by``):
    earlier xsky versions published such skills to ``main``; they are not worth installing."""
    from xsky.skills.spec import split

    meta = split(skill_git.show(folder, commit) or "")[0].get("metadata")
    return isinstance(meta, dict) and str(meta.get("written_by", "")).startswith("xsky offline")


def export_refusal(folder: Path) -> str | None:
    """Why a skill folder may not be exported, in one sentence (None: it may, from main or as
    a hand-written folder). A draft never leaves the library, nor does a ``main`` that an
    earlier xsky wrote offline."""
    if not skill_git.is_repo(folder):
        return None
    main = skill_git.branch_commit(folder, "main")
    if main:
        return OFFLINE_MAIN if offline_written(folder, main) else None
    from xsky.skills.authoring import DRAFT_UNTIL

    return f"a draft on baby, not a skill yet: it is never exported until {DRAFT_UNTIL}"
