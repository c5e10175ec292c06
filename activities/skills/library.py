"""The skill library's activities: TaskClusterAgent, applying its decisions, the entities' files,
SkillEditAgent, canary git operations, and routing a delta's atoms into all of it.

Entities and the library are reached by signal-with-start from here (activities hold the
client), so a skill's entity exists as soon as something is sent to it, and a repeated
delivery (an activity retried) is absorbed by the entity, which dedupes by atom id.

What these activities return to a workflow, or send to one, names atoms, skills and notes
only: a decision's reason and description (which may quote a transcript, even redacted)
are written to ``skills/.notes/<digest>.json`` by ``cluster_atom`` and read back here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
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
from activities.skills.editor import edit_skill
from activities.skills.files import (
    library,
    load_state,
    now_iso,
    read_atom,
    read_note,
    read_seeds,
    record_decision,
    skill_dir,
    summaries,
    write_note,
    write_seeds,
    write_state,
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
    CandidatesFile,
    ClusterOutcome,
    ClusterRequest,
    EditInput,
    EditResult,
    GitAction,
    GitResult,
    LibraryInput,
    RecordScores,
    RemoveCandidate,
    RetireRequest,
    RouteInput,
    Score,
    SkillEntityInput,
    SkillEntityState,
    entity_workflow_id,
    library_workflow_id,
    traj_of,
)
from xsky.skills.spec import NAME_RE, render, slugify, split


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
            await asyncio.to_thread(self._unseed, {c.atom_id for c in candidates})
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
            await asyncio.to_thread(self._unseed, {d.atom_id})
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

    def _unseed(self, ids: set[str]) -> None:
        seeds = read_seeds(self.home)
        kept = [s for s in seeds if s.atom_id not in ids]
        if len(kept) != len(seeds):
            write_seeds(self.home, kept)

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

    # -- the entities' files ---------------------------------------------------------------------

    @activity.defn(name="load_skill_state")
    def load_skill_state(self, inp: SkillEntityInput) -> SkillEntityState:
        return load_state(self.home, inp.slug)

    @activity.defn(name="write_skill_state")
    def write_skill_state(self, f: CandidatesFile) -> None:
        write_state(self.home, f.state)

    # -- SkillEditAgent and the canary -------------------------------------------------------------

    @activity.defn(name="edit_skill")
    async def edit_skill(self, inp: EditInput) -> EditResult:
        async with heartbeats(1.0):  # git, the validator and the scripts block: off the event loop
            return await off_loop(edit_skill, self.home, inp, skills_model(), lambda note: None)

    @activity.defn(name="canary_git")
    def canary_git(self, a: GitAction) -> GitResult:
        return canary_git(self.home, a)

    # -- after a delta's commit --------------------------------------------------------------------

    @activity.defn(name="route_atoms")
    async def route_atoms(self, inp: RouteInput) -> int:
        """New atoms to the library; UX scores of atoms that used a library skill to that skill."""
        client = activity.client()
        if inp.new_atoms:
            await client.start_workflow(
                "SkillLibraryWorkflow",
                LibraryInput(heartbeat_timeout=inp.heartbeat_timeout),
                id=library_workflow_id(self.settings.task_queue),
                task_queue=self.settings.skills_queue,
                start_signal="cluster",
                start_signal_args=[ClusterRequest(atoms=inp.new_atoms)],
                static_summary="skill library: TaskClusterAgent for every new atom",
            )
        scores = await asyncio.to_thread(scores_of, self.home, inp)
        for slug, items in scores.items():
            await client.start_workflow(
                "SkillEntityWorkflow",
                SkillEntityInput(slug=slug, heartbeat_timeout=inp.heartbeat_timeout),
                id=entity_workflow_id(self.settings.task_queue, slug),
                task_queue=self.settings.skills_queue,
                start_signal="record_scores",
                start_signal_args=[RecordScores(scores=items)],
            )
        return len(inp.new_atoms) + sum(len(v) for v in scores.values())

    def all(self) -> list[Callable[..., Any]]:
        return [
            self.cluster_atom,
            self.apply_decision,
            self.load_skill_state,
            self.write_skill_state,
            self.edit_skill,
            self.canary_git,
            self.route_atoms,
        ]


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


def scores_of(home: Path, inp: RouteInput) -> dict[str, list[Score]]:
    """UX scores bound to (skill, side, commit) for atoms that used skills of the library.

    An xsky agent's transcript says which side and commit it read (its first line). A Claude
    Code or Codex session read whatever the exported folder showed at the time it used the
    skill: the side of the switch in force then, from the skill's switch log (see
    :mod:`activities.skills.canary_use`); with no log (never exported by ``skills export``
    since it logs), ``main`` as it is now.
    """
    from activities.skills.canary_use import exported_side

    sides = _transcript_skills(inp.path) if inp.kind == "xsky" else {}
    out: dict[str, list[Score]] = {}
    for ref in inp.scored_atoms:
        atom = read_atom(home, ref.traj_id, ref.atom_id)
        if atom is None or atom.provenance.used_skills_by != "measured":
            continue
        for name in atom.used_skills:
            if not NAME_RE.match(name):
                continue  # not a name the library can hold (a plugin's ``ns:name``)
            folder = skill_dir(home, name)
            if not skill_git.is_repo(folder):
                continue
            bound = (
                sides.get(name, ("main", skill_git.branch_commit(folder, "main"), ""))
                if inp.kind == "xsky"
                else exported_side(folder, atom, name)
            )
            if bound is None:
                continue  # a canary-exported skill used at a moment that cannot be read back
            side, commit, at = bound
            if commit:
                out.setdefault(name, []).append(
                    Score(
                        traj_id=atom.traj_id,
                        side=side,  # type: ignore[arg-type]  # as the transcript says; Score validates it
                        commit=commit,
                        score=atom.ux_score,
                        atom_id=atom.atom_id,
                        at=at or now_iso(),
                    )
                )
    return out


def _transcript_skills(path: str) -> dict[str, tuple[str, str | None, str]]:
    """Which side and commit of each bound skill an xsky agent read (its transcript's first
    line), with no time of use: the run was assigned its side for its whole length."""
    try:
        with open(path, encoding="utf-8") as fh:
            first = json.loads(fh.readline())
    except (OSError, ValueError):
        return {}
    found: dict[str, tuple[str, str | None, str]] = {}
    for item in first.get("skills", []) if isinstance(first, dict) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str) and item.get("commit"):
            found[item["name"]] = (str(item.get("side", "main")), str(item["commit"]), "")
    return found
