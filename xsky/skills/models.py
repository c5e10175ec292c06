"""Inputs, outputs and state of the skill library's workflows and activities (one model each).

Atom text never travels through Temporal: atoms are referenced by (trajectory, atom id)
and read from the skills home by the activities that need them. Nor does any text made
from it (a model's reason, a description): that is kept in ``skills/.notes/<digest>.json``
and referenced by its digest (``note_ref``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from xsky.skills.clustering import ClusterDecision
from xsky.skills.paired import PairedResult, ScoreKind
from xsky.wire import WireModel as Wire

SkillState = Literal["baby", "main", "retired"]
EDIT_THRESHOLD = 10  # cumulative weightscore of pending candidates that triggers SkillEditAgent
KEEP_EVENTS = 60
KEEP_CONSUMED = 50


class AtomRef(Wire):
    traj_id: str
    atom_id: str


class Candidate(Wire):
    """One atom's contribution to a skill, as recorded in its ``.candidates.yml``."""

    atom_id: str
    traj_id: str
    weightscore: int = Field(ge=0, le=10)
    reason: str = ""
    added_at: str = ""
    by: str = "offline"
    status: Literal["pending", "consumed"] = "pending"
    commit: str | None = None  # the commit that consumed it
    # the atom whose decision founded the skill: its weight does not count toward the first
    # version (one atom never publishes a skill)
    founding: bool = False
    note_ref: str | None = None  # the decision's reason, in skills/.notes/<note_ref>.json


def edit_weight(candidates: list[Candidate], state: str) -> int:
    """The cumulative weightscore that triggers SkillEditAgent: pending candidates, without the
    founding atom's weight while the skill has no published version."""
    return sum(
        c.weightscore
        for c in candidates
        if c.status == "pending" and not (c.founding and state == "baby")
    )


class Score(Wire):
    """A UX score bound to (skill, side, commit); one per (trajectory, side)."""

    traj_id: str
    side: Literal["main", "staging"]
    commit: str
    score: int = Field(ge=1, le=10)
    atom_id: str = ""
    at: str = ""
    by: ScoreKind = "heuristic"  # how the UX score was made (the atom's ux_score_by)


class SkillEvent(Wire):
    at: str
    kind: str
    text: str


class SkillEntityState(Wire):
    slug: str
    state: SkillState = "baby"
    main_commit: str | None = None
    staging_commit: str | None = None
    staging_started_at: str | None = None
    candidates: list[Candidate] = Field(default_factory=list)
    scores: list[Score] = Field(default_factory=list)
    last_edit_error: str | None = None
    edits: int = 0
    failed_edits: int = 0
    blocked_at_weight: int | None = None  # a failed edit waits for more weight than this
    events: list[SkillEvent] = Field(default_factory=list)
    retired_to: str | None = None
    # the paired test of the version under test or canary (staging, or a held first version)
    paired: PairedResult | None = None


class SkillEntityInput(Wire):
    """The one input of ``SkillEntityWorkflow``: its slug, and its state when continuing as new."""

    slug: str
    state: SkillEntityState | None = None
    heartbeat_timeout: float = Field(
        60.0, gt=0, description="seconds SkillEditAgent may go silent before a retry"
    )


class AddCandidates(Wire):
    candidates: list[Candidate]


class RecordScores(Wire):
    scores: list[Score]


class RemoveCandidate(Wire):
    atom_id: str


class RetireRequest(Wire):
    renamed_to: str


class CanaryVerdict(Wire):
    """A person's decision on a staging version (``skills promote|discard``)."""

    verdict: Literal["promote", "discard"]
    by: str = "a person"
    reason: str = ""


class EditInput(Wire):
    slug: str
    branch: Literal["baby", "main"]
    base_commit: str | None
    candidates: list[Candidate]
    edit_id: str  # deterministic from the candidates: a re-run finds its own commit
    version: int = 1
    # hold atoms out for the paired test, and keep a first version on baby until it passes
    paired: bool = False


class EditResult(Wire):
    ok: bool
    commit: str | None = None
    branch: str | None = None  # main (first version) or staging
    message: str = ""
    problems: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    scripts: list[str] = Field(default_factory=list)  # scripts that were run and passed
    by: str = "offline"
    # no model: a draft on baby (or nothing on a published skill); the candidates stay
    # pending and the next edit, with more weight, tries again
    draft: bool = False
    held_out: list[AtomRef] = Field(
        default_factory=list
    )  # kept out of the edit for the paired test


class PairedInput(Wire):
    """Test ``commit`` (the tip of ``branch``) against ``baseline`` (main's commit, None: no skill)."""

    slug: str
    branch: Literal["baby", "staging"]
    commit: str
    baseline: str | None
    held_out: list[AtomRef]


class PublishFirst(Wire):
    """A first version that passed its paired test: baby becomes main."""

    slug: str
    commit: str


class GitAction(Wire):
    """Promote or discard a staging version, with the commit message that cites the figures."""

    slug: str
    action: Literal["promote", "discard"]
    staging_commit: str
    message: str


class GitResult(Wire):
    main_commit: str | None
    done: str


class CandidatesFile(Wire):
    """The entity's state, mirrored to ``.candidates.yml`` and ``.ux_scores.jsonl`` by its own activity."""

    state: SkillEntityState


class SkillView(Wire):
    """What ``skills list|candidates|canary`` show of one skill."""

    slug: str
    state: SkillState
    main_commit: str | None
    staging_commit: str | None
    pending_weight: int
    pending: list[Candidate]
    consumed: int
    canary: dict[str, float | None]
    decision: str
    last_edit_error: str | None
    events: list[SkillEvent]
    paired: PairedResult | None = None


class ClusterRequest(Wire):
    atoms: list[AtomRef]


class ClusterOutcome(Wire):
    decisions: list[ClusterDecision]


class LibraryInput(Wire):
    """The one input of ``SkillLibraryWorkflow``; continue-as-new carries the queue and totals."""

    queue: list[AtomRef] = Field(default_factory=list)
    heartbeat_timeout: float = 60.0
    seen: list[str] = Field(default_factory=list)  # atom ids already clustered (recent, bounded)
    recent: list[ClusterDecision] = Field(default_factory=list)
    totals: dict[str, int] = Field(default_factory=dict)


class ApplyDecision(Wire):
    decision: ClusterDecision
    heartbeat_timeout: float = 60.0  # for the skill entity the decision may start


class RouteInput(Wire):
    """After a delta's commit: which atoms are new (to cluster) and which may carry scores."""

    path: str
    kind: str
    new_atoms: list[AtomRef]
    scored_atoms: list[AtomRef]
    heartbeat_timeout: float = 60.0


def library_workflow_id(task_queue: str) -> str:
    """``xsky-skills-library`` (plural: no skill's entity id can be it); per task queue, so
    deployments sharing a server stay apart."""
    return "xsky-skills-library" if task_queue == "xsky" else f"xsky-skills-library-{task_queue}"


def entity_workflow_id(task_queue: str, slug: str) -> str:
    """``xsky-skill-<slug>`` (with the task queue when it is not the default one)."""
    return f"xsky-skill-{slug}" if task_queue == "xsky" else f"xsky-skill-{task_queue}-{slug}"


def traj_of(atom_id: str) -> str:
    """The trajectory id inside an atom id (``atom_<traj>_NNNN``)."""
    return atom_id[len("atom_") :].rsplit("_", 1)[0]
