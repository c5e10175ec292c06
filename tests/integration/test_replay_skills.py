"""Replay histories of the skill pipeline (recorded with test_replay.py's, the same command): a
scan, its deltas and the library routing their atoms; a skill entity that edits onto staging
and whose canary promotes."""

from __future__ import annotations

import pytest
from temporalio.api.enums.v1 import EventType

from tests.conftest import Env
from tests.fake_llm import FakeLLM, text
from tests.integration.eventually import eventually
from tests.integration.histories import events, idle_history, record
from tests.integration.test_replay import finish
from tests.skills_fixtures import Transcripts

pytestmark = pytest.mark.integration


async def test_a_skills_scan_its_deltas_and_the_library_replay(env: Env, transcripts: Transcripts):
    from tests.integration.test_skills_watch import scan_once, start_pipeline
    from tests.skills_fixtures import clone_codex
    from workflows.skills.library import SkillLibraryWorkflow
    from xsky.skills.models import library_workflow_id

    await start_pipeline(env)
    clone_codex(transcripts, 1)  # a second session of the same work: a skill is founded
    await scan_once(env.client, env.settings.skills_queue)
    queue = env.settings.skills_queue
    (scan,) = [
        w
        async for w in env.client.list_workflows(
            f"WorkflowType = 'SkillsScanWorkflow' AND TaskQueue = '{queue}'"
        )
    ]
    history = await finish("skills_scan", env.client.get_workflow_handle(scan.id))
    children = events(history, EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED)
    done = events(history, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED)
    assert children and len(done) == len(children)
    assert {
        e.start_child_workflow_execution_initiated_event_attributes.workflow_type.name
        for e in children
    } == {"SkillDeltaWorkflow"}
    # A delta that committed new atoms, so it routed them to the library.
    routed = []
    for e in children:
        child = e.start_child_workflow_execution_initiated_event_attributes.workflow_id
        delta = await env.client.get_workflow_handle(child).fetch_history()
        if any(
            s.activity_task_scheduled_event_attributes.activity_type.name == "route_atoms"
            for s in events(delta, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
        ):
            routed.append(delta)
    assert routed, "no delta routed atoms to the library"
    await record("skills_delta", routed[0])

    library = env.client.get_workflow_handle_for(
        SkillLibraryWorkflow.run, library_workflow_id(env.settings.task_queue)
    )

    async def decided() -> None:
        backlog = await library.query(SkillLibraryWorkflow.backlog)
        assert backlog["queued"] == 0, f"the library has not decided yet: {backlog}"
        assert sum(v for k, v in backlog.items() if k != "queued") > 0, backlog

    await eventually(decided, timeout=60)
    history = await idle_history(library, "the library idle")
    decisions = await library.query(SkillLibraryWorkflow.decisions)
    assert decisions and {d.action for d in decisions} >= {"new"}
    await record("skills_library", history)


async def test_a_skill_entity_edits_onto_staging_and_its_canary_promotes(
    env: Env, fake_llm: FakeLLM
):
    from activities.skills import git as skill_git
    from tests.fake_llm import calls, turn_of
    from tests.integration.skill_library_helpers import make_skill, paired_wins, write_atoms
    from tests.integration.test_skills_watch import start_pipeline
    from workflows.skills.entity import SkillEntityWorkflow
    from xsky.skills.models import (
        AddCandidates,
        Candidate,
        RecordScores,
        Score,
        SkillEntityInput,
        entity_workflow_id,
    )
    from xsky.skills.spec import render

    # Offline nothing is published: SkillEditAgent is a model that writes the new version, and
    # the paired test's agent and comparator find it better than main on the held-out tasks.
    fake_llm.responder = paired_wins(
        lambda req, i: (
            calls(
                (
                    "write_file",
                    {
                        "path": "SKILL.md",
                        "content": render(
                            "rotate-api-keys",
                            "Rotates API keys safely. Use when a key leaked or expires.",
                            "# Rotate keys\n\n1. Create the new key.\n2. Revoke the old one.\n",
                        ),
                    },
                )
            )
            if turn_of(req) == 0
            else text("written")
        )
    )
    await start_pipeline(env)
    home, slug = env.settings.skills_home, "rotate-api-keys"
    repo = make_skill(home, slug, "Rotates API keys. Use when a key leaked.")
    main = skill_git.branch_commit(repo, "main")
    assert main is not None
    traj = "traj_cc_replay_00000001"
    atoms = write_atoms(home, traj, [("rotate the stripe api keys", ["keys", "rotate"])] * 2)
    handle = await env.client.start_workflow(
        SkillEntityWorkflow.run,
        SkillEntityInput(slug=slug, heartbeat_timeout=3),
        id=entity_workflow_id(env.settings.task_queue, slug),
        task_queue=env.settings.skills_queue,
        start_signal="record_scores",  # main was used once: the seed's guard lets an edit run
        start_signal_args=[
            RecordScores(scores=[Score(traj_id="used-0", side="main", commit=main, score=7)])
        ],
    )
    env.handles.append(handle)
    await handle.signal(
        SkillEntityWorkflow.add_candidates,
        AddCandidates(
            candidates=[Candidate(atom_id=a, traj_id=traj, weightscore=6) for a in atoms]
        ),
    )

    async def staged() -> None:
        view = await handle.query(SkillEntityWorkflow.view)
        assert view.staging_commit is not None, "SkillEditAgent's version is not on staging yet"
        assert view.paired is not None, "the version's paired test has not run yet"

    await eventually(staged, timeout=60)
    view = await handle.query(SkillEntityWorkflow.view)
    staging = view.staging_commit
    assert staging is not None and staging == skill_git.branch_commit(repo, "staging")
    # staging's tip is the paired test's record, on top of the version SkillEditAgent wrote
    assert view.paired is not None and view.paired.passed and view.paired.record_commit == staging
    assert skill_git.message(repo, f"{staging}^").startswith("commit_to_staging: rotate-api-keys")
    scores = [Score(traj_id=f"m{i}", side="main", commit=main, score=7) for i in range(21)]
    scores += [Score(traj_id=f"s{i}", side="staging", commit=staging, score=8) for i in range(21)]
    await handle.signal(SkillEntityWorkflow.record_scores, RecordScores(scores=scores))

    async def promoted() -> None:
        view = await handle.query(SkillEntityWorkflow.view)
        assert view.staging_commit is None and view.main_commit != main, "not promoted yet"

    await eventually(promoted, timeout=60)
    assert skill_git.git(repo, "rev-parse", "main^2") == staging
    history = await idle_history(handle, "the entity idle")
    kinds = [e.kind for e in (await handle.query(SkillEntityWorkflow.view)).events]
    assert kinds[-5:] == ["edit", "staging", "paired", "paired", "promote"], kinds
    await record("skill_entity", history)
