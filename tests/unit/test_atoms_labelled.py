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
