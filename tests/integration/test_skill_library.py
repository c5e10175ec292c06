"""Atoms become versioned skills on a real dev server: clustering, baby → main → staging with the
seed's guards, concurrent atoms, the canary deciding in git, and crashes during an edit."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.skills import git as skill_git
from activities.skills.files import CANDIDATES, skill_dir, slugs
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.helpers import settled
from tests.integration.test_durability import stop_worker_process
from tests.integration.test_skills_watch import (
    scan_once,
    start_pipeline,
    start_skills_worker,
)
from tests.skills_fixtures import Transcripts, clone_codex
from workflows.skills.entity import SkillEntityWorkflow
from xsky.skills.models import (
    AddCandidates,
    Candidate,
    RecordScores,
    Score,
    SkillEntityInput,
    SkillView,
    entity_workflow_id,
)
from xsky.skills.spec import problems, split

pytestmark = pytest.mark.integration


def skills_on(home: Path) -> dict[str, dict[str, str | None]]:
    return {
        s: {b: skill_git.branch_commit(skill_dir(home, s), b) for b in ("baby", "main", "staging")}
        for s in slugs(home)
    }


def candidates_of(home: Path, slug: str) -> list[dict[str, Any]]:
    import yaml

    path = skill_dir(home, slug) / CANDIDATES
    return (yaml.safe_load(path.read_text()) or {}).get("candidates", []) if path.is_file() else []


def entity_handle(env: Env, slug: str) -> Any:
    return env.client.get_workflow_handle_for(
        SkillEntityWorkflow.run, entity_workflow_id(env.settings.task_queue, slug)
    )


async def view(env: Env, slug: str) -> SkillView:
    return await entity_handle(env, slug).query(SkillEntityWorkflow.view)


def on_branch(repo: Path, branch: str) -> str:
    """Assert that the skill's repository has ``branch``; return its commit."""
    commit = skill_git.branch_commit(repo, branch) if repo.is_dir() else None
    assert commit is not None, f"{repo.name} has no {branch} branch yet"
    return commit


async def settled_view(env: Env, slug: str) -> SkillView:
    """The entity's view once it has nothing in flight: it has decided on all it was sent
    (an edit or a canary decision it found due would be a pending activity, or done)."""
    handle = entity_handle(env, slug)
    length = await settled(handle)
    v = await handle.query(SkillEntityWorkflow.view)
    assert await settled(handle) == length, "something came in meanwhile"
    return v


async def settled_at_weight(env: Env, slug: str, weight: int) -> SkillView:
    v = await settled_view(env, slug)
    assert v.pending_weight >= weight, f"pending weight {v.pending_weight}, wanted {weight}"
    return v


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


# -- helpers to build library states directly ---------------------------------------------------------------

TOPICS = {
    "deploy-kubernetes": (
        "deploy the {x} service to kubernetes with helm",
        ["deploy", "kubernetes", "helm"],
    ),
    "postgres-migrations": (
        "write a postgres migration adding a {x} column",
        ["postgres", "migration", "column"],
    ),
    "pytest-fixtures": (
        "refactor the {x} tests to use pytest fixtures",
        ["pytest", "fixtures", "tests"],
    ),
    "docker-images": (
        "shrink the {x} docker image with a multi-stage build",
        ["docker", "image", "multistage"],
    ),
    "react-forms": ("build the {x} form in react with validation", ["react", "form", "validation"]),
}


def make_skill(home: Path, slug: str, description: str, staging_body: str | None = None) -> Path:
    """A skill with a main version (and optionally a staging one), made with the same git helpers."""
    from xsky.skills.spec import render

    files = home / ".seed" / slug
    files.mkdir(parents=True, exist_ok=True)
    (files / "SKILL.md").write_text(
        render(slug, description, f"# {slug}\n\nMAIN VERSION of {slug}.\n", {"version": "1"})
    )
    repo = skill_dir(home, slug)
    skill_git.init(repo, files, f"new {slug}")
    skill_git.rename_baby_to_main(repo)
    if staging_body is not None:
        (files / "SKILL.md").write_text(render(slug, description, staging_body, {"version": "2"}))
        main = skill_git.branch_commit(repo, "main")
        skill_git.publish(
            repo,
            "staging",
            skill_git.commit_tree(repo, files, main, "commit_to_staging: test"),
            None,
        )
    return repo


