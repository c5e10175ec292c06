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
    entity,
    entity_handle,
    make_skill,
    on_branch,
    settled_at_weight,
    settled_view,
    skills_on,
    view,
    write_atoms,
)
from tests.integration.test_skills_watch import (
    scan_once,
    start_pipeline,
)
from tests.skills_fixtures import Transcripts, clone_codex
from workflows.skills.entity import SkillEntityWorkflow
from xsky.skills.models import (
    RecordScores,
    Score,
    SkillEntityInput,
)
from xsky.skills.spec import problems, split

pytestmark = pytest.mark.integration

pytestmark = pytest.mark.integration


async def test_atoms_grow_a_baby_skill_published_on_main_then_a_staging_candidate_under_the_guards(
    env: Env, transcripts: Transcripts
):
    await start_pipeline(env)
    home, queue = transcripts.home, env.settings.skills_queue
    clone_codex(transcripts, 1)
    await scan_once(env.client, queue)

    def one_on_main() -> str:
        published = [s for s, b in skills_on(home).items() if b["main"]]
        assert len(published) == 1, f"skills on main: {published}"
        return published[0]

    slug = await eventually(one_on_main, 60)
    repo = skill_dir(home, slug)
    first = skill_git.message(repo, skill_git.branch_commit(repo, "main"))
    assert first.startswith(f"commit_baby_to_main: {slug} v1") and "atom_traj_codex_learn_" in first

    def batch_consumed() -> None:
        assert any(c["status"] == "consumed" for c in candidates_of(home, slug)), candidates_of(
            home, slug
        )

    await eventually(batch_consumed, 30)
    consumed = [c for c in candidates_of(home, slug) if c["status"] == "consumed"]
    assert consumed and all(c["atom_id"] in first for c in consumed), (
        "the commit names the atoms it is based on"
    )
    assert skill_git.branch_commit(repo, "baby") is None, "baby was renamed main"
    assert problems(repo) == []
    front, body = split((repo / "SKILL.md").read_text())
    assert (
        front["name"] == slug
        and "Use when" in front["description"]
        and set(front) <= {"name", "description", "metadata"}
    )

    # More of the same work: weight piles up, but main has no real UX score yet → no staging.
    clone_codex(transcripts, 2, day="29")
    await scan_once(env.client, queue)
    # Settled with that weight: the entity has decided, and the decision is no edit.
    settled_v = await eventually(lambda: settled_at_weight(env, slug, 10), 60)
    assert settled_v.canary["n_main"] == 0 and settled_v.staging_commit is None
    assert skill_git.branch_commit(repo, "staging") is None, (
        "no staging without a UX score for main"
    )

    # A session that used the published skill scores main; the edit may now run → staging.
    clone_codex(transcripts, 1, day="28", skill_read=slug)
    await scan_once(env.client, queue)
    staging = await eventually(lambda: on_branch(repo, "staging"), 60)
    assert skill_git.message(repo, staging).startswith(f"commit_to_staging: {slug} v2")
    assert split(skill_git.show(repo, "staging") or "")[0]["metadata"]["version"] == "2"
    assert split(skill_git.show(repo, "main") or "")[0]["metadata"]["version"] == "1"

    async def staged() -> None:  # the branch moves in git first, then the entity records it
        assert (await view(env, slug)).staging_commit == staging

    await eventually(staged, 30)
    v = await view(env, slug)
    assert v.canary["n_main"] >= 1 and v.staging_commit == staging

    # Even more weight: still one staging version, never a second.
    clone_codex(transcripts, 3, day="27")
    await scan_once(env.client, queue)
    settled_v = await eventually(lambda: settled_at_weight(env, slug, 10), 60)
    assert settled_v.staging_commit == staging  # decided: no edit while staging exists
    assert skill_git.branch_commit(repo, "staging") == staging
    assert [b for b in skill_git.git(repo, "branch", "--format=%(refname:short)").split()] == [
        "main",
        "staging",
    ]

    # What a person sees of it.
    from tests.integration.test_cli_runs import starter

    code, out, _ = await starter(env, "skills", "show", slug, "--branch", "staging")
    assert code == 0 and out.startswith(f"---\nname: {slug}") and "version: '2'" in out
    code, out, _ = await starter(env, "skills", "canary", slug, "--json")
    facts = json.loads(out)
    assert (
        code == 0
        and facts["staging"] == staging
        and facts["n_main"] >= 1
        and "waiting for 20 scores" in facts["decision"]
    )
    code, out, _ = await starter(env, "skills", "candidates", slug, "--json")
    assert code == 0 and {c["status"] for c in json.loads(out)["candidates"]} == {
        "consumed",
        "pending",
    }
    target = transcripts.root / "exported"
    (target / "hand-made").mkdir(parents=True)
    (target / slug).mkdir()  # a folder of that name xsky did not export: left alone
    code, out, _ = await starter(env, "skills", "export", "--to", str(target), "--json")
    report = json.loads(out)
    assert (
        code == 0
        and report["exported"] == []
        and any("not exported by xsky" in x for x in report["skipped"])
    )
    (target / slug).rmdir()
    code, out, _ = await starter(env, "skills", "export", "--to", str(target), "--json")
    assert json.loads(out)["exported"] == [slug] and problems(target / slug) == []
    assert (
        "version: '1'" in (target / slug / "SKILL.md").read_text()
        and (target / "hand-made").is_dir()
    )

    # Every decision is recorded; every atom is in at most one skill's candidates.
    decisions = [
        json.loads(x) for x in (home / "skills" / ".decisions.jsonl").read_text().splitlines()
    ]
    assert {d["action"] for d in decisions} >= {"new", "add"}
    placed = [c["atom_id"] for s in slugs(home) for c in candidates_of(home, s)]
    assert len(placed) == len(set(placed))


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
    better = make_skill(home, "better-skill", "Does x. Use when x.", "STAGING better")
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

    from activities.skills.library import LibraryActivities
    from xsky.config import load_settings

    monkeypatch.setenv("XSKY_SKILLS_HOME", str(tmp_path / "home"))
    settings = load_settings()
    repo = make_skill(settings.skills_home, "slow-skill", "Does s. Use when s.", "STAGING slow")
    staging = skill_git.branch_commit(repo, "staging")
    server = Path(sys.executable).parent / "temporal-test-server"
    async with await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter, test_server_existing_path=str(server)
    ) as tenv:
        lib = LibraryActivities(settings)
        async with Worker(
            tenv.client,
            task_queue="ts",
            workflows=[SkillEntityWorkflow],
            activities=lib.all(),
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
