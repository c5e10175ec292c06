"""bench/skills_boundaries.py --corpus DIR: the same measures on a folder kept outside the
repository (real public transcripts may not be committed), with its labels in labels.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.skills_boundaries import CORPUS, main

LEDGER = "claude/projects/-home-ana-ledger/6b1f2c3d-0a4e-4b5c-9d6e-7f8091a2b3c4.jsonl"
ROLLOUT = (
    "codex/sessions/2026/11/14/"
    "rollout-2026-11-14T09-00-00-0199c001-aaaa-7bbb-8ccc-0123456789ab.jsonl"
)


def _folder(tmp: Path, labels: object | None) -> Path:
    """Two sessions of the committed corpus copied into a folder of their own."""
    root = tmp / "real"
    for rel in (LEDGER, ROLLOUT):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CORPUS / rel, root / rel)
    if labels is not None:
        (root / "labels.json").write_text(json.dumps(labels))
    return root


def _truth(rel: str, split: str) -> dict[str, object]:
    truth = json.loads((CORPUS / "truth.json").read_text())[rel]
    return {**truth, "split": split}


def test_a_corpus_folder_is_measured_tuned_and_held_out_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = {LEDGER: _truth(LEDGER, "tuned"), ROLLOUT: _truth(ROLLOUT, "held_out")}
    assert main(["--corpus", str(_folder(tmp_path, labels))]) == 0
    out = capsys.readouterr().out
    tuned, held = out.split("tuned: ")[1], out.split("held-out: ")[1]
    assert tuned.startswith("1 sessions, 3 atoms, 3 labelled tasks")
    assert held.startswith("1 sessions, 3 atoms, 3 labelled tasks")
    assert out.count("boundary precision") == 2 and "target >= 0.8" in out


def test_a_folder_without_labels_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _folder(tmp_path, None)
    assert main(["--corpus", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{folder} has no labels.json" in err and "GUIDE.md" in err


@pytest.mark.parametrize(
    ("labels", "says"),
    [
        ("{not json", "is not valid JSON"),
        (
            {LEDGER: {"split": "train", "starts": [], "prompts": [], "corrections": []}},
            'use "tuned"',
        ),
        ({LEDGER: {"split": "tuned", "starts": "x", "prompts": [], "corrections": []}}, "'starts'"),
        ({"claude/projects/-x/missing.jsonl": _truth(LEDGER, "tuned")}, "not a file under"),
    ],
)
def test_bad_labels_get_one_sentence_naming_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], labels: object, says: str
) -> None:
    folder = _folder(tmp_path, None)
    text = labels if isinstance(labels, str) else json.dumps(labels)
    (folder / "labels.json").write_text(text)
    assert main(["--corpus", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and says in err and "Traceback" not in err