def write_atoms(home: Path, traj: str, atoms: list[tuple[str, list[str]]]) -> list[str]:
    from activities.fsio import write_json
    from xsky.skills.atoms import AtomTask, Provenance, RawAnchor
    from xsky.skills.layout import atom_path

    ids = []
    for n, (intent, tags) in enumerate(atoms, start=1):
        aid = f"atom_{traj}_{n:04d}"
        atom = AtomTask(
            atom_id=aid,
            traj_id=traj,
            offset_start=n * 100,
            offset_end=n * 100 + 100,
            intent=intent,
            summary=f"Asked: {intent}. Agent used 4 tool calls.",
            tags=tags,
            ux_score=9,
            provenance=Provenance(
                raw=[
                    RawAnchor(
                        path="/raw.jsonl", byte_start=0, byte_end=1, call_ids=["a", "b", "c", "d"]
                    )
                ],
                ux_signals={"completed": 1},
                keywords=tags,
            ),
        )
        write_json(atom_path(home, traj, aid), atom.model_dump(mode="json"))
        ids.append(aid)
    return ids


async def entity(env: Env, slug: str, signal: str, arg: Any) -> None:
    await env.client.start_workflow(
        SkillEntityWorkflow.run,
        SkillEntityInput(slug=slug, heartbeat_timeout=3),
        id=entity_workflow_id(env.settings.task_queue, slug),
        task_queue=env.settings.skills_queue,
        start_signal=signal,
        start_signal_args=[arg],
    )


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


async def test_a_role_from_settings_reads_its_skill_and_the_staging_side_reads_the_staging_text(
    env: Env, transcripts: Transcripts, fake_llm: FakeLLM
):
    from tests.integration.helpers import plan
    from xsky.skills import canary

    make_skill(
        transcripts.home,
        "changelog-style",
        "Writes changelog entries. Use when releasing.",
        "STAGING TEXT of changelog-style",
    )
    settings_file = Path(os.environ["XSKY_PROJECT_DIR"]) / ".xsky" / "settings.json"
    settings_file.write_text(
        json.dumps(
            {
                "roles": {
                    "release-writer": {
                        "description": "writes release notes",
                        "allowedTools": ["file_list"],
                        "skillNames": ["changelog-style"],
                    }
                }
            }
        )
    )
    run_ids = {
        side: next(
            f"xsky-role-{side}-{i}"
            for i in range(1000)
            if canary.assign(f"xsky-role-{side}-{i}", "changelog-style") == side
        )
        for side in ("main", "staging")
    }

    def responder(req: dict[str, Any], i: int) -> Reply:
        if turn_of(req) == 0:
            return calls(("read_skill", {"name": "changelog-style"}))
        tool = [m for m in req["messages"] if m.get("role") == "tool"][-1]["content"]
        return text(
            "READ: "
            + (
                "STAGING"
                if "STAGING TEXT" in tool
                else "MAIN"
                if "MAIN VERSION" in tool
                else "NOTHING"
            )
        )

    fake_llm.responder = responder
    await env.start_worker(kinds=["llm"])
    from cli.roles_cmd import resolve_roles

    roles = resolve_roles()
    for side, run_id in run_ids.items():
        result = await env.run(
            plan('<agent name="release-writer" id="1"><task>write the 2.1 notes</task></agent>'),
            workflow_id=run_id,
            roles={"release-writer": roles["release-writer"]},
        )
        assert result.status == "completed", result.summary
        assert result.agents[0].result == f"READ: {side.upper()}"
        system = fake_llm.requests[-1]["messages"][0]["content"]
        assert "changelog-style: Writes changelog entries" in system
        (transcript,) = (env.home / "transcripts" / run_id).glob("*.jsonl")
        session = json.loads(transcript.read_text().splitlines()[0])
        repo = skill_dir(transcripts.home, "changelog-style")
        assert session["skills"] == [
            {"name": "changelog-style", "side": side, "commit": skill_git.branch_commit(repo, side)}
        ]


