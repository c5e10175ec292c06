"""The skill library's activities: where each new atom goes, and that decision applied.

TaskClusterAgent (:mod:`activities.skills.cluster_agent`) decides for one atom at a time, as
the library workflow (``SkillLibraryWorkflow``) asks; :meth:`LibraryActivities.apply_decision`
carries the decision out: a new baby skill (its own git repository, a draft on ``baby``), an
atom held as a seed until a second session brings another, an atom added to a skill, a baby
skill renamed, or a pending atom moved from one skill to another.

Skills' entities are reached by signal-with-start from here (activities hold the client), so
a skill's entity exists as soon as something is sent to it, and a repeated delivery (an
activity retried) is absorbed by the entity, which dedupes by atom id.

What these activities return to a workflow, or send to one, names atoms, skills and notes
only: a decision's reason and description (which may quote a transcript, even redacted)
are written to ``skills/.notes/<digest>.json`` by ``cluster_atom`` and read back here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError

from activities.skills import git as skill_git
from activities.skills.cluster_agent import cluster
from activities.skills.files import (
    library,
    now_iso,
    read_atom,
    read_note,
    read_seeds,
    record_decision,
    skill_dir,
    summaries,
    write_note,
    write_seeds,
)
from activities.skills.pipeline import heartbeats, off_loop, skills_model
from xsky.config import Settings
from xsky.skills.atoms import AtomTask
from xsky.skills.authoring import draft_skill_md, is_draft
from xsky.skills.clustering import ClusterDecision, atom_keywords, draft_description
from xsky.skills.evidence import Seed, keep, project_of, session_of
from xsky.skills.models import (
    AddCandidates,
    ApplyDecision,
    AtomRef,
    Candidate,
    ClusterOutcome,
    RemoveCandidate,
    RetireRequest,
    SkillEntityInput,
    entity_workflow_id,
    traj_of,
)
from xsky.skills.recurrence import shape_of
from xsky.skills.spec import render, slugify, split


class LibraryActivities:
    def __init__(self, settings: Settings):
        self.settings = settings

    @property
    def home(self) -> Path:
        return self.settings.skills_home

    # -- clustering ------------------------------------------------------------------------------

    @activity.defn(name="cluster_atom")
    async def cluster_atom(self, ref: AtomRef) -> ClusterOutcome:
        atom = await asyncio.to_thread(read_atom, self.home, ref.traj_id, ref.atom_id)
        if atom is None:
            return ClusterOutcome(
                decisions=[
                    ClusterDecision(
                        action="skip",
                        atom_id=ref.atom_id,
                        traj_id=ref.traj_id,
                        reason="the atom file is gone",
                    )
                ]
            )
        skills = await asyncio.to_thread(summaries, self.home)
        seeds = await asyncio.to_thread(read_seeds, self.home)
        async with heartbeats(1.0):
            decisions = await off_loop(
                cluster, atom, skills, seeds, skills_model(), lambda note: None
            )
        return ClusterOutcome(decisions=[self._referenced(d) for d in decisions])

    def _referenced(self, d: ClusterDecision) -> ClusterDecision:
        """The decision as it may travel: its text in a note, the note's digest in its place."""
        ref = write_note(
            self.home,
            {
                "atom_id": d.atom_id,
                "action": d.action,
                "reason": d.reason,
                "description": d.description,
            },
        )
        return d.referenced(ref)

    @activity.defn(name="apply_decision")
    async def apply_decision(self, inp: ApplyDecision) -> str:
        d = inp.decision
        text = await asyncio.to_thread(read_note, self.home, d.note_ref)
        full = d.model_copy(
            update={
                "reason": str(text.get("reason") or d.reason),
                "description": text.get("description") or d.description,
            }
        )
        client = activity.client()
        note: str = d.action
        if d.action == "new" and d.skill:
            name = await asyncio.to_thread(free_name, self.home, d.skill)
            d = d.model_copy(update={"skill": name})
            founders = await asyncio.to_thread(self._founders, d)
            await asyncio.to_thread(new_skill_folder, self.home, d, [a for _, a in founders])
            candidates = [
                _candidate(d, seed.atom_id, seed.traj_id, seed.weightscore)
                for seed, _ in founders
                if seed.atom_id != d.atom_id
            ] + [_candidate(d, d.atom_id, d.traj_id, d.weightscore, founding=True)]
            await self._deliver(client, name, candidates, inp.heartbeat_timeout)
            await asyncio.to_thread(self._join, [a for _, a in founders], d, name)
            note = f"new baby skill {name} from {len(candidates)} atoms"
        elif d.action == "seed":
            held = await asyncio.to_thread(self._seed, d)
            note = f"held as a seed ({held} waiting)"
        elif d.action == "add" and d.skill:
            await self._deliver(
                client,
                d.skill,
                [_candidate(d, d.atom_id, d.traj_id, d.weightscore)],
                inp.heartbeat_timeout,
            )
            atom = await asyncio.to_thread(read_atom, self.home, d.traj_id, d.atom_id)
            await asyncio.to_thread(self._join, [atom] if atom else [], d, d.skill)
            note = f"added to {d.skill}"
        elif d.action == "rename" and d.skill and d.new_name:
            note = await self._rename(client, d.skill, d.new_name, inp.heartbeat_timeout)
        elif d.action == "move" and d.from_skill and d.skill:
            handle = client.get_workflow_handle(
                entity_workflow_id(self.settings.task_queue, d.from_skill)
            )
            try:
                moved = await handle.execute_update(
                    "remove_candidate", RemoveCandidate(atom_id=d.atom_id), result_type=Candidate
                )
            except (RPCError, WorkflowUpdateFailedError):
                moved = None
            if moved is not None:
                await self._deliver(
                    client,
                    d.skill,
                    [
                        moved.model_copy(
                            update={
                                "weightscore": d.weightscore,
                                "reason": "",
                                "note_ref": d.note_ref,
                                "by": d.by,
                                "added_at": "",
                                "founding": False,
                            }
                        )
                    ],
                    inp.heartbeat_timeout,
                )
            note = (
                f"moved {d.atom_id} {d.from_skill} → {d.skill}"
                if moved
                else f"{d.atom_id} was not pending in {d.from_skill}"
            )
        await asyncio.to_thread(
            record_decision,
            self.home,
            {
                **full.model_dump(mode="json", by_alias=False),
                "skill": d.skill,
                "applied": note,
            },
        )
        return note

    # -- seeds ---------------------------------------------------------------------------------------

    def _seed(self, d: ClusterDecision) -> int:
        atom = read_atom(self.home, d.traj_id, d.atom_id)
        seeds = read_seeds(self.home)
        if atom is not None:
            seeds = keep(seeds, _as_seed(atom, d))
            write_seeds(self.home, seeds)
        return len(seeds)

    def _join(self, atoms: list[AtomTask], d: ClusterDecision, skill: str) -> None:
        """The atoms are a skill's now: kept, by kind, so a later atom of the same kind of task
        joins that skill (never waiting as a seed, never founding another)."""
        seeds = read_seeds(self.home)
        for atom in atoms:
            member = _as_seed(atom, d).model_copy(update={"joined": skill, "name": skill})
            seeds = keep(seeds, member)
        write_seeds(self.home, seeds)

    def _founders(self, d: ClusterDecision) -> list[tuple[Seed, AtomTask]]:
        """The founding atoms that can still be read: the seeds named, then the new atom."""
        seeds = {s.atom_id: s for s in read_seeds(self.home)}
        out = []
        for aid in [*d.founders, d.atom_id]:
            seed = seeds.get(aid)
            traj = seed.traj_id if seed else d.traj_id if aid == d.atom_id else traj_of(aid)
            atom = read_atom(self.home, traj, aid)
            if atom is None:
                continue
            out.append((seed or _as_seed(atom, d), atom))
        return out

    async def _rename(self, client: Client, old: str, new: str, heartbeat: float) -> str:
        src, dest = skill_dir(self.home, old), skill_dir(self.home, new)
        if src.is_dir() and not dest.exists():
            os.rename(src, dest)
        pending: list[Candidate] = []
        with contextlib.suppress(RPCError, WorkflowUpdateFailedError):
            pending = await client.get_workflow_handle(
                entity_workflow_id(self.settings.task_queue, old)
            ).execute_update("retire", RetireRequest(renamed_to=new), result_type=list[Candidate])
        if dest.is_dir():
            await asyncio.to_thread(_retitle, dest, new)
        await self._deliver(client, new, pending, heartbeat)
        return f"renamed {old} → {new} ({len(pending)} candidates moved)"

    async def _deliver(
        self, client: Client, slug: str, candidates: list[Candidate], heartbeat: float
    ) -> None:
        # By name, as every workflow an activity starts: activities never import workflows.
        await client.start_workflow(
            "SkillEntityWorkflow",
            SkillEntityInput(slug=slug, heartbeat_timeout=heartbeat),
            id=entity_workflow_id(self.settings.task_queue, slug),
            task_queue=self.settings.skills_queue,
            start_signal="add_candidates",
            start_signal_args=[AddCandidates(candidates=candidates)],
            static_summary=f"skill {slug}: candidates, edits, canary",
        )

    def all(self) -> list[Callable[..., Any]]:
        return [self.cluster_atom, self.apply_decision]


