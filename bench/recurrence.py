"""Recurring work on data: which worth bar and which matching keep the recurring task and
drop the rest (the table in xsky/skills/clustering.py's and recurrence.py's docs).

The corpus goes through the real pipeline offline (adapters, render, the offline TaskAgent,
commit): the hand-labelled sessions of tests/fixtures/labelled (26 tasks in 9 sessions, no
task recurring) plus tests/recurring_sessions.py (four "work on bead" sessions: one
recurring kind; an unrelated pair that shares words). Then every atom, in order, meets the
offline cluster rule with an in-memory library, for each worth bar and both matchings:
``words`` (keyword similarity only, as before) and ``kind`` (request, steps and outcome).

    .venv/bin/python bench/recurrence.py
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from activities.skills.render import render_delta
from activities.skills.scan import commit_delta, read_atoms, scan
from activities.skills.task_agent import split_delta
from tests.recurring_sessions import write_bead_sessions, write_unrelated_pair
from xsky.skills import clustering
from xsky.skills.atoms import AtomTask
from xsky.skills.clustering import SkillSummary, atom_keywords, offline_decide, worth
from xsky.skills.evidence import Seed, keep, project_of, session_of
from xsky.skills.recurrence import explain, kind_similarity, shape_of
from xsky.skills.runs import ScanInput
from xsky.skills.sources import Source

LABELLED = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "labelled"


def atoms_of_corpus(tmp: Path) -> list[AtomTask]:
    root, home = tmp / "corpus", tmp / "home"
    for part in ("claude", "codex"):
        shutil.copytree(LABELLED / part, root / part)
    write_bead_sessions(root / "claude" / "projects")
    write_unrelated_pair(root / "claude" / "projects")
    sources = [
        Source("claude-code", root / "claude" / "projects", "bench"),
        Source("codex", root / "codex", "bench"),
    ]
    trajs = []
    for d in scan(home, sources, ScanInput(settle_seconds=3600)).deltas:
        render_delta(home, d)
        asyncio.run(split_delta(home, d, None, lambda note: None))
        assert commit_delta(home, d).committed
        trajs.append(d.traj_id)
    return [a for t in dict.fromkeys(trajs) for a in read_atoms(home, t)]


def run(atoms: list[AtomTask], bar: int, matching: str) -> tuple[list[list[AtomTask]], int]:
    """The skills founded (their atoms) and the seeds left waiting."""
    clustering.NEW_SKILL_MIN = bar
    by_id = {a.atom_id: a for a in atoms}
    seeds: list[Seed] = []
    skills: dict[str, list[AtomTask]] = {}
    summaries: list[SkillSummary] = []
    for atom in atoms:
        d = offline_decide(atom, summaries, seeds)
        if d.action == "seed":
            seeds = keep(seeds, seed(atom, d.skill, d.weightscore, matching))
        elif d.action == "new" and d.skill:
            members = [by_id[f] for f in d.founders] + [atom]
            skills[d.skill] = members
            seeds = [s for s in seeds if s.atom_id not in d.founders]
            summaries.append(
                SkillSummary(
                    name=d.skill,
                    keywords=[w for m in members for w in atom_keywords(m)],
                    projects=[project_of(m.traj_id) for m in members],
                )
            )
        elif d.action == "add" and d.skill:
            skills[d.skill].append(atom)
    return list(skills.values()), len(seeds)


def seed(atom: AtomTask, name: str | None, weight: int, matching: str) -> Seed:
    return Seed(
        atom_id=atom.atom_id,
        traj_id=atom.traj_id,
        session=session_of(atom),
        project=project_of(atom.traj_id),
        weightscore=weight,
        keywords=atom_keywords(atom),
        name=name,
        shape=shape_of(atom) if matching == "kind" else None,
    )


def is_bead(a: AtomTask) -> bool:
    return a.intent.startswith("Work on bead")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        atoms = atoms_of_corpus(Path(tmp))
    beads = [a for a in atoms if is_bead(a)]
    print(f"{len(atoms)} atoms; the bead sessions' worth: {[worth(a) for a in beads]}")
    pairs = [(a, b) for i, a in enumerate(beads) for b in beads[i + 1 :]]
    sims = [kind_similarity(shape_of(a), shape_of(b)) for a, b in pairs]
    print(f"bead pairs: kind similarity {min(sims):.2f}-{max(sims):.2f}")
    first, second = [a for a in atoms if a.intent.startswith("Analyze the")][:2]
    print(f"the unrelated pair: {explain(shape_of(first), shape_of(second))}")
    print(
        "| worth bar | matching | skills founded | bead atoms kept | atoms in a wrong skill | seeds left |"
    )
    print("|---|---|---|---|---|---|")
    for matching in ("words", "kind"):
        for bar in (5, 6, 7, 8):
            found, left = run(atoms, bar, matching)
            kept = sum(1 for s in found for a in s if is_bead(a))
            wrong = sum(
                1 for s in found for a in s if is_bead(a) != (sum(map(is_bead, s)) > len(s) / 2)
            )
            unrelated = sum(1 for s in found if not any(map(is_bead, s)))
            print(
                f"| {bar} | {matching} | {len(found)} ({unrelated} without a bead) | "
                f"{kept} of {len(beads)} | {wrong} | {left} |"
            )


if __name__ == "__main__":
    main()
