"""Skills written with a model on a real dev server (the fake OpenAI-compatible server scripted
as the cluster agent and the skill editor): a skill from two sessions to the authoring rules,
one that keeps breaking them never committed, main then one staging under the guards."""

from __future__ import annotations

import json
from typing import Any

import pytest

from activities.skills import git as skill_git
from activities.skills.files import skill_dir
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.skill_library_helpers import (
    on_branch,
    paired_tip,
    paired_wins,
    write_atoms,
)
from tests.integration.test_skills_watch import (
    scan_once,
    start_pipeline,
)
from tests.skills_fixtures import Transcripts
from xsky.skills.models import (
    AddCandidates,
    Candidate,
)
from xsky.skills.paired import RECORD
from xsky.skills.spec import render

pytestmark = pytest.mark.integration


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

    fake_llm.responder = paired_wins(responder)
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
    # main's tip is the paired test it passed, on top of the version the model wrote
    beat = "paired test (model-judged, 3 trials a side vs no skill): better"
    assert beat in skill_git.message(repo, main)
    assert json.loads(skill_git.show(repo, main, RECORD) or "{}")["verdict"] == "better"
    message = skill_git.message(repo, f"{main}^")
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

    fake_llm.responder = paired_wins(responder)
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
    assert "paired test (model-judged, 3 trials a side vs no skill): better" in (
        skill_git.message(repo, main)
    )
    assert skill_git.message(repo, f"{main}^").startswith(f"commit_baby_to_main: {slug} v1")
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
    # staging's tip, once its paired test beat main: the record on top of the version
    staging = await eventually(lambda: paired_tip(repo, "staging"), 60)
    assert skill_git.message(repo, f"{staging}^").startswith(f"commit_to_staging: {slug} v2")
    assert json.loads(skill_git.show(repo, staging, RECORD) or "{}")["verdict"] == "better"
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
    assert not (target / slug / RECORD).exists(), "the paired test's record was exported"
