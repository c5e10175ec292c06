"""Skills in use and under edit on a real dev server: a role reads its skill (staging reads the
staging text), a worker killed during SkillEditAgent leaves no half commit, and with a model the
cluster agent and the skill editor decide and write."""

from __future__ import annotations

import json
import os
import signal
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from activities.skills import git as skill_git
from activities.skills.files import skill_dir
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.skill_library_helpers import (
    make_skill,
    on_branch,
    write_atoms,
)
from tests.integration.test_durability import stop_worker_process
from tests.integration.test_skills_watch import (
    scan_once,
    start_pipeline,
    start_skills_worker,
)
from tests.skills_fixtures import Transcripts
from workflows.skills.entity import SkillEntityWorkflow
from xsky.skills.models import (
    AddCandidates,
    Candidate,
    SkillEntityInput,
    entity_workflow_id,
)
from xsky.skills.spec import render

pytestmark = pytest.mark.integration


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


BAD_SKILL = """# Fix flaky tests

## When to use

- {prompt}

## Steps

1. Run `/home/dev/shop/scripts/rerun.sh` as in {atom}.
"""
GOOD_BODY = """# Fix flaky tests

1. Run the failing test alone, ten times: `pytest -p no:randomly tests/test_payments.py --count 10`.
2. Look for shared state: module-scoped fixtures, the clock, network calls; isolate it.
3. Replace sleeps with a wait on the condition, then run the loop again until it passes every time.

## Pitfalls

- Re-running the whole suite until it passes hides the flake; fix its cause.
"""
GOOD_DESCRIPTION = (
    "Finds and fixes tests that fail now and then in CI. Use when a test passes locally but "
    "fails intermittently in the pipeline or times out on retries."
)


def cluster_model(req: dict[str, Any]) -> Reply:
    """TaskClusterAgent as a model would answer: add to the skill once it exists, else propose it
    with the seeds of other sessions it sees (a seed, the first time)."""
    import re

    if turn_of(req) > 0:
        return text("placed")
    prompt = req["messages"][1]["content"]
    if "- fix-flaky-tests [" in prompt:
        return calls(
            (
                "add_to_skill",
                {"skill": "fix-flaky-tests", "weightscore": 6, "reason": "the same fix again"},
            )
        )
    seeds = re.findall(r"^- (atom_\S+) \(project", prompt, re.M)
    return calls(
        (
            "new_skill_folder",
            {
                "name": "fix-flaky-tests",
                "weightscore": 8,
                "reason": "a reusable way to fix flaky tests",
                "description": GOOD_DESCRIPTION,
                "seed_atoms": seeds,
            },
        )
    )


def editor_model(req: dict[str, Any], bad_only: bool = False) -> Reply:
    """SkillEditAgent: first a SKILL.md that breaks the authoring rules (a raw prompt under
    'When to use', a path of the recording machine, an atom id); told the problems, a good one."""
    import re

    turn = turn_of(req)
    content = req["messages"][1]["content"]
    atom = re.search(r"^- (atom_\S+) ", content, re.M)
    prompt = re.search(r"UX \d+\): (.*)$", content, re.M)
    if turn == 0 or (bad_only and turn % 2 == 0):
        body = BAD_SKILL.format(
            prompt=prompt.group(1) if prompt else "", atom=atom.group(1) if atom else ""
        )
        return calls(
            (
                "write_file",
                {"path": "SKILL.md", "content": render("fix-flaky-tests", GOOD_DESCRIPTION, body)},
            )
        )
    if turn == 2:
        return calls(
            (
                "write_file",
                {
                    "path": "SKILL.md",
                    "content": render(
                        "fix-flaky-tests", GOOD_DESCRIPTION, GOOD_BODY, {"version": "1"}
                    ),
                },
            )
        )
    return text("written")