def _candidate(
    d: ClusterDecision, atom_id: str, traj_id: str, weight: int, founding: bool = False
) -> Candidate:
    """A candidate as it is sent to an entity: the decision's note by reference, no text."""
    return Candidate(
        atom_id=atom_id,
        traj_id=traj_id,
        weightscore=weight,
        reason="",
        note_ref=d.note_ref,
        by=d.by,
        added_at=now_iso(),
        founding=founding,
    )


def _as_seed(atom: AtomTask, d: ClusterDecision) -> Seed:
    return Seed(
        atom_id=atom.atom_id,
        traj_id=atom.traj_id,
        session=session_of(atom),
        project=project_of(atom.traj_id),
        weightscore=d.weightscore if d.atom_id == atom.atom_id else 0,
        keywords=atom_keywords(atom),
        name=d.skill if d.atom_id == atom.atom_id else None,
        added_at=now_iso(),
        shape=shape_of(atom),
    )


def free_name(home: Path, wanted: str) -> str:
    """``wanted``, or the next free variant when a folder of that name exists but is not a skill
    of ours (never turn someone's folder into a repository, never reset its files)."""
    folder = skill_dir(home, wanted)
    if not folder.exists() or skill_git.is_repo(folder):
        return wanted
    taken = {p.name for p in library(home).iterdir()} if library(home).is_dir() else set()
    return slugify(wanted, taken)


