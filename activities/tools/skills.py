"""Skills an agent can use: listed in its system prompt, read with read_skill.

A role's ``skillNames`` bind skills of the library (``<XSKY_SKILLS_HOME>/skills/<name>/``,
each its own git repository; a plain folder with a SKILL.md works too). An agent reads
the published version (``main``) — unless the skill has a ``staging`` version under
canary, in which case the run is assigned a side, sticky by ``sha256(<run id>:<skill>)``
with p = 0.2 for staging. The side and commit read are recorded in the agent's transcript,
so the UX score of that conversation counts for exactly that version.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from activities.sandbox.confine import open_inside
from activities.skills import git as skill_git
from activities.tools import ToolError, cap_text
from xsky.skills import canary
from xsky.skills.spec import description_of

SKILL_BYTES = 1 << 20  # of a hand-written SKILL.md: read_skill gives an agent 40,000 characters


def _own_file(folder: Path, name: str) -> str | None:
    """A hand-written skill's file, if it is a regular file of its folder: never a link (a
    skill from elsewhere whose SKILL.md links to ~/.aws/credentials would have the worker,
    outside the sandbox, hand that file to an agent), never a FIFO that blocks the read."""
    try:
        fd = open_inside(folder, folder.resolve() / name, os.O_RDONLY)
    except (ToolError, OSError):  # missing, a link, not a regular file
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(SKILL_BYTES).decode("utf-8", errors="replace")


@dataclass(frozen=True)
class SkillCopy:
    name: str
    side: str  # main | staging
    commit: str  # "" for a folder that is not a git repository
    text: str


@dataclass(frozen=True)
class SkillLibrary:
    """The worker's skill library (``folder``: its skills home's ``skills``) as one run reads it."""

    folder: Path
    run_id: str = ""

    def resolve(self, name: str) -> SkillCopy | None:
        """The version of ``name`` this run reads, or None when it has no published version."""
        folder = self.folder / name
        if not folder.is_dir() or "/" in name or name.startswith("."):
            return None
        if not skill_git.is_repo(folder):
            text = _own_file(folder, "SKILL.md")
            return SkillCopy(name, "main", "", text) if text is not None else None
        main = skill_git.branch_commit(folder, "main")
        if main is None:
            return None  # a baby skill is not public
        staging = skill_git.branch_commit(folder, "staging")
        if staging and canary.assign(self.run_id, name) == "staging":
            text = skill_git.show(folder, staging)
            if text is not None:
                return SkillCopy(name, "staging", staging, text)
        text = skill_git.show(folder, main)
        return SkillCopy(name, "main", main, text) if text is not None else None

    def listing(self, names: list[str]) -> str:
        """'- name: description' for each bound skill that has a readable version."""
        lines = []
        for name in names:
            copy = self.resolve(name)
            if copy is not None:
                lines.append(f"- {name}: {description_of(copy.text)}".rstrip(": "))
        return "\n".join(lines)

    def read(self, name: str, allowed: list[str]) -> str:
        """The read_skill tool: the text of a skill bound to the agent's role."""
        if name not in allowed:
            raise ToolError(
                f"skill {name!r} is not bound to this role; bound skills: {', '.join(allowed) or 'none'}"
            )
        copy = self.resolve(name)
        if copy is None:
            raise ToolError(f"skill {name!r} has no published version under {self.folder}")
        return cap_text(copy.text, 40_000, "skill")[0]

    def versions(self, names: list[str]) -> list[dict[str, str]]:
        """Which side and commit of each bound skill this run reads (for its transcript)."""
        found = []
        for name in names:
            copy = self.resolve(name)
            if copy is not None:
                found.append({"name": name, "side": copy.side, "commit": copy.commit})
        return found
