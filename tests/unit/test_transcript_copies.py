"""Transcripts that copy other transcripts' records — a Claude Code session resumed into a
new file, `--fork-session`, the Agent SDK's fork; a Codex fork, a sub-agent given its
parent's context — are mined for what they add: a copied record is passed over, a task
becomes one atom wherever it was copied, the copy counts as the session it continues, and a
sub-agent never holds its parent's tasks as the model's. (Fixtures: tests/fixtures/README.md.)"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from activities.skills.render import render_delta
from activities.skills.scan import commit_delta, read_atoms, scan
from activities.skills.store import SkillStore
from activities.skills.task_agent import split_delta
from xsky.skills.atoms import AtomTask
from xsky.skills.evidence import session_of
from xsky.skills.runs import DeltaRef, ScanInput
from xsky.skills.sources import Source

COPIES = Path(__file__).parents[1] / "fixtures" / "copies"
CLAUDE = "claude/projects/-home-dev-shop"
A, B, C, D = "880d7c2e", "2fb13187", "64eca430", "86812498"
P, F, S = "01a1f941", "01a1f9e6", "01a1f95d"
TASKS_CLAUDE = {
    "write a dbmate migration",
    "now write a pytest",
    "add an index on orders",
    "let's try alembic",
    "also backfill",  # the Agent SDK fork's own task
}
TASKS_CODEX = {
    "write a dbmate migration",
    "now write a pytest",
    "review db/migrations",
    "use a CHECK constraint",
}


def corpus(tmp_path: Path, only: tuple[str, ...] = ()) -> tuple[Path, list[Source]]:
    root = tmp_path / "corpus"
    for kind in ("claude", "codex"):
        shutil.copytree(COPIES / kind, root / kind)
    for f in root.rglob("*.jsonl"):
        if only and not any(tag in f.name for tag in only):
            f.unlink()
    return tmp_path / "home", [
        Source("claude-code", root / "claude" / "projects", "test"),
        Source("codex", root / "codex", "test"),
    ]


def process(home: Path, d: DeltaRef) -> bool:
    render_delta(home, d)
    asyncio.run(split_delta(home, d, None, lambda note: None))
    return commit_delta(home, d).committed


def tick(home: Path, sources: list[Source]) -> int:
    deltas = scan(home, sources, ScanInput(settle_seconds=0)).deltas
    for d in deltas:
        assert process(home, d)
    return len(deltas)


def atoms(home: Path) -> list[AtomTask]:
    store = SkillStore(home)
    try:
        return [a for t in store.trajs() for a in read_atoms(home, t.traj_id)]
    finally:
        store.close()


def begins(a: AtomTask) -> str:
    return next(t for t in TASKS_CLAUDE | TASKS_CODEX if a.intent.startswith(t))


def mined(home: Path, sources: list[Source]) -> list[AtomTask]:
    while tick(home, sources):  # until nothing is left to read (a copy waits a round)
        pass
    return atoms(home)


def test_a_claude_session_resumed_forked_and_sdk_forked_is_one_session_of_five_tasks(
    tmp_path: Path,
) -> None:
    # the session first, then its copies as they appear (the scan reads new files newest
    # first: which of several new copies holds a task first depends on that order)
    home, sources = corpus(tmp_path, (A,))
    mined(home, sources)
    shutil.copytree(COPIES / "claude", tmp_path / "corpus" / "claude", dirs_exist_ok=True)
    got = mined(home, sources)
    assert sorted(begins(a) for a in got) == sorted(TASKS_CLAUDE)  # each task once
    assert len({session_of(a) for a in got}) == 1  # one person's one line of work
    assert {a.provenance.origin for a in got} == {"person"}


@pytest.mark.parametrize("first", [A, B])
def test_whichever_copy_is_read_first_the_other_adds_only_its_new_turns(
    tmp_path: Path, first: str
) -> None:
    home, sources = corpus(tmp_path, (first,))
    tick(home, sources)
    shutil.copytree(COPIES / "claude", tmp_path / "corpus" / "claude", dirs_exist_ok=True)
    for f in (tmp_path / "corpus" / "claude").rglob("*.jsonl"):
        if not f.name.startswith((A, B)):
            f.unlink()
    got = mined(home, sources)
    assert sorted(begins(a) for a in got) == sorted(
        ["write a dbmate migration", "now write a pytest", "add an index on orders"]
    )
    assert len({session_of(a) for a in got}) == 1


def test_a_codex_fork_and_a_sub_agent_with_its_parents_context_add_only_their_own_work(
    tmp_path: Path,
) -> None:
    home, sources = corpus(tmp_path, (P, F, S))
    got = mined(home, sources)
    assert sorted(begins(a) for a in got) == sorted(TASKS_CODEX)
    by_task = {begins(a): a for a in got}
    # the parent's tasks are the person's, wherever the sub-agent's file sorted in the scan;
    # the sub-agent's own task is its parent model's
    assert by_task["write a dbmate migration"].provenance.origin == "person"
    assert by_task["review db/migrations"].provenance.origin == "model"
    assert len({session_of(a) for a in got}) == 1
    # `codex resume` appends to the parent's own file: its new task joins the parent's atoms
    shutil.copytree(COPIES / "codex-resume", tmp_path / "corpus" / "codex", dirs_exist_ok=True)
    more = mined(home, sources)
    assert sorted(begins(a) for a in more) == sorted(TASKS_CODEX | {"add an index on orders"})


def test_a_copy_read_beside_its_original_commits_after_it_and_is_read_again(
    tmp_path: Path,
) -> None:
    # Deltas of a tick run side by side: both files read before either commits. The second
    # commit finds its records held by the first, is refused, and the next round reads it
    # again — its copy passed over.
    home, sources = corpus(tmp_path, (A, C))
    deltas = scan(home, sources, ScanInput(settle_seconds=0)).deltas
    assert len(deltas) == 2
    for d in deltas:
        render_delta(home, d)
        asyncio.run(split_delta(home, d, None, lambda note: None))
    first, second = (commit_delta(home, d) for d in deltas)
    assert first.committed and not second.committed and "read again" in second.reason
    got = mined(home, sources)
    assert sorted(begins(a) for a in got) == sorted(
        ["write a dbmate migration", "now write a pytest", "let's try alembic"]
    )


def test_two_codex_sessions_that_begin_alike_are_two_sessions_each_mined_whole(
    tmp_path: Path,
) -> None:
    # Two sessions of one project begin with the same turn context, environment and
    # AGENTS.md: that shared beginning is no copy — neither loses a task, nor becomes the
    # other's session.
    import json

    home, sources = corpus(tmp_path, (P,))
    (parent,) = (tmp_path / "corpus" / "codex").rglob(f"*{P}*.jsonl")
    lines = [json.loads(x) for x in parent.read_text().splitlines()]
    other_id = "01a1f9ff-0000-7000-8000-000000000abc"
    lines[0]["payload"]["id"] = other_id
    for rec in lines:
        if json.dumps(rec).count("write a dbmate migration"):
            text = json.dumps(rec).replace("write a dbmate migration", "write a flyway migration")
            rec.clear()
            rec.update(json.loads(text))
    other = parent.with_name(f"rollout-2026-11-20T15-00-00-{other_id}.jsonl")
    other.write_text("".join(json.dumps(x) + "\n" for x in lines))
    got = mined(home, sources)
    intents = sorted(a.intent[:24] for a in got)
    assert intents == sorted(
        [
            "write a dbmate migration",
            "now write a pytest for t",
            "write a flyway migration",
            "now write a pytest for t",
        ]
    ), intents
    assert len({session_of(a) for a in got}) == 2


def test_two_claude_sessions_typing_the_same_prompts_at_the_same_moment_are_two_sessions(
    tmp_path: Path,
) -> None:
    # A script running `claude -p` twice at once: the same prompts, at the same milliseconds;
    # every id of its own (uuids, message and tool ids) differs. Neither is the other's copy.
    import json
    import re as _re

    home, sources = corpus(tmp_path, (A,))
    (original,) = (tmp_path / "corpus" / "claude").rglob(f"{A}*.jsonl")
    text = original.read_text()
    other = "e0000000-0000-4000-8000-000000000001"
    text = text.replace(original.stem, other)
    text = _re.sub(
        r'"(uuid|parentUuid)":"([0-9a-f-]{36})"', lambda m: f'"{m[1]}":"e{m[2][1:]}"', text
    )
    text = _re.sub(r'"(msg|toolu|req)_', r'"\1_e', text)
    json.loads(text.splitlines()[0])  # still JSON lines
    original.with_name(f"{other}.jsonl").write_text(text)
    got = mined(home, sources)
    assert sorted(begins(a) for a in got) == sorted(
        ["write a dbmate migration", "now write a pytest"] * 2
    )
    assert len({session_of(a) for a in got}) == 2
