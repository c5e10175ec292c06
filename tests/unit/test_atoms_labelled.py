"""The offline splitter on a hand-labelled corpus: Claude Code and Codex sessions of several
tasks each (tests/fixtures/labelled, built by its build.py), through the real adapters, the
render step, the offline TaskAgent and the commit — boundaries measured against the labels."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from activities.skills.render import render_delta
from activities.skills.scan import commit_delta, read_atoms, scan
from activities.skills.store import SkillStore
from activities.skills.task_agent import split_delta
from bench.skills_boundaries import measure, report
from xsky.skills.atoms import AtomTask
from xsky.skills.runs import DeltaRef, ScanInput
from xsky.skills.sources import Source

LABELLED = Path(__file__).resolve().parents[1] / "fixtures" / "labelled"
LABELS: dict[str, list[str]] = json.loads((LABELLED / "labels.json").read_text())
LABEL_CHARS = 48


def corpus(tmp: Path) -> tuple[Path, Path, list[Source]]:
    root = tmp / "corpus"
    for part in ("claude", "codex"):
        shutil.copytree(LABELLED / part, root / part)
    sources = [
        Source("claude-code", root / "claude" / "projects", "test"),
        Source("codex", root / "codex", "test"),
    ]
    return root, tmp / "home", sources


def process(home: Path, d: DeltaRef) -> None:
    render_delta(home, d)
    asyncio.run(split_delta(home, d, None, lambda note: None))
    assert commit_delta(home, d).committed


def ingest(tmp: Path) -> tuple[Path, Path]:
    root, home, sources = corpus(tmp)
    for d in scan(home, sources, ScanInput(settle_seconds=3600)).deltas:
        process(home, d)
    return root, home


def atoms_of(home: Path, path: Path) -> list[AtomTask]:
    store = SkillStore(home)
    try:
        row = store.file(str(path))
        assert row is not None, path
        return read_atoms(home, row.traj_id)
    finally:
        store.close()


def started_by(atom: AtomTask) -> str | None:
    """The first characters of the prompt that names the atom's task."""
    st = atom.provenance.split
    return st.intent_head[:LABEL_CHARS] if st is not None and st.intent_head else None


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return ingest(tmp_path_factory.mktemp("labelled"))


def test_the_corpus_is_big_enough_to_measure() -> None:
    assert len(LABELS) >= 6 and sum(len(v) for v in LABELS.values()) >= 25
    kinds = {rel.split("/")[0] for rel in LABELS}
    assert kinds == {"claude", "codex"}


def test_boundaries_match_the_hand_labels(ingested: tuple[Path, Path]) -> None:
    root, home = ingested
    predicted = labelled = matched = 0
    report = []
    for rel, starts in LABELS.items():
        got = [started_by(a) for a in atoms_of(home, root / rel)]
        hits = len(set(got) & set(starts))
        predicted, labelled, matched = predicted + len(got), labelled + len(starts), matched + hits
        report.append(f"{rel}: labelled {starts}\n  got {got}")
    precision, recall = matched / predicted, matched / labelled
    print(f"precision {precision:.2f} recall {recall:.2f}\n" + "\n".join(report))
    assert precision >= 0.8 and recall >= 0.9, "\n".join(report)


def all_atoms(ingested: tuple[Path, Path]) -> dict[str, list[AtomTask]]:
    root, home = ingested
    return {rel: atoms_of(home, root / rel) for rel in LABELS}


def test_no_atom_is_empty_and_no_intent_is_machine_text(ingested: tuple[Path, Path]) -> None:
    for rel, atoms in all_atoms(ingested).items():
        for a in atoms:
            assert a.offset_end > a.offset_start, (rel, a.atom_id)
            assert a.provenance.split is not None and a.provenance.split.has_prompt, (rel, a.intent)
            assert a.summary != "(no activity)" and not a.intent.startswith("("), (rel, a.intent)
            assert not a.intent.lower().startswith(("<task-notification", "this session is")), (
                a.intent
            )


def test_a_compaction_between_tasks_opens_the_next_and_one_inside_a_task_stays(
    ingested: tuple[Path, Path],
) -> None:
    atoms = all_atoms(ingested)
    ledger = atoms["claude/projects/-home-ana-ledger/6b1f2c3d-0a4e-4b5c-9d6e-7f8091a2b3c4.jsonl"]
    readme = ledger[1]
    assert readme.intent.startswith("Write the README section")
    assert readme.raw_segment.startswith("> compaction:"), readme.raw_segment[:80]
    assert "## Compaction" not in ledger[0].raw_segment
    retry = atoms[next(r for r in LABELS if "0199c002" in r)][0]
    assert "## Compaction" in retry.raw_segment and retry.intent.startswith("design a retry policy")


def test_corrections_and_refinements_are_counted_and_lower_the_score(
    ingested: tuple[Path, Path],
) -> None:
    atoms = [a for group in all_atoms(ingested).values() for a in group]
    design = next(a for a in atoms if a.intent.startswith("I need a way to import bank"))
    signals = design.provenance.ux_signals
    # "it's good, but …", "don't produce code yet …", "not acceptable … revise"; "also …", "what else …"
    assert signals.get("corrections") == 3 and signals.get("refinements") == 2, signals
    version = next(a for a in atoms if a.intent.startswith("Now bump the version"))
    assert design.ux_score < version.ux_score
    assert len({a.ux_score for a in atoms}) >= 4, sorted(a.ux_score for a in atoms)


def test_sessions_are_the_persons_and_a_subagents_task_is_model_written(
    ingested: tuple[Path, Path],
) -> None:
    atoms = all_atoms(ingested)
    parent = "claude/projects/-home-ben-api/7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d.jsonl"
    sub = "claude/projects/-home-ben-api/7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d/subagents/agent-a1b2c3d4.jsonl"
    assert {a.provenance.session for a in atoms[parent] + atoms[sub]} == {
        "7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d"
    }
    assert [a.provenance.origin for a in atoms[sub]] == ["model"]
    assert {a.provenance.origin for a in atoms[parent]} == {"person"}
    codex = next(r for r in LABELS if "0199c001" in r)
    assert {a.provenance.session for a in atoms[codex]} == {"0199c001-aaaa-7bbb-8ccc-0123456789ab"}


def test_a_menu_answer_and_a_task_notification_stay_with_the_turn(
    ingested: tuple[Path, Path],
) -> None:
    atoms = all_atoms(ingested)
    shop = atoms["claude/projects/-home-ana-webshop/9c8d7e6f-1a2b-4c3d-8e9f-0a1b2c3d4e5f.jsonl"]
    refactor = next(a for a in shop if a.intent.startswith("Refactor the coupon validation"))
    assert (
        "## User" in refactor.raw_segment and "\na\n" in refactor.raw_segment
    )  # the menu pick "a"
    assert "task-notification" in refactor.raw_segment  # inside the task, not an atom of its own
    assert refactor.provenance.ux_signals.get("corrections") == 1  # "why is validate returning …?"


def test_the_targets_hold_on_the_tuned_sessions_and_the_held_out_figures_are_printed() -> None:
    """bench/skills_boundaries.py on truth.json: asserted where the rules were tuned; the
    held-out sessions (labelled by GUIDE.md first, never tuned on) are printed, not asserted."""
    parts = measure()
    print(report(parts))
    tuned, held = parts["tuned"], parts["held-out"]
    assert tuned.meets_targets(), report(parts)
    assert tuned.corrections >= 15 and held.sessions >= 4 and held.starts >= 5
