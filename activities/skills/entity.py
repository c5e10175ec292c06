"""One skill's side effects, for its entity workflow: its state, its next version, its canary's verdict.

The entity (``SkillEntityWorkflow``) owns one skill: it loads and writes its
``.candidates.yml`` here, has SkillEditAgent (:mod:`activities.skills.editor`) write the next
version from the pending candidates, and applies the canary's verdict to the skill's git
repository: staging promoted onto main, or discarded under a tag.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio import activity

from activities.skills import git as skill_git
from activities.skills.editor import edit_skill
from activities.skills.files import load_state, skill_dir, write_state
from activities.skills.paired_test import paired_test, trailer
from activities.skills.pipeline import heartbeats, off_loop, skills_model
from xsky.config import Settings
from xsky.skills.models import (
    CandidatesFile,
    EditInput,
    EditResult,
    GitAction,
    GitResult,
    PairedInput,
    PublishFirst,
    SkillEntityInput,
    SkillEntityState,
)
from xsky.skills.paired import RECORD, PairedResult


class EntityActivities:
    def __init__(self, settings: Settings):
        self.settings = settings

    @property
    def home(self) -> Path:
        return self.settings.skills_home

    @activity.defn(name="load_skill_state")
    def load_skill_state(self, inp: SkillEntityInput) -> SkillEntityState:
        state = load_state(self.home, inp.slug)
        if state.staging_commit:  # a staging version carries its paired test in git, if it had one
            state.paired = paired_record(skill_dir(self.home, inp.slug), state.staging_commit)
        return state

    @activity.defn(name="paired_test")
    async def paired_test(self, inp: PairedInput) -> PairedResult:
        async with heartbeats(1.0):
            return await off_loop(paired_test, self.home, inp, skills_model())

    @activity.defn(name="publish_first")
    def publish_first(self, inp: PublishFirst) -> str | None:
        """A first version that passed its paired test: baby is renamed main."""
        repo = skill_dir(self.home, inp.slug)
        if skill_git.branch_commit(repo, "baby") == inp.commit:
            skill_git.rename_baby_to_main(repo)
        return skill_git.branch_commit(repo, "main")

    @activity.defn(name="write_skill_state")
    def write_skill_state(self, f: CandidatesFile) -> None:
        write_state(self.home, f.state)

    @activity.defn(name="edit_skill")
    async def edit_skill(self, inp: EditInput) -> EditResult:
        async with heartbeats(1.0):  # git, the validator and the scripts block: off the event loop
            return await off_loop(edit_skill, self.home, inp, skills_model(), lambda note: None)

    @activity.defn(name="canary_git")
    def canary_git(self, a: GitAction) -> GitResult:
        return canary_git(self.home, a)

    def all(self) -> list[Callable[..., Any]]:
        return [
            self.load_skill_state,
            self.write_skill_state,
            self.edit_skill,
            self.paired_test,
            self.publish_first,
            self.canary_git,
        ]


def paired_record(repo: Path, commit: str) -> PairedResult | None:
    """The paired test committed with a version (its ``.paired.json``), if any: only a record
    committed by the test itself on top of the version it tested counts (never one a version
    carried over from the tree it was written from)."""
    text = skill_git.show(repo, commit, RECORD)
    if not text:
        return None
    try:
        found = PairedResult.model_validate_json(text)
    except ValueError:
        return None
    if trailer(found.version) not in skill_git.message(repo, commit):
        return None
    return found.model_copy(update={"record_commit": commit})


def canary_git(home: Path, a: GitAction) -> GitResult:
    """Promote (main takes staging's tree, a merge commit citing the figures) or discard (an
    annotated tag ``discarded/<sha>`` keeps the version and the figures); staging goes."""
    repo = skill_dir(home, a.slug)
    main = skill_git.branch_commit(repo, "main")
    staging = skill_git.branch_commit(repo, "staging")
    marker = f"Canary-Of: {a.staging_commit}"
    if staging != a.staging_commit:  # done already (a retried activity) or decided by someone else
        return GitResult(main_commit=main, done="already decided")
    if a.action == "promote":
        if main and marker not in skill_git.message(repo, main):
            tree = skill_git.git(repo, "rev-parse", f"{staging}^{{tree}}")
            commit = skill_git.git(
                repo,
                "commit-tree",
                tree,
                "-p",
                main,
                "-p",
                staging,
                "-F",
                "-",
                input_text=f"{a.message}\n\n{marker}\n",
            )
            skill_git.publish(repo, "main", commit, main)
            main = commit
    else:
        skill_git.tag(repo, f"discarded/{staging[:12]}", staging, f"{a.message}\n\n{marker}\n")
    skill_git.delete_branch(repo, "staging", staging)
    skill_git.sync(repo)
    return GitResult(main_commit=main, done=a.action)