def new_skill_folder(home: Path, d: ClusterDecision, atoms: list[AtomTask]) -> None:
    """A baby skill: its own git repository, a first SKILL.md on ``baby`` (not public yet): a
    draft made of its name and the counts of its evidence (no prompt, path or id)."""
    folder = skill_dir(home, d.skill or "")
    if folder.exists() and not skill_git.is_repo(folder):
        raise ValueError(f"{folder} exists and is not a skill repository; it is left alone")
    if skill_git.is_repo(folder) and (
        skill_git.branch_commit(folder, "baby") or skill_git.branch_commit(folder, "main")
    ):
        return  # made already (a retried activity)
    scratch = home / ".staging" / "new" / (d.skill or "")
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    (scratch / "SKILL.md").write_text(draft_skill_md(d.skill or "", atoms), encoding="utf-8")
    founders = ", ".join(a.atom_id for a in atoms)
    skill_git.init(
        folder,
        scratch,
        f"new_skill_folder: {d.skill} (a draft)\n\nFounding atoms: {founders}\nDecided by: {d.by}\n",
    )
    shutil.rmtree(scratch, ignore_errors=True)


def _retitle(folder: Path, new: str) -> None:
    """A renamed baby skill: its SKILL.md says its new name (committed on baby)."""
    text = skill_git.show(folder, "baby")
    if text is None:
        return
    front, body = split(text)
    if front.get("name") == new:
        return
    scratch = folder.parent / ".staging-rename" / new
    if scratch.exists():
        shutil.rmtree(scratch)
    skill_git.export(folder, "baby", scratch)
    meta = front.get("metadata") if isinstance(front.get("metadata"), dict) else None
    description = draft_description(new) if is_draft(text) else str(front.get("description", ""))
    (scratch / "SKILL.md").write_text(render(new, description, body, meta), encoding="utf-8")
    tip = skill_git.branch_commit(folder, "baby")
    commit = skill_git.commit_tree(folder, scratch, tip, f"rename baby skill to {new}\n")
    skill_git.publish(folder, "baby", commit, tip)
    skill_git.sync(folder)
    shutil.rmtree(scratch.parent, ignore_errors=True)
