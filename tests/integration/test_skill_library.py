"""Atoms become versioned skills on a real dev server: clustering, baby → main → staging with the
seed's guards, concurrent atoms, the canary deciding in git, and crashes during an edit."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from activities import skill_git
from activities.skill_files import CANDIDATES, skill_dir, slugs
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.test_skills_watch import scan_once, start_pipeline, start_skills_worker, wait_until
from tests.skills_fixtures import Transcripts, clone_codex
from workflows.skill_entity import SkillEntityWorkflow
from xsky.skill_models import AddCandidates, Candidate, CanaryVerdict, RecordScores, Score, SkillEntityInput, SkillView, entity_workflow_id
from xsky.skill_spec import problems, split

pytestmark = pytest.mark.integration


def skills_on(home: Path) -> dict[str, dict[str, str | None]]:
    return {s: {b: skill_git.branch_commit(skill_dir(home, s), b) for b in ("baby", "main", "staging")} for s in slugs(home)}


def candidates_of(home: Path, slug: str) -> list[dict[str, Any]]:
    import yaml

    path = skill_dir(home, slug) / CANDIDATES
    return (yaml.safe_load(path.read_text()) or {}).get("candidates", []) if path.is_file() else []


async def view(env: Env, slug: str) -> SkillView:
    return await env.client.get_workflow_handle_for(SkillEntityWorkflow.run, entity_workflow_id(env.settings.task_queue, slug)).query(
        SkillEntityWorkflow.view)


async def test_atoms_grow_a_baby_skill_published_on_main_then_a_staging_candidate_under_the_guards(env: Env, transcripts: Transcripts):
    await start_pipeline(env)
    home, queue = transcripts.home, env.settings.skills_queue
    clone_codex(transcripts, 1)
    await scan_once(env.client, queue)
    await wait_until(lambda: any(b["main"] for b in skills_on(home).values()), 60, "a first version on main")
    (slug,) = [s for s, b in skills_on(home).items() if b["main"]]
    repo = skill_dir(home, slug)
    first = skill_git.message(repo, skill_git.branch_commit(repo, "main"))
    assert first.startswith(f"commit_baby_to_main: {slug} v1") and "atom_traj_codex_learn_" in first
    await wait_until(lambda: any(c["status"] == "consumed" for c in candidates_of(home, slug)), 30, "the batch marked consumed")
    consumed = [c for c in candidates_of(home, slug) if c["status"] == "consumed"]
    assert consumed and all(c["atom_id"] in first for c in consumed), "the commit names the atoms it is based on"
    assert skill_git.branch_commit(repo, "baby") is None, "baby was renamed main"
    assert problems(repo) == []
    front, body = split((repo / "SKILL.md").read_text())
    assert front["name"] == slug and "Use when" in front["description"] and set(front) <= {"name", "description", "metadata"}

    # More of the same work: weight piles up, but main has no real UX score yet → no staging.
    clone_codex(transcripts, 2, day="29")
    await scan_once(env.client, queue)
    await wait_until(_weight_at_least(env, slug, 10), 60, "pending weight ≥ 10")
    await asyncio.sleep(1.0)
    assert skill_git.branch_commit(repo, "staging") is None, "no staging without a UX score for main"

    # A session that used the published skill scores main; the edit may now run → staging.
    clone_codex(transcripts, 1, day="28", skill_read=slug)
    await scan_once(env.client, queue)
    await wait_until(lambda: skill_git.branch_commit(repo, "staging") is not None, 60, "a staging commit")
    staging = skill_git.branch_commit(repo, "staging")
    assert skill_git.message(repo, staging).startswith(f"commit_to_staging: {slug} v2")
    assert split(skill_git.show(repo, "staging") or "")[0]["metadata"]["version"] == "2"
    assert split(skill_git.show(repo, "main") or "")[0]["metadata"]["version"] == "1"
    v = await view(env, slug)
    assert v.canary["n_main"] >= 1 and v.staging_commit == staging

    # Even more weight: still one staging version, never a second.
    clone_codex(transcripts, 3, day="27")
    await scan_once(env.client, queue)
    await wait_until(_weight_at_least(env, slug, 10), 60, "pending weight ≥ 10 again")
    await asyncio.sleep(1.0)
    assert skill_git.branch_commit(repo, "staging") == staging
    assert [b for b in skill_git.git(repo, "branch", "--format=%(refname:short)").split()] == ["main", "staging"]

    # Every decision is recorded; every atom is in at most one skill's candidates.
    decisions = [json.loads(x) for x in (home / "skills" / ".decisions.jsonl").read_text().splitlines()]
    assert {d["action"] for d in decisions} >= {"new", "add"}
    placed = [c["atom_id"] for s in slugs(home) for c in candidates_of(home, s)]
    assert len(placed) == len(set(placed))


def _weight_at_least(env: Env, slug: str, weight: int) -> Any:
    async def check() -> bool:
        return (await view(env, slug)).pending_weight >= weight
    return check