async def test_a_worker_killed_during_skill_edit_leaves_no_half_commit_and_the_edit_runs_again(
    tmp_path: Path, transcripts: Transcripts, monkeypatch: pytest.MonkeyPatch
):
    from temporalio.contrib.pydantic import pydantic_data_converter

    from cli.devserver import DevServer, free_port
    from xsky.config import load_settings
    from xsky.skills.spec import render

    fake = FakeLLM()
    hold = threading.Event()
    edits: list[int] = []

    def responder(req: dict[str, Any], i: int) -> Reply:
        if "You maintain one Agent Skill" not in req["messages"][0]["content"]:
            return text("unused")
        edits.append(i)
        hold.wait(120)
        if turn_of(req) == 0:
            return calls(
                (
                    "write_file",
                    {
                        "path": "SKILL.md",
                        "content": render(
                            "crash-skill",
                            "Rotates the API keys safely. Use when a key leaked or expires.",
                            "# Rotate keys\n\n1. Create the new key.\n",
                            {"version": "1"},
                        ),
                    },
                ),
                (
                    "write_file",
                    {"path": "scripts/check.sh", "content": "test -f SKILL.md && echo ok\n"},
                ),
            )
        return text("done")

    fake.responder = responder
    server = DevServer(
        db_path=tmp_path / "edit.db",
        port=free_port(),
        headless=True,
        log_path=tmp_path / "server.log",
    )
    server.start(timeout=90)
    monkeypatch.setenv("XSKY_TASK_QUEUE", f"e{uuid.uuid4().hex[:6]}")
    monkeypatch.setenv("TEMPORAL_ADDRESS", server.address)
    monkeypatch.setenv("XSKY_HOME", str(tmp_path / "xsky"))
    environ = dict(
        os.environ,
        OPENAI_BASE_URL=fake.base_url,
        OPENAI_API_KEY="sk-test-never-in-history-7c1f",
        XSKY_MODEL="fake-model",
        PYTHONUNBUFFERED="1",
    )
    settings = load_settings()
    home = settings.skills_home
    seed = home / ".seed" / "crash-skill"
    seed.mkdir(parents=True)
    (seed / "SKILL.md").write_text(
        render("crash-skill", "Rotates keys. Use when asked.", "baby", {"state": "baby"})
    )
    repo = skill_dir(home, "crash-skill")
    baby = skill_git.init(repo, seed, "new_skill_folder: crash-skill")
    ids = write_atoms(
        home,
        "traj_cc_keys_00000002",
        [("rotate the stripe api keys after a leak", ["keys", "rotate"])] * 2,
    )
    worker = start_skills_worker(environ, tmp_path / "w1.log")
    try:
        client = await Client.connect(server.address, data_converter=pydantic_data_converter)
        await client.start_workflow(
            SkillEntityWorkflow.run,
            SkillEntityInput(slug="crash-skill", heartbeat_timeout=3),
            id=entity_workflow_id(settings.task_queue, "crash-skill"),
            task_queue=settings.skills_queue,
            start_signal="add_candidates",
            start_signal_args=[
                AddCandidates(
                    candidates=[
                        Candidate(atom_id=a, traj_id="traj_cc_keys_00000002", weightscore=6)
                        for a in ids
                    ]
                )
            ],
        )

        def editing() -> None:
            assert edits, "SkillEditAgent has not asked the model"

        await eventually(editing, 60)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        assert (
            skill_git.branch_commit(repo, "baby") == baby
            and skill_git.branch_commit(repo, "main") is None
        )
        hold.set()
        worker = start_skills_worker(environ, tmp_path / "w2.log")
        entity_of_it = client.get_workflow_handle_for(
            SkillEntityWorkflow.run, entity_workflow_id(settings.task_queue, "crash-skill")
        )

        async def edited_again() -> None:
            """The edit, run again, is on main, and its activity is over (the branch moves
            before the work tree follows). Read in the history, not by a query: a query
            would first wait out the killed worker's sticky queue."""
            on_branch(repo, "main")
            events = [e async for e in entity_of_it.fetch_history_events()]
            edits = {
                e.event_id
                for e in events
                if e.HasField("activity_task_scheduled_event_attributes")
                and e.activity_task_scheduled_event_attributes.activity_type.name == "edit_skill"
            }
            assert any(
                e.activity_task_completed_event_attributes.scheduled_event_id in edits
                for e in events
                if e.HasField("activity_task_completed_event_attributes")
            ), "the edit's activity has not completed"

        await eventually(edited_again, 60)
        assert len(edits) >= 3, "the edit ran again after the kill"
        main = skill_git.branch_commit(repo, "main")
        assert (
            skill_git.git(repo, "rev-list", "--count", "main") == "2"
        )  # the baby commit and exactly one edit
        assert skill_git.git(repo, "rev-parse", "main^") == baby
        message = skill_git.message(repo, main)
        assert message.startswith("commit_baby_to_main: crash-skill v1") and all(
            a in message for a in ids
        )
        assert "Written by: model fake-model" in message
        assert [b for b in skill_git.git(repo, "branch", "--format=%(refname:short)").split()] == [
            "main"
        ]
        assert skill_git.git(repo, "status", "--porcelain") == ""
        assert skill_git.show(repo, "main", "scripts/check.sh") and "Rotate keys" in (
            skill_git.show(repo, "main") or ""
        )
    finally:
        stop_worker_process(worker)
        server.stop()
        fake.close()


