"""Pure parts of the skill library: canary assignment and decisions, SKILL.md checks, the catalogue
budget, offline clustering, and git plumbing that never leaves a half-written branch."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from activities.skills import git as skill_git
from xsky.skills import canary
from xsky.skills.atoms import AtomTask, Provenance, RawAnchor
from xsky.skills.clustering import (
    DESCRIPTION_CAP,
    ClusterDecision,
    SkillSummary,
    atom_keywords,
    catalogue,
    offline_decide,
)
from xsky.skills.evidence import (
    ADD_MIN_SIMILARITY,
    CROSS_PROJECT_MIN_SIMILARITY,
    Seed,
    project_of,
    session_of,
)
from xsky.skills.spec import problems, render, slugify


def test_canary_assignment_is_sticky_and_close_to_twenty_percent() -> None:
    ids = [f"xsky-run-{i}" for i in range(5000)]
    sides = [canary.assign(i, "deploy-api") for i in ids]
    share = sides.count("staging") / len(ids)
    assert 0.17 <= share <= 0.23
    assert sides == [canary.assign(i, "deploy-api") for i in ids], (
        "the same run always reads the same side"
    )
    other = [canary.assign(i, "other-skill") for i in ids]
    assert other != sides, "assignment is per (run, skill), not per run"


def _stream(rng: random.Random, mean: float, n: int) -> list[float]:
    return [float(max(1, min(10, round(rng.gauss(mean, 1.5))))) for _ in range(n)]


@pytest.mark.parametrize(
    ("main", "staging", "n", "verdict"),
    [
        (7.0, 8.0, 40, "promote"),  # better
        (7.0, 7.0, 150, "promote"),  # equal: shown non-inferior once there are enough scores
        (8.0, 5.0, 25, "discard"),  # worse by far more than the margin
    ],
)
def test_synthetic_score_streams_give_promote_promote_discard(
    main: float, staging: float, n: int, verdict: str
) -> None:
    rng = random.Random(7)
    outcomes = [
        canary.decide(_stream(rng, main, n), _stream(rng, staging, n)).verdict for _ in range(30)
    ]
    assert outcomes.count(verdict) >= 27, outcomes


def test_a_staging_version_no_better_than_the_margin_is_rarely_promoted() -> None:
    """Not showing harm is not enough: at exactly 0.5 worse, promotion happens at about alpha."""
    rng = random.Random(11)
    outcomes = [
        canary.decide(_stream(rng, 7.0, 40), _stream(rng, 6.5, 40)).verdict for _ in range(300)
    ]
    assert outcomes.count("promote") / 300 <= 0.09
    worse = [
        canary.decide(_stream(rng, 7.0, 40), _stream(rng, 6.0, 40)).verdict for _ in range(300)
    ]
    assert worse.count("promote") <= 3


def test_fewer_than_twenty_scores_decide_nothing_until_fourteen_days_pass() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    bad, good = [2.0] * 19, [9.0] * 40
    assert canary.decide(good, bad, start, start + timedelta(days=13)).verdict == "wait"
    assert canary.decide(good[:19], good, start, start + timedelta(days=1)).verdict == "wait"
    expired = canary.decide(good, bad, start, start + timedelta(days=14))
    assert expired.verdict == "discard" and "14 days" in expired.reason
    main, close = (
        [6.0, 7.0, 8.0, 9.0] * 5,
        [6.0, 6.0, 7.0, 9.0] * 5,
    )  # about 0.5 worse: neither shown
    assert canary.decide(main, close, start, start + timedelta(days=2)).verdict == "wait"
    assert canary.decide(main, close, start, start + timedelta(days=15)).verdict == "discard"


def test_the_decision_message_cites_the_figures() -> None:
    d = canary.decide([8.0] * 20, [4.0] * 20)
    assert d.verdict == "discard"
    assert all(
        k in d.message()
        for k in ("n=20", "mean 8.00", "mean 4.00", "Mann-Whitney U=", "p=", "margin 0.5")
    )


def _skill(tmp_path: Path, name: str, text: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "SKILL.md").write_text(text)
    return folder


def test_skill_md_is_checked_against_the_spec(tmp_path: Path) -> None:
    good = _skill(
        tmp_path,
        "deploy-api",
        render(
            "deploy-api",
            "Deploys the API to staging. Use when a release is cut.",
            "# Steps\n1. …",
            {"version": "1"},
        ),
    )
    assert problems(good) == []
    cases = {
        "Bad_Name": render("Bad_Name", "Does x. Use when y.", "body"),
        "other-dir": render("mismatch", "Does x. Use when y.", "body"),
        "no-when": render("no-when", "Does something useful.", "body"),
        "angle": render("angle", "Use when <html> is involved.", "body"),
        "extra-key": "---\nname: extra-key\ndescription: Does x. Use when y.\nversion: 2\n---\nbody\n",
        "long-body": render(
            "long-body", "Does x. Use when y.", "\n".join(f"line {i}" for i in range(600))
        ),
        "nested-meta": "---\nname: nested-meta\ndescription: Does x. Use when y.\nmetadata:\n  atoms: [1, 2]\n---\nbody\n",
    }
    for name, text in cases.items():
        assert problems(_skill(tmp_path, name, text)), f"{name} should be refused"


def test_slugs_are_spec_names_and_unique() -> None:
    assert slugify("Deploy FastAPI to port 1717!") == "deploy-fastapi-to-port-1717"
    assert slugify("x" * 100).__len__() <= 64
    assert slugify("deploy api", {"deploy-api"}) == "deploy-api-2"


def test_the_catalogue_keeps_every_name_and_drops_descriptions_past_the_budget() -> None:
    skills = [
        SkillSummary(name=f"skill-{i}", description="d" * 500, state="main") for i in range(30)
    ]
    small = catalogue(skills)
    assert all(f"skill-{i}" in small for i in range(30))
    assert max(len(line.split(": ", 1)[1]) for line in small.splitlines()) <= DESCRIPTION_CAP
    crowded = catalogue(
        [SkillSummary(name=f"skill-{i}", description="d" * 500) for i in range(1000)]
    )
    assert len(crowded) <= 25_000 + 100 and ":" not in crowded.splitlines()[0]
    assert all(f"skill-{i} [" in crowded for i in (0, 999))


def _atom(
    i: int,
    intent: str,
    tags: list[str],
    ux: int = 9,
    calls: int = 4,
    session: str | None = None,
    traj: str = "traj_cc_x_1",
    origin: str = "person",
) -> AtomTask:
    return AtomTask(
        atom_id=f"atom_{traj}_{i:04d}",
        traj_id=traj,
        offset_start=0,
        offset_end=10,
        intent=intent,
        summary="s",
        tags=tags,
        ux_score=ux,
        provenance=Provenance(
            raw=[
                RawAnchor(
                    path="/p", byte_start=0, byte_end=1, call_ids=[f"c{j}" for j in range(calls)]
                )
            ],
            ux_signals={"completed": 1},
            session=session,
            origin=origin,  # type: ignore[arg-type]
        ),
    )


def _seed_of(atom: AtomTask, decision: ClusterDecision) -> Seed:
    return Seed(
        atom_id=atom.atom_id,
        traj_id=atom.traj_id,
        session=session_of(atom),
        project=project_of(atom.traj_id),
        weightscore=decision.weightscore,
        keywords=atom_keywords(atom),
        name=decision.skill,
    )


def test_offline_a_skill_is_founded_only_by_atoms_of_two_sessions_and_similar_atoms_join_it() -> (
    None
):
    billing = _atom(
        1, "deploy the billing api to kubernetes staging", ["deploy", "kubernetes"], session="s1"
    )
    first = offline_decide(billing, [], [])
    assert first.action == "seed" and first.weightscore >= 7 and first.skill == "deploy-api"
    seeds = [_seed_of(billing, first)]
    # The same kind of task again, in the same session (a subagent, a follow-up): still one session.
    same = _atom(
        2,
        "deploy the billing api to kubernetes again",
        ["deploy", "kubernetes"],
        session="s1",
        traj="traj_cc_x_2",
    )
    assert offline_decide(same, [], seeds).action == "seed"
    # A model-written task (a subagent's Task prompt) never founds a skill, even from another session.
    by_model = _atom(
        3,
        "deploy the checkout api to kubernetes staging",
        ["deploy", "kubernetes"],
        session="s2",
        traj="traj_cc_x_3",
        origin="model",
    )
    assert offline_decide(by_model, [], seeds).action == "skip"
    # A person's atom of another session founds it, with the seed.
    other = _atom(
        4,
        "deploy the checkout api to kubernetes staging",
        ["deploy", "kubernetes"],
        session="s2",
        traj="traj_cc_x_4",
    )
    founded = offline_decide(other, [], seeds)
    assert founded.action == "new" and founded.skill == "deploy-api"
    assert founded.founders == [billing.atom_id]
    lib = [
        SkillSummary(
            name="deploy-api",
            description=founded.description or "",
            keywords=["deploy", "kubernetes", "billing", "staging"],
            projects=["x"],
        )
    ]
    joined = offline_decide(by_model, lib, [])
    assert joined.action == "add" and joined.skill == "deploy-api" and 1 <= joined.weightscore <= 10
    chat = offline_decide(_atom(5, "what time is it in Tokyo", ["time"], ux=6, calls=0), lib, [])
    assert chat.action == "skip"


def test_routing_refuses_a_cross_project_match_below_the_stated_similarity() -> None:
    lib = [
        SkillSummary(
            name="deploy-api",
            keywords=["deploy", "kubernetes", "billing", "staging", "helm", "charts", "values"],
            projects=["shop"],
        )
    ]
    # similarity 2/7 ≈ 0.29: enough within the project, not across projects
    words = ["deploy", "kubernetes"]
    inside = _atom(1, "deploy kubernetes", words, traj="traj_cc_shop_00000001")
    across = _atom(1, "deploy kubernetes", words, traj="traj_cc_blog_00000001")
    assert ADD_MIN_SIMILARITY <= 0.29 < CROSS_PROJECT_MIN_SIMILARITY
    assert offline_decide(inside, lib, []).action == "add"
    assert offline_decide(across, lib, []).action != "add"


def test_a_branch_moves_in_one_step_or_not_at_all(tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    (files / "SKILL.md").write_text(render("s", "Does x. Use when y.", "v0"))
    repo = tmp_path / "s"
    first = skill_git.init(repo, files, "new")
    (files / "SKILL.md").write_text(render("s", "Does x. Use when y.", "v1"))
    commit = skill_git.commit_tree(repo, files, first, "v1")
    assert skill_git.branch_commit(repo, "baby") == first, "a commit object alone moves no branch"
    with pytest.raises(skill_git.GitError):
        skill_git.publish(repo, "baby", commit, "0" * 39 + "1")  # someone else moved it: refused
    skill_git.publish(repo, "baby", commit, first)
    skill_git.rename_baby_to_main(repo)
    assert (
        skill_git.branch_commit(repo, "main") == commit
        and skill_git.branch_commit(repo, "baby") is None
    )
    assert "v1" in (repo / "SKILL.md").read_text()
    (repo / ".candidates.yml").write_text("kept: true\n")
    skill_git.sync(repo)
    assert (repo / ".candidates.yml").exists() and "??" not in skill_git.git(
        repo, "status", "--porcelain"
    )


def test_a_write_in_progress_is_neither_shown_nor_removed_and_a_killed_workers_is_swept(
    tmp_path: Path,
) -> None:
    """The entity writes its own files in the skill's folder through a temporary (atomic_write):
    ``git status`` never shows one, ``sync`` never removes one under a write, and one a killed
    worker left (untouched for long) goes at the next ``sync``. A repository made before
    ``.tmp-*`` joined the exclude file gets it."""
    import os
    import time

    from activities.fsio import atomic_write

    files = tmp_path / "files"
    files.mkdir()
    (files / "SKILL.md").write_text(render("s", "Does x. Use when y.", "v0"))
    repo = tmp_path / "s"
    skill_git.init(repo, files, "new")
    exclude = repo / ".git" / "info" / "exclude"
    exclude.write_text(".candidates.yml\n.ux_scores.jsonl\n.canary/")  # an older repository's
    skill_git.sync(repo)
    assert (
        ".tmp-*" in exclude.read_text().splitlines()
        and ".canary/" in exclude.read_text().splitlines()
    )
    in_progress = repo / ".tmp-0123456789ab"
    left = repo / ".tmp-ba9876543210"
    in_progress.write_text("half of .candidates.yml")
    left.write_text("what a killed worker left")
    old = time.time() - skill_git.STALE_TEMPORARY_SECONDS - 60
    os.utime(left, (old, old))
    assert skill_git.git(repo, "status", "--porcelain") == ""
    skill_git.sync(repo)
    assert in_progress.exists() and not left.exists()
    atomic_write(repo / ".candidates.yml", "kept: true\n")
    assert skill_git.git(repo, "status", "--porcelain") == ""


def test_the_founding_atoms_weight_does_not_count_toward_the_first_version() -> None:
    from xsky.skills.models import Candidate, edit_weight

    founder = Candidate(atom_id="a1", traj_id="t1", weightscore=9, founding=True)
    seed = Candidate(atom_id="a2", traj_id="t2", weightscore=8)
    assert edit_weight([founder, seed], "baby") == 8, "one atom (plus its seed) never publishes"
    assert edit_weight([founder, seed, seed.model_copy(update={"atom_id": "a3"})], "baby") == 16
    assert edit_weight([founder, seed], "main") == 17, "once published, every pending atom counts"
    consumed = seed.model_copy(update={"atom_id": "a4", "status": "consumed"})
    assert edit_weight([founder, seed, consumed], "baby") == 8


def test_a_draft_is_refused_export_with_a_sentence_that_says_why(tmp_path: Path) -> None:
    from activities.skills.files import export_refusal

    files = tmp_path / "files"
    files.mkdir()
    (files / "SKILL.md").write_text(render("fix-flaky-tests", "Draft. Use when x.", "draft"))
    repo = tmp_path / "fix-flaky-tests"
    skill_git.init(repo, files, "new")
    # (true whether a model is configured or not: it said "needs a model" beside `skills list`
    # saying the configured model writes it at weight 10)
    assert export_refusal(repo) == (
        "a draft on baby, not a skill yet: it is never exported until a model writes its first "
        "version once its evidence reaches weight 10 (XSKY_SKILLS_MODEL on the skills worker; "
        "`skills list` shows how far it is)"
    )
    # and `skills export` (plain or --canary) says it for that skill and leaves the folder empty
    from activities.skills.canary_export import export_skill

    for under_canary in (False, True):
        placed = export_skill(repo, "fix-flaky-tests", tmp_path / "dest", under_canary)
        assert placed.skipped == export_refusal(repo)
        assert not (tmp_path / "dest" / "fix-flaky-tests").exists()
    skill_git.rename_baby_to_main(repo)
    assert export_refusal(repo) is None


def test_a_main_an_earlier_xsky_wrote_offline_is_held_back_from_export(tmp_path: Path) -> None:
    """Earlier xsky versions published offline-written skills to main (SKILL.md metadata
    ``written_by: xsky offline skill writer``): they are kept, but not exported."""
    from activities.skills.canary_export import export_skill
    from activities.skills.files import OFFLINE_MAIN, export_refusal

    files = tmp_path / "files"
    files.mkdir()
    body = "# run-tests\n\nRun the tests."
    meta = {"written_by": "xsky offline skill writer"}
    (files / "SKILL.md").write_text(render("run-tests", "Run tests. Use when x.", body, meta))
    repo = tmp_path / "run-tests"
    skill_git.init(repo, files, "new")
    skill_git.rename_baby_to_main(repo)
    assert export_refusal(repo) == OFFLINE_MAIN
    placed = export_skill(repo, "run-tests", tmp_path / "dest", False)
    assert placed.skipped == OFFLINE_MAIN and not (tmp_path / "dest" / "run-tests").exists()
    # a model-written next version on main is exported
    (files / "SKILL.md").write_text(render("run-tests", "Run tests. Use when x.", body, {}))
    main = skill_git.branch_commit(repo, "main")
    skill_git.publish(repo, "main", skill_git.commit_tree(repo, files, main, "edit"), main)
    assert export_refusal(repo) is None
    assert export_skill(repo, "run-tests", tmp_path / "dest", False).skipped is None
