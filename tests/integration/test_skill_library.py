"""Atoms become versioned skills on a real dev server: clustering, baby → main → staging with the
seed's guards, concurrent atoms, and the canary deciding in git (edits, roles reading skills and
crashes during an edit: test_skill_library_edits.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType

from activities.skills import git as skill_git
from activities.skills.files import skill_dir, slugs
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import settled
from tests.integration.skill_library_helpers import (
    TOPICS,
    candidates_of,
    claude_session,
    entity,
    entity_handle,
    make_skill,
    only_these_transcripts,
    settled_view,
    skills_on,
    write_atoms,
)
from tests.integration.test_skills_watch import (
    scan_once,
    start_pipeline,
)
from tests.skills_fixtures import Transcripts
from workflows.skills.entity import SkillEntityWorkflow
from xsky.skills.models import (
    RecordScores,
    Score,
    SkillEntityInput,
)
from xsky.skills.spec import problems

pytestmark = pytest.mark.integration


FLAKY = "fix the flaky payment tests in ci, they time out on the retry path every night"
COMMANDS = [
    "pytest tests/test_payments.py -x",
    "pytest -p no:randomly tests/test_payments.py --count 10",
    "git diff --stat",
]


async def library_idle(env: Env) -> None:
    """The library has decided on every atom sent to it, and applied each decision."""
    from workflows.skills.library import SkillLibraryWorkflow
    from xsky.skills.models import library_workflow_id

    handle = env.client.get_workflow_handle_for(
        SkillLibraryWorkflow.run, library_workflow_id(env.settings.task_queue)
    )

    async def idle() -> None:
        assert (await handle.query(SkillLibraryWorkflow.backlog))["queued"] == 0
        await settled(handle)

    await eventually(idle, 60)


async def test_offline_two_sessions_make_a_draft_that_is_never_published_promoted_or_exported(
    env: Env, transcripts: Transcripts
):
    from tests.integration.test_cli_runs import starter
    from xsky.skills.authoring import NEEDS_MODEL, is_draft
    from xsky.skills.naming import name_problems

    await start_pipeline(env)
    home, queue = transcripts.home, env.settings.skills_queue
    only_these_transcripts(transcripts)
    first = claude_session(transcripts.claude, "shop", FLAKY, COMMANDS)
    await scan_once(env.client, queue)
    await library_idle(env)
    # One session: worth a skill, but nobody else has done this kind of task yet — a seed.
    assert slugs(home) == [], "one session founded a skill"
    seeds = json.loads((home / "skills" / ".seeds.json").read_text())
    assert len(seeds) == 1 and seeds[0]["atom_id"].startswith(f"atom_traj_cc_shop_{first.stem[:8]}")

    # A second person's session of the same kind of task: the seed and it found a baby skill.
    claude_session(
        transcripts.claude, "shop", FLAKY.replace("every night", "since monday"), COMMANDS
    )
    await scan_once(env.client, queue)
    await library_idle(env)
    (slug,) = slugs(home)
    assert slug == "fix-flaky-tests" and name_problems(slug) == []
    v = await eventually(lambda: settled_view(env, slug))
    # The founding atom's weight does not count: the seed's alone is below the threshold.
    assert len(v.pending) == 2 and v.pending_weight < 10 and v.last_edit_error is None
    assert [e.kind for e in v.events if e.kind in ("edit", "draft")] == []

    # A third session brings the weight past 10: the offline editor writes a draft, on baby only.
    claude_session(transcripts.claude, "shop", FLAKY.replace("every night", "on friday"), COMMANDS)
    await scan_once(env.client, queue)
    await library_idle(env)

    async def drafted() -> None:
        kinds = [e.kind for e in (await settled_view(env, slug)).events]
        assert "draft" in kinds, kinds

    await eventually(drafted, 60)
    repo = skill_dir(home, slug)
    assert skill_git.branch_commit(repo, "main") is None, "offline published a skill"
    assert skill_git.branch_commit(repo, "staging") is None
    draft = skill_git.show(repo, "baby") or ""
    assert (
        is_draft(draft)
        and "Draft, not a skill yet" in draft
        and "3 task(s) from 3 session(s)" in draft
    )
    assert "Draft: written offline" in skill_git.message(
        repo, skill_git.branch_commit(repo, "baby")
    )
    for leak in ("retry path", "atom_", "traj_", "/home/", "When to use", "×"):
        assert leak not in draft, leak
    intents = [FLAKY]
    assert problems(repo, prompts=intents) == []
    v = await eventually(lambda: settled_view(env, slug))
    assert len(v.pending) == 3 and v.state == "baby", "a draft consumes no candidate"

    # What a person sees: a draft, and why; nothing on main, nothing exported.
    code, out, _ = await starter(env, "skills", "list", "--json")
    (row,) = json.loads(out)
    assert code == 0 and row["draft"] and row["status"] == f"draft — {NEEDS_MODEL}"
    code, out, _ = await starter(env, "skills", "list")
    assert "needs a model to write: set XSKY_SKILLS_MODEL" in " ".join(out.split())
    target = transcripts.root / "exported"
    code, out, _ = await starter(env, "skills", "export", "--to", str(target), "--json")
    report = json.loads(out)
    assert code == 0 and report["exported"] == [] and len(report["skipped"]) == 1
    assert [p for p in target.iterdir() if not p.name.startswith(".")] == []
    assert {s: b["main"] for s, b in skills_on(home).items()} == {slug: None}, "0 skills on main"

    decisions = [
        json.loads(x) for x in (home / "skills" / ".decisions.jsonl").read_text().splitlines()
    ]
    assert [d["action"] for d in decisions] == ["seed", "new", "add"]
    assert decisions[1]["founders"] == [decisions[0]["atom_id"]]


async def test_fifty_atoms_arriving_at_once_for_five_skills_each_land_in_exactly_one_candidates_file(
    env: Env, transcripts: Transcripts
):
    from workflows.skills.library import SkillLibraryWorkflow
    from xsky.skills.models import AtomRef, ClusterRequest, LibraryInput, library_workflow_id

    await start_pipeline(env)
    home = transcripts.home
    for slug, (intent, _) in TOPICS.items():
        make_skill(home, slug, f"How to {intent.format(x='any')}. Use when asked to.")
    atoms = [
        (TOPICS[slug][0].format(x=f"part{i}"), TOPICS[slug][1])
        for i in range(10)
        for slug in TOPICS
    ]
    ids = write_atoms(home, "traj_cc_bulk_00000001", atoms)
    refs = [AtomRef(traj_id="traj_cc_bulk_00000001", atom_id=a) for a in ids]
    await asyncio.gather(
        *(
            env.client.start_workflow(
                SkillLibraryWorkflow.run,
                LibraryInput(heartbeat_timeout=3),
                id=library_workflow_id(env.settings.task_queue),
                task_queue=env.settings.skills_queue,
                start_signal="cluster",
                start_signal_args=[ClusterRequest(atoms=[r])],
            )
            for r in refs
        )
    )

    def placed() -> list[tuple[str, str]]:
        return [(s, c["atom_id"]) for s in TOPICS for c in candidates_of(home, s)]

    library = env.client.get_workflow_handle(library_workflow_id(env.settings.task_queue))

    async def all_placed_and_settled() -> list[tuple[str, str]]:
        """The library has clustered every atom and sent each on; then each skill's entity
        has written what it was sent: nothing is on its way, so the files are final."""
        await settled(library)
        for slug in TOPICS:
            await settled(entity_handle(env, slug))
        where = placed()
        assert len(where) >= 50, f"{len(where)} of 50 atoms placed"
        return where

    where = await eventually(all_placed_and_settled, 90)
    assert sorted(a for _, a in where) == sorted(ids), "every atom exactly once, none lost"
    for slug, aid in where:
        n = int(aid[-4:]) - 1
        assert list(TOPICS)[n % 5] == slug, f"{aid} landed in {slug}"


async def test_the_canary_promotes_and_discards_in_git_citing_the_figures_and_a_person_can_decide(
    env: Env, transcripts: Transcripts
):
    from tests.integration.test_cli_runs import starter

    await start_pipeline(env)
    home = transcripts.home
    # better-skill's staging passed its paired test (the gate of a promotion); the others' did not
    better = make_skill(home, "better-skill", "Does x. Use when x.", "STAGING better", paired=True)
    worse = make_skill(home, "worse-skill", "Does y. Use when y.", "STAGING worse")
    person = make_skill(home, "person-skill", "Does z. Use when z.", "STAGING person")

    def scores(repo: Path, main: int, staging: int, n: int, prefix: str) -> RecordScores:
        m, s = skill_git.branch_commit(repo, "main"), skill_git.branch_commit(repo, "staging")
        return RecordScores(
            scores=[
                Score(traj_id=f"{prefix}-m{i}", side="main", commit=m, score=main) for i in range(n)
            ]  # type: ignore[arg-type]
            + [
                Score(traj_id=f"{prefix}-s{i}", side="staging", commit=s, score=staging)
                for i in range(n)
            ]
        )  # type: ignore[arg-type]

    staged = {r: skill_git.branch_commit(r, "staging") for r in (better, worse)}
    await entity(env, "better-skill", "record_scores", scores(better, 7, 8, 19, "b"))
    await entity(env, "worse-skill", "record_scores", scores(worse, 8, 4, 19, "w"))
    # Each entity has the 19 scores a side and nothing in flight: it has decided, and a
    # promotion or discard would be a pending (or finished) git activity.
    for slug in ("better-skill", "worse-skill"):
        v = await eventually(lambda slug=slug: settled_view(env, slug))
        assert (v.canary["n_main"], v.canary["n_staging"]) == (19, 19), v.canary
        assert v.staging_commit == staged[skill_dir(home, slug)]
        assert "waiting for 20 scores" in v.decision, v.decision
    assert skill_git.branch_commit(better, "staging") and skill_git.branch_commit(
        worse, "staging"
    ), "19 scores decide nothing"
    await entity(env, "better-skill", "record_scores", scores(better, 7, 8, 21, "b"))
    await entity(env, "worse-skill", "record_scores", scores(worse, 8, 4, 21, "w"))

    def both_decided() -> None:
        assert skill_git.branch_commit(better, "staging") is None, "better-skill undecided"
        assert skill_git.branch_commit(worse, "staging") is None, "worse-skill undecided"

    await eventually(both_decided, 30)
    promoted = skill_git.message(better, skill_git.branch_commit(better, "main"))
    assert (
        promoted.startswith("promote staging") and "Mann-Whitney" in promoted and "n=21" in promoted
    )
    assert "paired test (model-judged, 3 trials a side vs main" in promoted, promoted
    assert "STAGING better" in (skill_git.show(better, "main") or "")
    assert skill_git.git(better, "rev-parse", "main^2") == staged[better], (
        "the promotion merges the staging commit"
    )
    (tag,) = skill_git.tags(worse)
    assert (
        tag["tag"] == f"discarded/{staged[worse][:12]}"
        and "worse than main" in tag["message"]
        and "n=21" in tag["message"]
    )
    assert "MAIN VERSION" in (skill_git.show(worse, "main") or "")

    await entity(env, "person-skill", "record_scores", RecordScores(scores=[]))
    code, out, err = await starter(
        env, "skills", "promote", "person-skill", "--reason", "reviewed by hand", "--by", "ana"
    )
    assert code == 0, err
    assert "promoted by ana: reviewed by hand" in skill_git.message(
        person, skill_git.branch_commit(person, "main")
    )
    code, _, err = await starter(env, "skills", "discard", "person-skill")
    assert code == 2 and "no staging version" in err

    code, out, _ = await starter(env, "skills", "history", "worse-skill")
    assert code == 0 and "discarded/" in out and "commit_to_staging" in out
    code, out, _ = await starter(env, "skills", "list", "--json")
    listed = {r["name"]: r for r in json.loads(out)}
    assert (
        listed["better-skill"]["state"] == "main" and listed["better-skill"]["meanUx"] is None
    )  # new main: no scores yet


async def test_a_staging_version_without_a_decision_is_discarded_after_fourteen_days(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import sys
    from concurrent.futures import ThreadPoolExecutor
    from datetime import timedelta

    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment
    from temporalio.worker import Worker

    from activities.skills.entity import EntityActivities
    from xsky.config import load_settings

    monkeypatch.setenv("XSKY_SKILLS_HOME", str(tmp_path / "home"))
    settings = load_settings()
    repo = make_skill(settings.skills_home, "slow-skill", "Does s. Use when s.", "STAGING slow")
    staging = skill_git.branch_commit(repo, "staging")
    server = Path(sys.executable).parent / "temporal-test-server"
    async with await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter, test_server_existing_path=str(server)
    ) as tenv:
        entity = EntityActivities(settings)
        async with Worker(
            tenv.client,
            task_queue="ts",
            workflows=[SkillEntityWorkflow],
            activities=entity.all(),
            activity_executor=ThreadPoolExecutor(4),
        ):
            handle = await tenv.client.start_workflow(
                SkillEntityWorkflow.run,
                SkillEntityInput(slug="slow-skill"),
                id="slow",
                task_queue="ts",
            )

            async def loaded() -> None:
                assert (await handle.query(SkillEntityWorkflow.view)).staging_commit == staging

            await eventually(loaded, 10)
            await tenv.sleep(timedelta(days=13))
            # 13 days on, the entity has nothing in flight and its 14-day timer has not
            # fired: the staging version stands.
            await eventually(lambda: settled(handle), 10)
            fired = [
                e
                async for e in handle.fetch_history_events()
                if e.event_type == EventType.EVENT_TYPE_TIMER_FIRED
            ]
            assert fired == [] and skill_git.branch_commit(repo, "staging") == staging
            await tenv.sleep(timedelta(days=2))

            def discarded() -> None:
                assert skill_git.branch_commit(repo, "staging") is None

            await eventually(discarded, 10)
    (tag,) = skill_git.tags(repo)
    assert (
        tag["tag"] == f"discarded/{staging[:12]}" and "no decision after 14 days" in tag["message"]
    )
