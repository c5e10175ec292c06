"""Helpers of the skill-library tests: reading a library's state, waiting for an entity to settle,
and building library states directly (skills, atoms, candidates)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from activities.skills import git as skill_git
from activities.skills.files import CANDIDATES, skill_dir, slugs
from tests.conftest import Env
from tests.fake_llm import Reply
from tests.integration.helpers import settled
from workflows.skills.entity import SkillEntityWorkflow
from xsky.skills.models import (
    SkillEntityInput,
    SkillView,
    entity_workflow_id,
)

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


def paired_tip(repo: Path, branch: str) -> str:
    """Assert that ``branch``'s tip is a paired test's record (committed on top of the version
    it tested); return it."""
    commit = on_branch(repo, branch)
    assert "Paired-Of: " in skill_git.message(repo, commit), f"{branch} has no paired test yet"
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


def make_skill(
    home: Path,
    slug: str,
    description: str,
    staging_body: str | None = None,
    paired: bool = False,
) -> Path:
    """A skill with a main version (and optionally a staging one), made with the same git helpers.

    ``paired``: the staging version carries a passing paired test (``.paired.json`` committed on
    top of it, as activities/skills/paired_test does), so the canary may promote it."""
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
        version = skill_git.commit_tree(repo, files, main, "commit_to_staging: test")
        skill_git.publish(repo, "staging", version, None)
        if paired:
            commit_passing_paired(repo, files, version, main or "")
    return repo


def commit_passing_paired(repo: Path, files: Path, version: str, main: str) -> str:
    """``.paired.json`` of a test the version passed (it beat ``main`` on three held-out tasks),
    committed on top of it on staging; returns the new staging tip."""
    from activities.skills.paired_test import trailer
    from xsky.skills.paired import RECORD, Trial, summarise

    trials = [
        Trial(task=f"atom_held_{n}", shown_first="with", with_score=9, baseline_score=5)
        for n in range(3)
    ]
    result = summarise(trials, version, f"main {main[:10]}", "fake-model", ["atom_held_0"])
    assert result.passed, result.line()
    (files / RECORD).write_text(result.model_dump_json(indent=1) + "\n", encoding="utf-8")
    commit = skill_git.commit_tree(
        repo, files, version, f"paired test: {result.line()}\n\n{trailer(version)}\n"
    )
    skill_git.publish(repo, "staging", commit, version)
    (files / RECORD).unlink()
    return commit


def paired_wins(
    responder: Callable[[dict[str, Any], int], Reply], echo: str = ""
) -> Callable[..., Reply]:
    """``responder`` that also answers the paired test's calls (activities/skills/paired_test),
    so that the version SkillEditAgent wrote last beats its baseline: the trial agent (known by
    its system prompt) says which written SKILL.md it had loaded — its rank among those the
    scripted editor wrote, -1 for no skill or one the test made — and the blind comparator (known
    by its system prompt) scores the answer of the higher rank 9 and the other 5 (a tie 5 each).
    Every other request goes to ``responder``, whose SKILL.md writes are noted in order.
    ``echo``: said in every answer of the trial agent and the comparator too."""
    import json
    import re

    from activities.skills.paired_test import AGENT_SYSTEM, COMPARATOR_SYSTEM, SKILL_LOADED
    from tests.fake_llm import first_user, system, text

    written: list[str] = []

    def respond(req: dict[str, Any], i: int) -> Reply:
        prompt = system(req)
        if prompt.startswith(AGENT_SYSTEM):
            loaded = prompt.split(SKILL_LOADED, 1)[1].strip() if SKILL_LOADED in prompt else None
            rank = written.index(loaded) if loaded in written else -1
            return text(f"Skill rank {rank}: I did the task and verified the result. {echo}")
        if prompt == COMPARATOR_SYSTEM:
            one, two = (int(r) for r in re.findall(r"Skill rank (-?\d+)", first_user(req)))
            score = lambda a, b: 9 if a > b else 5  # noqa: E731
            scores = {"score_1": score(one, two), "score_2": score(two, one)}
            return text(f"{json.dumps(scores)} {echo}".strip())
        reply = responder(req, i)
        for name, args in reply.tool_calls:
            content = str(args.get("content", "")).strip()
            if name == "write_file" and args.get("path") == "SKILL.md" and content not in written:
                written.append(content)
        return reply

    return respond


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


# -- Claude Code-shaped sessions written by the tests -----------------------------------------------------


def claude_session(
    projects: Path,
    project: str,
    prompt: str,
    commands: list[str | tuple[str, dict[str, Any]]],
    failing: frozenset[int] = frozenset(),
) -> Path:
    """A Claude Code session of one task in ``<projects>/-home-dev-<project>/<uuid>.jsonl``: the
    person's prompt, one call per command (a Bash command, or a ``(tool, input)`` pair), each
    succeeding but those whose index is in ``failing``, and the agent's closing words."""
    import json
    import uuid

    sid = str(uuid.uuid4())
    cwd = f"/home/dev/{project}"
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    clock = iter(range(10, 60))

    def add(record: dict[str, Any]) -> None:
        nonlocal parent
        me = str(uuid.uuid4())
        lines.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": cwd,
                "sessionId": sid,
                "version": "2.1.7",
                "gitBranch": "main",
                "uuid": me,
                "timestamp": f"2026-11-20T10:00:{next(clock):02d}.000Z",
                **record,
            }
        )
        parent = me

    add({"type": "user", "message": {"role": "user", "content": prompt}})
    for n, command in enumerate(commands):
        call = f"toolu_{sid[:8]}{n:02d}"
        add(
            {
                "type": "assistant",
                "requestId": f"req_{sid[:8]}{n}",
                "message": {
                    "model": "claude-sonnet-4-5",
                    "id": f"msg_{sid[:8]}{n}",
                    "type": "message",
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": call,
                            "name": command[0] if isinstance(command, tuple) else "Bash",
                            "input": command[1]
                            if isinstance(command, tuple)
                            else {"command": command},
                        }
                    ],
                    "stop_reason": "tool_use",
                },
            }
        )
        add(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": call,
                            "type": "tool_result",
                            "content": "failed" if n in failing else "ok",
                            "is_error": n in failing,
                        }
                    ],
                },
                "toolUseResult": {"stdout": "ok", "stderr": "", "interrupted": False},
            }
        )
    add(
        {
            "type": "assistant",
            "requestId": f"req_{sid[:8]}end",
            "message": {
                "model": "claude-sonnet-4-5",
                "id": f"msg_{sid[:8]}end",
                "type": "message",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Done: the tests pass ten times in a row now."}
                ],
                "stop_reason": "end_turn",
            },
        }
    )
    path = projects / f"-home-dev-{project}" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def only_these_transcripts(t: Any) -> None:
    """Remove the fixture sessions, so a test's own sessions are the only evidence."""
    for path in list(t.claude.rglob("*.jsonl")) + list(t.codex.rglob("*.jsonl")):
        path.unlink()