async def test_with_a_model_a_skill_is_written_from_two_sessions_to_the_authoring_rules(
    env: Env, transcripts: Transcripts, fake_llm: FakeLLM
):
    from tests.integration.skill_library_helpers import claude_session, only_these_transcripts
    from tests.integration.test_skill_library import COMMANDS, FLAKY, library_idle
    from tests.integration.test_skills_watch import submitting_responder
    from xsky.skills.spec import problems

    task_agent = submitting_responder(None)

    def responder(req: dict[str, Any], i: int) -> Reply:
        system = req["messages"][0]["content"]
        if system.startswith("You cut a coding agent's transcript"):
            reply = task_agent(req, i)
            for _, args in reply.tool_calls:  # the person's words as the atom's intent
                args.update(intent=FLAKY, tags=["pytest", "flaky"], used_skills=[])
            return reply
        if system.startswith("You organise a library"):
            return cluster_model(req)
        return editor_model(req)

    fake_llm.responder = responder
    await start_pipeline(env)
    home, queue = transcripts.home, env.settings.skills_queue
    only_these_transcripts(transcripts)
    repo = skill_dir(home, "fix-flaky-tests")
    for n, when in enumerate(("every night", "since monday", "on friday")):
        claude_session(transcripts.claude, "shop", FLAKY.replace("every night", when), COMMANDS)
        await scan_once(env.client, queue)
        await library_idle(env)
        if n == 0:  # one session: the model's new skill is held as a seed
            assert not repo.exists(), "one session founded a skill"
    main = await eventually(lambda: on_branch(repo, "main"), 60)  # the model-written first version
    message = skill_git.message(repo, main)
    assert message.startswith("commit_baby_to_main: fix-flaky-tests v1")
    assert "Written by: model fake-model" in message
    trajectories = {
        a.split("_")[4] for a in message.split("Atoms: ", 1)[1].split("\n")[0].split(", ")
    }
    assert len(trajectories) >= 2, f"the first version rests on one session: {message}"
    published = skill_git.show(repo, "main") or ""
    assert "Run the failing test alone" in published and "/home/" not in published
    intents = [
        r["messages"][1]["content"]
        for r in fake_llm.requests
        if "You maintain one Agent Skill" in r["messages"][0]["content"]
    ]
    assert intents, "SkillEditAgent never asked the model"
    assert problems(repo, prompts=[FLAKY]) == []
    # The first SKILL.md broke the rules: the validator's problems went back to the model.
    told = [
        m["content"]
        for r in fake_llm.requests
        for m in r["messages"]
        if m.get("role") == "user" and m["content"].startswith("The folder is not valid yet")
    ]
    assert told and all(
        rule in told[0]
        for rule in (
            "'When to use' list holds raw prompts",
            "absolute path",
            "atom or trajectory id",
        )
    ), told
    decisions = [
        json.loads(x) for x in (home / "skills" / ".decisions.jsonl").read_text().splitlines()
    ]
    assert [d["action"] for d in decisions][:2] == ["seed", "new"]
    assert all(d["by"] == "model" for d in decisions)


async def test_with_a_model_a_skill_md_that_keeps_breaking_the_rules_is_never_committed(
    env: Env, transcripts: Transcripts, fake_llm: FakeLLM
):
    from tests.integration.skill_library_helpers import entity, settled_view

    def responder(req: dict[str, Any], i: int) -> Reply:
        return editor_model(req, bad_only=True)

    fake_llm.responder = responder
    await start_pipeline(env)
    home = transcripts.home
    seed = home / ".seed" / "fix-flaky-tests"
    seed.mkdir(parents=True)
    (seed / "SKILL.md").write_text(
        render("fix-flaky-tests", GOOD_DESCRIPTION, "draft", {"state": "draft"})
    )
    repo = skill_dir(home, "fix-flaky-tests")
    baby = skill_git.init(repo, seed, "new_skill_folder: fix-flaky-tests")
    ids = write_atoms(
        home, "traj_cc_shop_00000003", [("fix the flaky payment tests in ci today", ["tests"])] * 2
    )
    await entity(
        env,
        "fix-flaky-tests",
        "add_candidates",
        AddCandidates(
            candidates=[
                Candidate(atom_id=a, traj_id="traj_cc_shop_00000003", weightscore=6) for a in ids
            ]
        ),
    )

    async def refused() -> None:
        v = await settled_view(env, "fix-flaky-tests")
        assert v.last_edit_error, "the edit has not been refused yet"

    await eventually(refused, 60)
    v = await settled_view(env, "fix-flaky-tests")
    assert "does not meet the Agent Skills specification" in (v.last_edit_error or "")
    for rule in ("raw prompts", "absolute path", "atom or trajectory id"):
        assert rule in (v.last_edit_error or ""), v.last_edit_error
    assert (
        skill_git.branch_commit(repo, "main") is None
        and skill_git.branch_commit(repo, "baby") == baby
    )
    assert len(v.pending) == 2, "a refused edit leaves the candidates pending"


