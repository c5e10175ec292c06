"""SkillEditAgent with a model: an agent loop that writes a skill's folder from its candidates.

The tools: ``AtomTaskRead`` (a candidate atom), ``ReadTraj`` (a slice of its trajectory view
by offsets), ``read_file`` / ``write_file`` / ``list_files`` (inside the skill folder only:
SKILL.md, scripts/, references/, assets/) and ``validate``. The model sees all pending
candidates at once (consolidating over a pool) and is told the Agent Skills authoring rules
(:data:`xsky.skills.authoring.AUTHORING_RULES`); the validator holds it to them, and while
the folder is invalid the model is asked to fix it (bounded).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel

from activities import llm
from activities.model_tools import ModelTool, tool_loop
from activities.skills.files import read_atom
from xsky.skills.atoms import AtomTask
from xsky.skills.authoring import AUTHORING_RULES, is_draft
from xsky.skills.layout import md_path
from xsky.skills.models import EditInput
from xsky.skills.spec import problems

MAX_TURNS = 24
MAX_FIX_ROUNDS = 3
WRITABLE = re.compile(r"^(SKILL\.md|(scripts|references|assets)/[A-Za-z0-9._\-/]+)$")

SYSTEM_PROMPT = (
    """You maintain one Agent Skill: a folder with SKILL.md (and optional scripts/, references/,
assets/) that teaches a coding agent how to do one kind of task well. You are given the skill's current
files and a pool of atoms: episodes from real sessions of several people where this kind of task was done,
each with its intent, summary, UX score (1-10) and used skills. Read the atoms (AtomTaskRead) and, where
useful, the transcript slices they point to (ReadTraj), then write the new version of the folder with
write_file.

"""
    + AUTHORING_RULES
    + """
Scripts you ship in scripts/ (.sh or .py) are run before the commit and must exit 0 without network access.
Call validate before you finish; fix every problem it reports. Finish by answering without a tool call."""
)


class AtomTaskRead(BaseModel):
    """Read one candidate atom (all fields)."""

    atom_id: str


class ReadTraj(BaseModel):
    """Read a slice of a trajectory's .md view by character offsets."""

    traj_id: str
    offset_start: int
    offset_end: int


def _inside(path: str) -> str:
    if not WRITABLE.match(path) or ".." in path.split("/"):
        raise ValueError("paths are SKILL.md or under scripts/, references/ or assets/ (no '..')")
    return path


SkillPath = Annotated[str, AfterValidator(_inside)]


class ReadFile(BaseModel):
    """Read a file of the skill folder."""

    path: SkillPath


class WriteFile(BaseModel):
    """Write a file of the skill folder (SKILL.md, scripts/…, references/…, assets/…)."""

    path: SkillPath
    content: str


class ListFiles(BaseModel):
    """The files of the skill folder being edited."""


class Validate(BaseModel):
    """Check the folder against the Agent Skills specification and its authoring rules."""


async def model_edit(
    home: Path,
    inp: EditInput,
    atoms: list[AtomTask],
    work: Path,
    target: llm.LLMTarget,
    beat: Callable[[str], None],
    check: Callable[[Path], list[str]],
) -> list[str]:
    """Let the model write the folder; returns ``check``'s problems at the end (empty: valid)."""
    pool = "\n".join(
        f"- {a.atom_id} (traj {a.traj_id}, view {a.offset_start}-{a.offset_end}, weight "
        f"{next((c.weightscore for c in inp.candidates if c.atom_id == a.atom_id), 0)}, UX {a.ux_score}): "
        f"{' '.join(a.intent.split())[:200]}"
        for a in atoms
    )
    current = (
        (work / "SKILL.md").read_text(encoding="utf-8")
        if (work / "SKILL.md").is_file()
        else "(none yet)"
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT.format(slug=inp.slug)},
        {
            "role": "user",
            "content": f"Skill: {inp.slug} (writing version {inp.version} on {'main' if inp.branch == 'baby' else 'staging'}).\n\n"
            f"Current SKILL.md:\n{current}\n\nCandidate atoms:\n{pool}",
        },
    ]
    folder = _Folder(home, work, inp, check)
    async with llm.client_for(target) as client:
        await tool_loop(
            client,
            target,
            messages,
            folder.tools(),
            max_turns=MAX_TURNS,
            beat=lambda turn: beat(f"SkillEditAgent turn {turn}"),
            nudge=folder.fix_request,
            temperature=0.2,
        )
    return check(work)