async def test_with_a_model_the_cluster_agent_and_the_skill_editor_decide_and_write(
    env: Env, transcripts: Transcripts, fake_llm: FakeLLM
):
    from tests.integration.test_skills_watch import submitting_responder
    from xsky.skills.spec import render

    task_agent = submitting_responder(None)

    def responder(req: dict[str, Any], i: int) -> Reply:
        system = req["messages"][0]["content"]
        if system.startswith("You cut a coding agent's transcript"):
            return task_agent(req, i)
        if system.startswith("You organise a library"):
            if turn_of(req) > 0:
                return text("placed")
            if "(no skills yet)" in req["messages"][1]["content"]:
                return calls(
                    (
                        "new_skill_folder",
                        {
                            "name": "sql-index-migrations",
                            "weightscore": 8,
                            "reason": "reusable migration recipe",
                            "description": "Adds Postgres indexes with dbmate migrations. Use when a query needs an index.",
                        },
                    )
                )
            return calls(
                (
                    "add_to_skill",
                    {
                        "skill": "sql-index-migrations",
                        "weightscore": 6,
                        "reason": "same recipe again",
                    },
                )
            )
        if turn_of(req) == 0:
            return calls(
                ("AtomTaskRead", {"atom_id": "nope"}),
                (
                    "write_file",
                    {
                        "path": "SKILL.md",
                        "content": render(
                            "sql-index-migrations",
                            "Adds Postgres indexes with dbmate migrations. Use when a query needs an index.",
                            "# Index migrations\n\n1. CREATE INDEX CONCURRENTLY in its own migration.\n",
                        ),
                    },
                ),
            )
        return text("written")

    fake_llm.responder = responder
    await start_pipeline(env)
    home = transcripts.home
    for path in list(transcripts.claude.rglob("*.jsonl")) + list(
        (transcripts.codex / "archived_sessions").glob("*.jsonl")
    ):
        path.unlink()  # only the migration sessions, so the model's script fits them
    for path in (transcripts.codex / "sessions").rglob("*.jsonl"):
        if "0199a3c2" not in path.name:
            path.unlink()
    clone_codex(transcripts, 1)
    await scan_once(env.client, env.settings.skills_queue)
    repo = skill_dir(home, "sql-index-migrations")
    await eventually(lambda: on_branch(repo, "main"), 60)  # the model-written first version
    assert "CREATE INDEX CONCURRENTLY in its own migration" in (skill_git.show(repo, "main") or "")
    assert "Written by: model fake-model" in skill_git.message(
        repo, skill_git.branch_commit(repo, "main")
    )
    decisions = [
        json.loads(x) for x in (home / "skills" / ".decisions.jsonl").read_text().splitlines()
    ]
    assert decisions[0]["action"] == "new" and all(d["by"] == "model" for d in decisions)
    assert {d["action"] for d in decisions} <= {"new", "add"} and len(decisions) >= 2
