"""The TaskAgent with a model (the repo's fake OpenAI-compatible server, scripted): it sees
the map of every user turn of the trajectory and reads the view anywhere, and its
``update_previous`` revisions land in the atom files — when the window only continues the
previous atom (no submission at all), and when it starts at once with a new atom."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from activities import llm
from activities.skills.render import render_delta
from activities.skills.scan import commit_delta, read_atoms, scan
from activities.skills.task_agent import split_delta
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from xsky.skills.atoms import AtomTask
from xsky.skills.runs import ScanInput
from xsky.skills.sources import Source

LABELLED = Path(__file__).resolve().parents[1] / "fixtures" / "labelled"
REL = "codex/sessions/2026/11/14/rollout-2026-11-14T09-00-00-0199c001-aaaa-7bbb-8ccc-0123456789ab.jsonl"


def line_starting(data: bytes, needle: str, before: str | None = None) -> int:
    """The byte offset of the first line holding ``needle`` (or of the line ``before`` it names)."""
    at = 0
    lines = data.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if needle.encode() in line:
            if before is not None:  # back to the turn's task_started marker
                while before.encode() not in lines[i]:
                    at -= len(lines[i - 1])
                    i -= 1
            return at
        at += len(line)
    raise AssertionError(needle)


def model(request: dict[str, Any], index: int) -> Reply:
    """A TaskAgent: opens the trajectory, only revises in a window that continues the task,
    and revises and submits in a window that starts with a new task."""
    if turn_of(request) > 0:
        return text("done")
    prompt = request["messages"][1]["content"]
    marks = prompt.split("Boundaries you may start atoms at: ", 1)[1].split("\n", 1)[0].split(", ")
    if "(none: this is the start of the trajectory)" in prompt:
        return calls(("submit_atom", atom("B1", "write the order status migration")))
    window = prompt.split("--- transcript window ---", 1)[1]
    if "no, drop that" in window:
        revise = {"summary": "REVISED-1: the stale status column is dropped first", "ux_score": 6}
        return calls(("update_previous", revise))
    first = re.search(r"^@(\d+) \[prompt/new\] write a migration", prompt, re.M)
    assert first is not None, prompt
    revise = {"summary": "REVISED-2: migration written after one correction", "ux_score": 4}
    return calls(
        ("read_view", {"position": int(first.group(1)), "before": 0, "after": 400}),
        ("update_previous", revise),
        ("submit_atom", atom(marks[0], "explain the slow order search plan")),
        ("submit_atom", atom(marks[1], "index lower(email)")),
    )


def atom(mark: str, intent: str) -> dict[str, Any]:
    return {
        "boundary": mark,
        "intent": intent,
        "summary": f"{intent}.",
        "tags": ["sql"],
        "ux_score": 9,
    }


@pytest.fixture
def fake() -> Any:
    server = FakeLLM()
    server.responder = model
    yield server
    server.close()


def test_update_previous_revisions_land_in_the_atom_files(tmp_path: Path, fake: FakeLLM) -> None:
    root, home = tmp_path / "corpus", tmp_path / "home"
    (root / REL).parent.mkdir(parents=True)
    shutil.copy(LABELLED / REL, root / REL)
    data = (root / REL).read_bytes()
    (found,) = scan(
        home, [Source("codex", root / "codex", "test")], ScanInput(settle_seconds=3600)
    ).deltas
    target = llm.LLMTarget(model="fake-model", base_url=fake.base_url)
    # delta 1: the first task up to the agent's first answer; delta 2: its correction and a
    # question about it (the window only continues it); delta 3: two new tasks.
    cut_a = line_starting(data, "no, drop that", before="task_started")
    cut_b = line_starting(data, "explain the query plan", before="task_started")
    seen: list[list[AtomTask]] = []
    for start, end in ((0, cut_a), (cut_a, cut_b), (cut_b, found.end)):
        d = found.model_copy(update={"start": start, "end": end})
        render_delta(home, d)
        result = asyncio.run(split_delta(home, d, target, lambda note: None))
        assert result.split_by == "model" and result.model_calls >= 1
        assert commit_delta(home, d).committed
        seen.append(read_atoms(home, found.traj_id))

    # Delta 2: no submission, only a revision: it is in the file of the atom it extends.
    (first,) = seen[1]
    assert first.summary.startswith("REVISED-1") and first.ux_score == 6
    assert first.provenance.ux_score_by == "model" and first.offset_end > seen[0][0].offset_end
    # Delta 3: a revision and new atoms at once: the previous atom still carries it.
    atoms = seen[2]
    assert [a.intent for a in atoms] == [
        "write the order status migration",
        "explain the slow order search plan",
        "index lower(email)",
    ]
    assert atoms[0].summary.startswith("REVISED-2") and atoms[0].ux_score == 4
    assert atoms[0].offset_end == atoms[1].offset_start  # the tiling holds

    # The model saw every user turn, the committed ones too, with their classes and marks.
    last = [r for r in fake.requests if "explain the query plan" in r["messages"][1]["content"]]
    prompt = last[0]["messages"][1]["content"]
    assert re.search(r"^@\d+ \[prompt/new\] write a migration", prompt, re.M)
    assert re.search(r"^@\d+ \[prompt/correction\] no, drop that", prompt, re.M)
    assert re.search(r"^@\d+ \[prompt/new\] \[\[B1\]\] explain the query plan", prompt, re.M)
    # read_view read the first delta's prompt from the committed view.
    answers = [m for m in last[-1]["messages"] if m.get("role") == "tool"]
    assert "write a migration that adds a status column" in answers[0]["content"]
    assert answers[1]["content"].startswith(f"ok: {atoms[0].atom_id}")
    assert json.dumps(fake.requests).count("update_previous") >= 2


def test_a_revision_without_a_previous_atom_is_refused(tmp_path: Path, fake: FakeLLM) -> None:
    fake.responder = lambda request, index: (
        text("done")
        if turn_of(request) > 0
        else calls(("update_previous", {"summary": "nothing to revise", "ux_score": 5}))
    )
    root, home = tmp_path / "corpus", tmp_path / "home"
    (root / REL).parent.mkdir(parents=True)
    shutil.copy(LABELLED / REL, root / REL)
    (d,) = scan(
        home, [Source("codex", root / "codex", "test")], ScanInput(settle_seconds=3600)
    ).deltas
    render_delta(home, d)
    target = llm.LLMTarget(model="fake-model", base_url=fake.base_url)
    result = asyncio.run(split_delta(home, d, target, lambda note: None))
    assert commit_delta(home, d).committed
    tool_answers = [
        m["content"] for r in fake.requests for m in r["messages"] if m.get("role") == "tool"
    ]
    assert any(a.startswith("ERROR: this trajectory has no previous atom") for a in tool_answers)
    # nothing submitted: the offline splitter cut the delta, and no atom carries the text
    assert "offline splitter decided" in result.note
    assert all("nothing to revise" not in a.summary for a in read_atoms(home, d.traj_id))