def checker(
    prompts: Sequence[str], homes: Sequence[str], model: bool = False
) -> Callable[[Path], list[str]]:
    """The validator bound to what this edit's skill must not quote or point to; for a model's
    edit, the offline draft left as it was is a problem too (it would be published)."""

    def check(work: Path) -> list[str]:
        found = problems(work, prompts=prompts, homes=homes)
        skill = work / "SKILL.md"
        if model and skill.is_file() and is_draft(skill.read_text(encoding="utf-8")):
            found.append("SKILL.md is still the offline draft: write the skill itself")
        return found

    return check


class _Folder:
    """The tools of one edit: the candidates and their trajectories, read-only; the skill folder."""

    def __init__(
        self, home: Path, work: Path, inp: EditInput, check: Callable[[Path], list[str]]
    ) -> None:
        self.home, self.work, self.inp, self.check = home, work, inp, check
        self.fixes = 0

    def tools(self) -> list[ModelTool[Any]]:
        return [
            ModelTool.of("AtomTaskRead", AtomTaskRead, self.read_atom),
            ModelTool.of("ReadTraj", ReadTraj, self.read_traj),
            ModelTool.of("list_files", ListFiles, self.list_files),
            ModelTool.of("read_file", ReadFile, self.read_file),
            ModelTool.of("write_file", WriteFile, self.write_file),
            ModelTool.of("validate", Validate, self.validate),
        ]

    def fix_request(self) -> str | None:
        """When the model has finished: ask for fixes while the folder is invalid (bounded)."""
        found = self.check(self.work)
        if not found or self.fixes >= MAX_FIX_ROUNDS:
            return None
        self.fixes += 1
        return "The folder is not valid yet:\n- " + "\n- ".join(found) + "\nFix it with write_file."

    def read_atom(self, a: AtomTaskRead) -> str:
        candidates = self.inp.candidates
        candidate = next((c for c in candidates if c.atom_id == a.atom_id), None)
        if candidate is None:
            return f"ERROR: not a candidate atom; candidates: {', '.join(c.atom_id for c in candidates)}"
        atom = read_atom(self.home, candidate.traj_id, candidate.atom_id)
        return (
            json.dumps(atom.model_dump(mode="json"), ensure_ascii=False)[:40_000]
            if atom
            else "ERROR: the atom file is gone"
        )

    def read_traj(self, a: ReadTraj) -> str:
        if a.traj_id not in {c.traj_id for c in self.inp.candidates}:
            return "ERROR: only the trajectories of the candidate atoms can be read"
        path = md_path(self.home, a.traj_id)
        if not path.is_file():
            return "ERROR: the trajectory view is gone"
        text = path.read_text(encoding="utf-8", errors="replace")
        start, end = a.offset_start, a.offset_end
        return text[max(0, start) : max(start, min(end, start + 12_000))] or "(empty range)"

    def list_files(self, _: ListFiles) -> str:
        files = sorted(str(p.relative_to(self.work)) for p in self.work.rglob("*") if p.is_file())
        return "\n".join(files) or "(empty)"

    def validate(self, _: Validate) -> str:
        found = self.check(self.work)
        return "valid" if not found else "problems:\n- " + "\n- ".join(found)

    def read_file(self, a: ReadFile) -> str:
        target = self.work / a.path
        if not target.is_file():
            return "ERROR: no such file"
        return target.read_text(encoding="utf-8", errors="replace")[:40_000]

    def write_file(self, a: WriteFile) -> str:
        target = self.work / a.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(a.content, encoding="utf-8")
        return f"wrote {a.path} ({len(a.content)} characters)"
