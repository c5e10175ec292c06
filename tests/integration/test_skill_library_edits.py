"""Skills in use and under edit on a real dev server: a role reads its skill (staging reads the
staging text), and a worker killed during SkillEditAgent leaves no half commit. With a model the
cluster agent and the skill editor decide and write: test_skill_authoring_model.py."""

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
    paired_wins,
    write_atoms,
)
from tests.integration.test_durability import stop_worker_process
from tests.integration.test_skills_watch import (
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

    fake.responder = paired_wins(responder)  # and the version beats no skill in its paired test
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
            skill_git.git(repo, "rev-list", "--count", "main") == "3"
        )  # the baby commit, exactly one edit and its paired test's record
        assert skill_git.git(repo, "rev-parse", "main^^") == baby
        assert "Paired-Of: " in skill_git.message(repo, main)
        message = skill_git.message(repo, f"{main}^")
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
        server.stop(kill=True)  # its database is thrown away: no graceful stop (~3 s)
        fake.close()