async def test_with_a_model_main_then_one_staging_under_the_guards_and_export_takes_main_only(
    env: Env, transcripts: Transcripts, fake_llm: FakeLLM
):
    """The founding atom's weight does not count; the model's first version goes to main; more
    weight makes no staging until main has a real UX score; then one staging version, never two."""
    import re

    from tests.integration.skill_library_helpers import (
        candidates_of,
        entity,
        settled_view,
    )
    from tests.integration.test_cli_runs import starter
    from xsky.skills.models import RecordScores, Score
    from xsky.skills.spec import problems, split

    def responder(req: dict[str, Any], i: int) -> Reply:
        if turn_of(req) > 0:
            return text("written")
        version = re.search(r"writing version (\d+)", req["messages"][1]["content"])
        return calls(
            (
                "write_file",
                {
                    "path": "SKILL.md",
                    "content": render(
                        "fix-flaky-tests",
                        GOOD_DESCRIPTION,
                        GOOD_BODY,
                        {"version": version.group(1) if version else "?"},
                    ),
                },
            )
        )

    fake_llm.responder = responder
    await start_pipeline(env)
    home, slug = transcripts.home, "fix-flaky-tests"
    seed = home / ".seed" / slug
    seed.mkdir(parents=True)
    (seed / "SKILL.md").write_text(render(slug, GOOD_DESCRIPTION, "draft", {"state": "draft"}))
    repo = skill_dir(home, slug)
    skill_git.init(repo, seed, f"new_skill_folder: {slug}")
    traj = "traj_cc_shop_00000004"
    ids = write_atoms(home, traj, [("fix the flaky payment tests in ci", ["tests"])] * 8)

    def batch(*atoms: str, founding: bool = False) -> AddCandidates:
        return AddCandidates(
            candidates=[
                Candidate(atom_id=a, traj_id=traj, weightscore=6, founding=founding) for a in atoms
            ]
        )

    # A founding atom of weight 6 and one more of 6: 6 counts, no edit.
    await entity(env, slug, "add_candidates", batch(ids[0], founding=True))
    await entity(env, slug, "add_candidates", batch(ids[1]))
    v = await eventually(lambda: settled_view(env, slug))
    assert v.pending_weight == 6 and skill_git.branch_commit(repo, "main") is None
    await entity(env, slug, "add_candidates", batch(ids[2]))
    main = await eventually(lambda: on_branch(repo, "main"), 60)
    assert skill_git.message(repo, main).startswith(f"commit_baby_to_main: {slug} v1")
    assert (
        problems(repo) == []
        and split(skill_git.show(repo, "main") or "")[0]["metadata"]["version"] == "1"
    )

    # More weight, but main has no UX score yet: no staging.
    await entity(env, slug, "add_candidates", batch(ids[3], ids[4]))
    v = await eventually(lambda: settled_view(env, slug))
    assert v.pending_weight >= 10 and v.staging_commit is None
    # A session that used main scores it: the edit may run, onto staging.
    await entity(
        env,
        slug,
        "record_scores",
        RecordScores(scores=[Score(traj_id="used-1", side="main", commit=main, score=8)]),
    )
    staging = await eventually(lambda: on_branch(repo, "staging"), 60)
    assert skill_git.message(repo, staging).startswith(f"commit_to_staging: {slug} v2")
    await entity(env, slug, "add_candidates", batch(ids[5], ids[6]))
    v = await eventually(lambda: settled_view(env, slug))
    assert v.staging_commit == staging and skill_git.branch_commit(repo, "staging") == staging
    assert {c["status"] for c in candidates_of(home, slug)} == {"consumed", "pending"}

    code, out, _ = await starter(env, "skills", "list", "--json")
    (row,) = json.loads(out)
    assert code == 0 and row["state"] == "staging" and not row["draft"]
    target = transcripts.root / "exported"
    code, out, _ = await starter(env, "skills", "export", "--to", str(target), "--json")
    assert json.loads(out)["exported"] == [slug]
    exported = (target / slug / "SKILL.md").read_text()
    assert "version: '1'" in exported and problems(target / slug) == []
