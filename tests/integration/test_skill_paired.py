"""Recurring work and the paired test on a real dev server: four "work on bead" sessions become
one candidate offline (an unrelated pair that shares words does not); with a scripted model, a
first version that helps on held-out tasks is published and one that does not stays on baby,
each result committed with its version and labelled model-judged."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from activities.skills import git as skill_git
from activities.skills.files import skill_dir, slugs
from activities.skills.paired_test import AGENT_SYSTEM, COMPARATOR_SYSTEM
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.skill_library_helpers import (
    candidates_of,
    entity,
    only_these_transcripts,
    settled_view,
    write_atoms,
)
from tests.skills_fixtures import Transcripts
from xsky.skills.models import AddCandidates, Candidate
from xsky.skills.paired import RECORD
from xsky.skills.spec import render

pytestmark = pytest.mark.integration


async def test_four_sessions_of_recurring_work_become_one_candidate_offline(
    env: Env, transcripts: Transcripts
):
    from tests.integration.test_cli_runs import starter
    from tests.integration.test_skill_library import library_idle
    from tests.integration.test_skills_watch import scan_once, start_pipeline
    from tests.recurring_sessions import write_bead_sessions, write_unrelated_pair

    await start_pipeline(env)
    home = transcripts.home
    only_these_transcripts(transcripts)
    write_unrelated_pair(transcripts.claude)
    write_bead_sessions(transcripts.claude)
    await scan_once(env.client, env.settings.skills_queue)
    await library_idle(env)
    (slug,) = slugs(home)  # one candidate: the beads; the "analyze … sessions" pair founds none
    v = await eventually(lambda: settled_view(env, slug))
    atoms = [c["atom_id"] for c in candidates_of(home, slug)]
    assert len(atoms) == 4 and len({a.rsplit("_", 1)[0] for a in atoms}) == 4, atoms
    assert v.state == "baby" and skill_git.branch_commit(skill_dir(home, slug), "main") is None
    code, out, _ = await starter(env, "skills", "list", "--json")
    (row,) = json.loads(out)
    assert code == 0 and row["draft"] and row["evidence"].startswith("4 task(s) from 4 session(s)")
    assert "a model would be asked to write SKILL.md" in row["modelWouldWrite"]
    assert row["pairedLine"] == "no paired test yet"
    code, out, _ = await starter(env, "skills", "list")
    said = " ".join(out.split())
    assert "the same kind of task in 2 or more sessions" in said and "at 7 the measured" in said


HELPS = "1. Run the tests twice and verify the result before closing."
IDLE = "1. Think about the task."


def scripted(req: dict[str, Any], i: int) -> Reply:
    """The editor writes each skill's version; the agent answers better with the helpful skill
    loaded; the comparator scores the answer that verified higher, blind to which had the skill."""
    system = req["messages"][0]["content"]
    if system.startswith("You maintain one Agent Skill"):
        if turn_of(req) > 0:
            return text("written")
        slug = (
            "tidy-imports" if "tidy-imports" in json.dumps(req["messages"]) else "rotate-api-keys"
        )
        body = f"# {slug}\n\n" + (HELPS if slug == "rotate-api-keys" else IDLE)
        description = (
            f"Does {slug.replace('-', ' ')} safely. Use when asked to {slug.replace('-', ' ')}."
        )
        return calls(
            ("write_file", {"path": "SKILL.md", "content": render(slug, description, body)})
        )
    if system.startswith(AGENT_SYSTEM):
        return text("I ran the tests twice: verified." if HELPS in system else "I changed it.")
    if system == COMPARATOR_SYSTEM:
        asked = req["messages"][1]["content"]
        one, two = re.split(r"\nAnswer 2:\n", asked.split("\nAnswer 1:\n", 1)[1])
        score = lambda a: 9 if "verified" in a else 5  # noqa: E731
        return text(json.dumps({"score_1": score(one), "score_2": score(two)}))
    return text("ok")


async def test_a_first_version_is_published_only_when_its_paired_test_shows_it_helps(
    env: Env, fake_llm: FakeLLM
):
    from tests.integration.test_cli_runs import starter
    from tests.integration.test_skills_watch import start_pipeline

    fake_llm.responder = scripted
    await start_pipeline(env)
    home = env.settings.skills_home
    for slug in ("rotate-api-keys", "tidy-imports"):
        files = home / ".seed" / slug
        files.mkdir(parents=True)
        (files / "SKILL.md").write_text(render(slug, f"Draft. Use when {slug}.", "draft"))
        skill_git.init(skill_dir(home, slug), files, f"new_skill_folder: {slug} (a draft)")
        trajs = [f"traj_cc_{slug.split('-')[0]}_0000000{n}" for n in range(4)]
        ids = [
            write_atoms(home, t, [(f"{slug.replace('-', ' ')} in service {n}", ["x"])])[0]
            for n, t in enumerate(trajs)
        ]
        cands = [
            Candidate(atom_id=a, traj_id=t, weightscore=6) for a, t in zip(ids, trajs, strict=True)
        ]
        await entity(env, slug, "add_candidates", AddCandidates(candidates=cands))

    async def decided(slug: str, kind: str) -> Any:
        v = await settled_view(env, slug)
        assert kind in [e.kind for e in v.events], [e.kind for e in v.events]
        return v

    good = await eventually(lambda: decided("rotate-api-keys", "main"), 90)
    repo = skill_dir(home, "rotate-api-keys")
    main = skill_git.branch_commit(repo, "main")
    assert good.state == "main" and good.main_commit == main and good.paired is not None
    assert good.paired.verdict == "better" and good.paired.kind == "model-judged"
    assert len(good.paired.trials) == 3 and good.paired.held_out  # tasks held out of the edit
    edit_message = skill_git.message(repo, skill_git.git(repo, "rev-parse", "main^"))
    written_from = edit_message.split("Atoms: ")[1].split("\n")[0]
    assert f"Held-Out: {good.paired.held_out[0]}" in edit_message
    stored = json.loads(skill_git.show(repo, "main", RECORD) or "{}")
    assert (
        stored["verdict"] == "better"
        and stored["win_rate"] == 1.0
        and stored["kind"] == "model-judged"
    )
    assert "model-judged" in skill_git.message(repo, main)
    # the model never saw the held-out atom while writing
    edits = [r for r in fake_llm.requests if r["messages"][0]["content"].startswith("You maintain")]
    assert not any(good.paired.held_out[0] in json.dumps(r["messages"]) for r in edits), (
        written_from
    )

    bad = await eventually(lambda: decided("tidy-imports", "not published"), 90)
    bad_repo = skill_dir(home, "tidy-imports")
    assert bad.state == "baby" and skill_git.branch_commit(bad_repo, "main") is None
    assert bad.paired is not None and bad.paired.verdict == "no difference shown"
    assert bad.pending_weight > 0 and "not published" in (bad.last_edit_error or "")
    assert (
        json.loads(skill_git.show(bad_repo, "baby", RECORD) or "{}")["verdict"]
        == "no difference shown"
    )

    code, out, _ = await starter(env, "skills", "show", "rotate-api-keys")
    assert code == 0 and "paired test (model-judged, 3 trials a side vs no skill): better" in out
    code, out, _ = await starter(env, "skills", "list", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["tidy-imports"]["paired"]["verdict"] == "no difference shown"
    assert "model-judged" in rows["rotate-api-keys"]["pairedLine"]
