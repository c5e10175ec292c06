"""Repeated evidence: whose session an atom is, which project, and the seeds that wait for a second.

A skill is drafted only from atoms of **two or more distinct sessions**. The session is the
person's (``provenance.session``: a subagent's atoms carry their parent's, so a parent and
its own subagent, or a task and its own follow-up, are one session; the trajectory when it
is unknown). An atom worth a skill whose session is the only one seen doing that kind of
task becomes a **seed**: kept by reference (atom id, session, keywords) in the library,
until an atom of another session matches it; then both found the skill together.

Routing across projects needs more: an atom joins a skill (or a seed) of another project
only at keyword similarity ≥ :data:`CROSS_PROJECT_MIN_SIMILARITY` — mis-routing was seen at
0.17–0.20, and within a project the bar stays :data:`ADD_MIN_SIMILARITY`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from xsky.skills.atoms import AtomTask
from xsky.skills.recurrence import Shape

ADD_MIN_SIMILARITY = 0.15  # within a project (or a skill with no recorded project)
CROSS_PROJECT_MIN_SIMILARITY = 0.35  # across projects: above the 0.17–0.20 seen mis-routed
MIN_SESSIONS = 2  # distinct sessions before a skill is drafted
KEEP_SEEDS = 500  # seeds kept at most (the oldest go first)
MAX_FOUNDERS = 8  # seeds that found one skill with the atom that matched them


class Seed(BaseModel):
    """An atom worth a skill, waiting for an atom of another session (by reference)."""

    model_config = ConfigDict(extra="ignore")
    atom_id: str
    traj_id: str
    session: str
    project: str
    weightscore: int = Field(0, ge=0, le=10)
    keywords: list[str] = Field(default_factory=list)
    name: str | None = None  # the kind of task it names (xsky.skills.naming), if any
    added_at: str = ""
    shape: Shape | None = None  # its kind of task (None: a seed kept by an older version)
    # the skill it founded or joined: kept so a later atom of its kind joins that skill too
    joined: str | None = None


def session_of(atom: AtomTask) -> str:
    return atom.provenance.session or atom.traj_id


def project_of(traj_id: str) -> str:
    """``traj_<kind>_<project>_<id>`` → ``<project>`` (the whole id when it has no such shape)."""
    parts = traj_id.split("_", 2)
    if len(parts) < 3 or "_" not in parts[2]:
        return traj_id
    return parts[2].rsplit("_", 1)[0]


def min_similarity(project: str, projects: list[str]) -> float:
    """The similarity an atom of ``project`` needs to join something of ``projects``."""
    if not projects or project in projects:
        return ADD_MIN_SIMILARITY
    return CROSS_PROJECT_MIN_SIMILARITY


def can_found(atom: AtomTask) -> str | None:
    """Why this atom may not found a skill (None: it may)."""
    if atom.provenance.origin == "model":
        return "its task was written by a model (a subagent's prompt): it may join a skill, never found one"
    return None


def sessions(seeds: list[Seed], atom: AtomTask) -> set[str]:
    return {s.session for s in seeds} | {session_of(atom)}


def keep(seeds: list[Seed], new: Seed) -> list[Seed]:
    """The seeds with ``new`` added (once), bounded."""
    kept = [s for s in seeds if s.atom_id != new.atom_id] + [new]
    return kept[-KEEP_SEEDS:]
