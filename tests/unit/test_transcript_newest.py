"""The newest Claude Code and Codex record shapes (fixtures: tests/fixtures/README.md,
"newest/"): machine text the tools send as a user message is never a person's task, a
prompt with a pasted image is one prompt, a skill Codex loads for `$name` is a use of it, and a
task one Codex agent hands another is that model's."""

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
from xsky.skills.runs import ScanInput
from xsky.skills.sources import Source

NEWEST = Path(__file__).parents[1] / "fixtures" / "newest"


def mined(case: str, tmp_path: Path) -> list[AtomTask]:
    root = tmp_path / case
    shutil.copytree(NEWEST / case, root)
    home = tmp_path / "home"
    sources = [
        Source(kind, root / folder, "test")
        for kind, folder in (("claude-code", "claude/projects"), ("codex", "codex"))
        if (root / folder).is_dir()
    ]
    for _ in range(5):  # (a sub-agent waits a round for its parent's file)
        deltas = scan(home, sources, ScanInput(settle_seconds=0)).deltas
        for d in deltas:
            render_delta(home, d)
            asyncio.run(split_delta(home, d, None, lambda note: None))
            assert commit_delta(home, d).committed
        if not deltas:
            break
    store = SkillStore(home)
    try:
        return [a for t in store.trajs() for a in read_atoms(home, t.traj_id)]
    finally:
        store.close()


@pytest.mark.parametrize(
    ("case", "intents"),
    [
        # IDE context (<ide_opened_file>, <ide_selection>) beside a prompt: not a task
        ("cc_ide", ["add retry with exponential backoff", "unrelated: why does this loop"]),
        # an agent team's <teammate-message …> and idle notices: not the person's
        ("cc_teammates", ["build the relay module", "now write the changelog entry"]),
        # Codex's <additional_context> (editor context) and a model <warning>
        ("cx_context", ["why does this retry loop double the delay twice?"]),
        # a sub-agent's <subagent_notification> coming back
        ("cx_subagent_note", ["spawn a worker to audit our npm dependencies"]),
    ],
)
def test_machine_text_sent_as_a_user_message_is_no_task(
    tmp_path: Path, case: str, intents: list[str]
) -> None:
    got = mined(case, tmp_path)
    assert [a.intent[: len(i)] for a, i in zip(got, intents, strict=False)] == intents, [
        a.intent for a in got
    ]
    assert len(got) == len(intents)
    assert {a.provenance.origin for a in got} == {"person"}


def test_a_codex_prompt_with_a_pasted_image_is_one_prompt(tmp_path: Path) -> None:
    (atom,) = mined("cx_image", tmp_path)
    assert "<image" not in atom.intent and atom.intent.endswith("fix the CSS")
    assert atom.ux_score == 10 and not atom.provenance.ux_signals.get("re_asks")


def test_a_skill_codex_loads_for_the_persons_dollar_name_is_used_not_a_prompt(
    tmp_path: Path,
) -> None:
    (atom,) = mined("cx_skill", tmp_path)
    assert atom.intent.startswith("$pdf-fill") and atom.used_skills == ["pdf-fill"]
    assert atom.ux_score == 10


def test_a_task_one_codex_agent_hands_another_is_that_models(tmp_path: Path) -> None:
    got = {a.provenance.origin: a for a in mined("cx_multiagent_v2", tmp_path)}
    assert got["person"].intent.startswith("have a worker migrate the date helpers")
    assert got["model"].intent.startswith("Migrate src/utils/date.ts helpers")


def test_markup_a_person_pastes_before_their_question_stays_theirs() -> None:
    from xsky.skills.transcripts.claude_text import classify

    pasted = '<my_component prop="x">\n  <child>1</child>\n</my_component>\nwhy does this fail?'
    angular = (
        '<mat-form-field appearance="outline">\n  <mat-label>Name</mat-label>\n'
        "</mat-form-field>\nWhy is the label not floating?"
    )
    assert classify(pasted) == [("user", pasted)]
    assert classify(angular) == [("user", angular)]


def test_a_codex_prompt_that_begins_as_a_fragment_does_is_the_persons() -> None:
    from xsky.skills.transcripts.codex import _whole_fragment

    typed = "<warning> lines from javac are missing in the build log: why?"
    assert not _whole_fragment(typed, "event") and not _whole_fragment(typed, "item")
    assert _whole_fragment("<warning>too many processes</warning>", "item")
    assert not _whole_fragment("<warning>too many processes</warning>", "event")
    assert _whole_fragment('<hook_prompt hook_run_id="7">go on</hook_prompt>', "item")
