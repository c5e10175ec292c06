"""No transcript-derived text in any workflow history of the skill pipeline: a canary phrase
typed in a prompt (and a secret next to it, whose redacted form is text too) reaches atoms,
seeds, notes and SKILL.md files on disk, and none of the scan, delta, library or skill entity
workflows' histories — offline, and with a model that repeats the phrase in every answer."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from temporalio.client import Client

from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.skill_library_helpers import (
    claude_session,
    only_these_transcripts,
    paired_wins,
    settled_view,
    skills_on,
)
from tests.integration.test_skill_library import COMMANDS, library_idle
from tests.integration.test_skills_watch import scan_once, start_pipeline
from tests.skills_fixtures import Transcripts
from xsky.skills.spec import render

pytestmark = pytest.mark.integration

CANARY = "marmalade quokka zeppelin"
SECRET = "ghp_Zq8xN2vLk4Pw7Rt1Ys5Ub3Mc9Hd6Fj0Ga2Qe"
REDACTED = "[REDACTED:github-token]"
PROMPT = (
    f"fix the flaky payment tests in ci, the {CANARY} job times out on the retry path; "
    f"the token is {SECRET}"
)


def _decoded(node: Any, out: list[str]) -> None:
    """Every string of a history's JSON, with payloads (base64 ``data``) decoded to their text."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "data" and isinstance(value, str):
                try:
                    out.append(base64.b64decode(value).decode("utf-8", errors="replace"))
                except ValueError:
                    out.append(value)
            else:
                _decoded(value, out)
    elif isinstance(node, list):
        for value in node:
            _decoded(value, out)
    elif isinstance(node, str):
        out.append(node)


async def histories(client: Client, queue: str) -> dict[str, str]:
    """Every workflow's history on the queue as text: events, details, and decoded payloads."""
    found: dict[str, str] = {}
    async for wf in client.list_workflows(f"TaskQueue = '{queue}'"):
        history = await client.get_workflow_handle(wf.id, run_id=wf.run_id).fetch_history()
        texts: list[str] = []
        _decoded(json.loads(history.to_json()), texts)
        found[wf.id] = "\n".join(texts)
    return found


def echoing_model(req: dict[str, Any], i: int) -> Reply:
    """Every agent of the pipeline, answering with the phrase and the redacted secret."""
    import re

    system = req["messages"][0]["content"]
    said = f"as in the {CANARY} job ({REDACTED})"
    if turn_of(req) > 0:
        return text(f"done, {said}")
    if system.startswith("You cut a coding agent's transcript"):
        prompt = req["messages"][1]["content"]
        marks = (
            prompt.split("Boundaries you may start atoms at: ", 1)[1].split("\n", 1)[0].split(", ")
        )
        return calls(
            *[
                (
                    "submit_atom",
                    {
                        "boundary": m,
                        "intent": f"fix the flaky payment tests {said}",
                        "summary": f"fixed them {said}",
                        "tags": ["pytest", "flaky"],
                        "ux_score": 8,
                        "used_skills": [],
                    },
                )
                for m in marks
            ]
        )
    if system.startswith("You organise a library"):
        prompt = req["messages"][1]["content"]
        if "- fix-flaky-tests [" in prompt:
            return calls(
                ("add_to_skill", {"skill": "fix-flaky-tests", "weightscore": 6, "reason": said})
            )
        seeds = re.findall(r"^- (atom_\S+) \(project", prompt, re.M)
        return calls(
            (
                "new_skill_folder",
                {
                    "name": "fix-flaky-tests",
                    "weightscore": 8,
                    "reason": said,
                    "description": f"Fixes flaky tests {said}. Use when they fail.",
                    "seed_atoms": seeds,
                },
            )
        )
    body = (
        "# Fix flaky tests\n\n1. Run the failing test alone ten times.\n2. Remove shared state.\n"
    )
    return calls(
        (
            "write_file",
            {
                "path": "SKILL.md",
                "content": render(
                    "fix-flaky-tests",
                    "Fixes tests that fail now and then in CI. Use when a test fails intermittently.",
                    body,
                ),
            },
        )
    )


@pytest.mark.parametrize("model", [False, True], ids=["offline", "model"])
async def test_a_canary_phrase_in_a_prompt_is_in_no_workflow_history_of_the_skill_pipeline(
    env: Env,
    transcripts: Transcripts,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    model: bool,
):
    if model:  # the paired test's agent and comparator repeat it too (the version wins)
        fake_llm.responder = paired_wins(echoing_model, f"as in the {CANARY} job ({REDACTED})")
    else:
        monkeypatch.delenv("XSKY_MODEL")
    await start_pipeline(env)
    home, queue = transcripts.home, env.settings.skills_queue
    only_these_transcripts(transcripts)
    for when in ("every night", "since monday", "on friday"):
        claude_session(
            transcripts.claude, "shop", PROMPT.replace("retry path", f"retry path {when}"), COMMANDS
        )
        await scan_once(env.client, queue)
        await library_idle(env)

    # The pipeline did its work: the skill exists (a draft offline, main with a model) ...
    async def edited() -> None:  # the edit ran: a draft offline, the first version with a model
        v = await settled_view(env, "fix-flaky-tests")
        assert {"draft", "main"} & {e.kind for e in v.events}, [e.kind for e in v.events]

    await eventually(edited, 60)
    branches = skills_on(home)
    assert list(branches) == ["fix-flaky-tests"], branches
    assert (branches["fix-flaky-tests"]["main"] is not None) == model
    # ... and the phrase went where it belongs: atom files, notes (model), never a SKILL.md.
    on_disk = "".join(p.read_text() for p in home.rglob("atom_*.json"))
    assert CANARY in on_disk and REDACTED in on_disk and SECRET not in on_disk
    if model:
        notes = "".join(p.read_text() for p in (home / "skills" / ".notes").glob("*.json"))
        assert CANARY in notes
    texts = await histories(env.client, queue)
    assert len(texts) >= 8, sorted(texts)  # scans, deltas, the library, the skill's entity
    assert any("skills-library" in h for h in texts) and any(
        h.endswith("fix-flaky-tests") for h in texts
    )
    # the payloads were read: the atoms' ids and the skill's name are there, in plain text
    library = [h for h in texts if "skills-library" in h or h.endswith("fix-flaky-tests")]
    assert all("fix-flaky-tests" in texts[h] and "atom_traj_cc_shop_" in texts[h] for h in library)
    for what in (CANARY, REDACTED, "REDACTED", SECRET, "retry path", "quokka"):
        found = [name for name, h in texts.items() if what in h]
        assert found == [], f"{what!r} in {found}"
