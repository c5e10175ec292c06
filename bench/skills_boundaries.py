"""Task boundaries on the labelled corpus: precision, recall, corrections, machine-text intents
and lost prompts, for the sessions the rules were tuned on and the held-out ones apart.

The corpus is tests/fixtures/labelled (its README says what it is and where it came from; the
labels follow its GUIDE.md). Every session goes through the real pipeline offline, as a user
without a model runs it: scan → render → the offline TaskAgent → commit. Measures:

- precision: atoms that start at a labelled task start / atoms;
- recall: labelled task starts an atom starts at / labelled task starts;
- corrections: labelled corrections counted as corrections in the atom that holds them;
- machine-text intents: atoms whose intent is not a prompt the person (or, in a subagent's
  file, the parent model) typed;
- lost prompts: prompts the person typed that are not a user turn of the trajectory.

``python bench/skills_boundaries.py`` prints both parts against the targets for the committed
(synthetic) corpus and its truth.json. ``--corpus DIR`` runs the same measures on another folder laid
out like it (``claude/projects/<munged-cwd>/<id>.jsonl``, ``codex/sessions/YYYY/MM/DD/rollout-….jsonl``)
whose ``labels.json`` holds the labels in truth.json's shape — e.g. real public transcripts kept
outside the repository (their licence keeps them out of it), labelled by the corpus's GUIDE.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from activities.skills.render import render_delta
from activities.skills.scan import commit_delta, read_atoms, scan
from activities.skills.store import SkillStore
from activities.skills.task_agent import split_delta
from xsky.skills.atoms import AtomTask
from xsky.skills.layout import index_path
from xsky.skills.runs import ScanInput
from xsky.skills.sources import Source

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "labelled"
TRUTH = (
    "truth.json"  # the committed corpus's labels (its labels.json is an older, starts-only file)
)
LABELS = "labels.json"  # what a --corpus folder carries, in truth.json's shape
HEAD = 48  # characters of a prompt that name it in the labels
TARGETS = {"precision": 0.8, "recall": 0.9, "corrections": 0.8}
PARTS = ("claude", "codex")
# Both spellings are accepted because people write either; the report uses the first.
SPLITS = {"tuned": "tuned", "held-out": "held-out", "held_out": "held-out"}


class CorpusError(Exception):
    """A corpus folder or its labels are not usable; the message is one sentence saying how to fix it."""


@dataclass
class Figures:
    sessions: int = 0
    atoms: int = 0
    starts: int = 0
    matched: int = 0
    corrections: int = 0
    recognised: int = 0
    machine_intents: int = 0
    lost: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.matched / self.atoms if self.atoms else 1.0

    @property
    def recall(self) -> float:
        return self.matched / self.starts if self.starts else 1.0

    @property
    def corrections_share(self) -> float:
        return self.recognised / self.corrections if self.corrections else 1.0

    def meets_targets(self) -> bool:
        return (
            self.precision >= TARGETS["precision"]
            and self.recall >= TARGETS["recall"]
            and self.corrections_share >= TARGETS["corrections"]
            and self.machine_intents == 0
            and self.lost == 0
        )


def _flat(text: str) -> str:
    return " ".join(text.split())


def load_labels(corpus: Path, name: str = LABELS) -> dict[str, dict[str, Any]]:
    """The labels of a corpus folder, checked and with the split spelled one way."""
    if not corpus.is_dir():
        raise CorpusError(
            f"{corpus} is not a folder; pass --corpus a folder holding claude/ or codex/ and {name}."
        )
    path = corpus / name
    if not path.is_file():
        raise CorpusError(
            f"{corpus} has no {name}; label its sessions by tests/fixtures/labelled/GUIDE.md into {path} first."
        )
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise CorpusError(f"{path} is not valid JSON ({e}); fix it and run again.") from None
    if not isinstance(raw, dict) or not raw:
        raise CorpusError(f"{path} must be a JSON object mapping session paths to their labels.")
    labels: dict[str, dict[str, Any]] = {}
    for rel, truth in raw.items():
        if not isinstance(truth, dict):
            raise CorpusError(
                f"{path}: the labels of {rel} must be an object with split, starts, prompts, corrections."
            )
        split = SPLITS.get(str(truth.get("split")))
        if split is None:
            raise CorpusError(
                f'{path}: {rel} has split {truth.get("split")!r}; use "tuned" or "held_out".'
            )
        for key in ("starts", "prompts", "corrections"):
            value = truth.get(key)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise CorpusError(
                    f"{path}: {rel} needs {key!r} as a list of strings (the prompts' first {HEAD} characters)."
                )
        if not (corpus / rel).is_file():
            raise CorpusError(
                f"{path} labels {rel}, which is not a file under {corpus}; fix the path or add the file."
            )
        labels[rel] = {**truth, "split": split}
    return labels


def ingest(corpus: Path, work: Path) -> Path:
    """The corpus through the real pipeline, offline; the skills home it filled."""
    root, home = work / "corpus", work / "home"
    parts = [p for p in PARTS if (corpus / p).is_dir()]
    if not parts:
        raise CorpusError(
            f"{corpus} has neither claude/ nor codex/; lay it out like tests/fixtures/labelled."
        )
    for part in parts:
        shutil.copytree(corpus / part, root / part)
    sources = [
        src
        for src in (
            Source("claude-code", root / "claude" / "projects", "bench"),
            Source("codex", root / "codex", "bench"),
        )
        if src.root.is_dir()
    ]
    for d in scan(home, sources, ScanInput(settle_seconds=3600)).deltas:
        render_delta(home, d)
        asyncio.run(split_delta(home, d, None, lambda note: None))
        commit_delta(home, d)
    return home


def _user_heads(home: Path, tid: str) -> list[str]:
    path = index_path(home, tid)
    heads = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("kind") == "user":
            heads.append(_flat(str(row.get("head", ""))))
    return heads


def _session(
    home: Path, work: Path, rel: str, truth: dict[str, Any]
) -> tuple[list[AtomTask], list[str]]:
    store = SkillStore(home)
    try:
        row = store.file(str(work / "corpus" / rel))
        if row is None:
            return [], []
        return read_atoms(home, row.traj_id), _user_heads(home, row.traj_id)
    finally:
        store.close()


def _started_by(atom: AtomTask) -> str | None:
    st = atom.provenance.split
    return _flat(st.intent_head[:HEAD]) if st is not None and st.intent_head else None


def measure(corpus: Path = CORPUS, labels: str = TRUTH) -> dict[str, Figures]:
    """Figures per part of the corpus (``tuned``, ``held-out``)."""
    truths = load_labels(corpus, labels)
    parts: dict[str, Figures] = {}
    with tempfile.TemporaryDirectory(prefix="xsky-bounds-") as tmp:
        work = Path(tmp)
        home = ingest(corpus, work)
        for rel, truth in truths.items():
            fig = parts.setdefault(truth["split"], Figures())
            atoms, turns = _session(home, work, rel, truth)
            starts = [_flat(s[:HEAD]) for s in truth["starts"]]
            prompts = [_flat(p[:HEAD]) for p in truth["prompts"]]
            got = [_started_by(a) for a in atoms]
            fig.sessions += 1
            fig.atoms += len(atoms)
            fig.starts += len(starts)
            fig.matched += len({g for g in got if g is not None} & set(starts))
            for a, g in zip(atoms, got, strict=True):
                if g is None or not any(p.startswith(g) or g.startswith(p) for p in prompts):
                    fig.machine_intents += 1
                    fig.notes.append(f"{rel}: machine-text intent {a.intent[:60]!r}")
            for p in prompts:
                if not any(t.startswith(p[:40]) for t in turns):
                    fig.lost += 1
                    fig.notes.append(f"{rel}: lost prompt {p!r}")
            fixes = [_flat(c)[:40] for c in truth["corrections"]]
            fig.corrections += len(fixes)
            for a, g in zip(atoms, got, strict=True):
                inside = sum(
                    1 for c in fixes if c in _flat(a.raw_segment) and not (g or "").startswith(c)
                )
                fig.recognised += min(inside, a.provenance.ux_signals.get("corrections", 0))
            missed = [s for s in starts if s not in got]
            extra = [g for g in got if g not in starts]
            if missed or extra:
                fig.notes.append(f"{rel}: missed starts {missed}, extra atoms {extra}")
    return parts


def _line(name: str, value: str, target: str, ok: bool) -> str:
    return f"  {name:<24} {value:>14}   target {target:<8} {'ok' if ok else 'MISSED'}"


def report(parts: dict[str, Figures]) -> str:
    out = []
    for split in ("tuned", "held-out"):
        f = parts.get(split)
        if f is None:
            continue
        out.append(f"{split}: {f.sessions} sessions, {f.atoms} atoms, {f.starts} labelled tasks")
        out.append(_line("boundary precision", f"{f.precision:.2f}", ">= 0.8", f.precision >= 0.8))
        out.append(_line("boundary recall", f"{f.recall:.2f}", ">= 0.9", f.recall >= 0.9))
        share = f"{f.recognised}/{f.corrections} ({f.corrections_share:.0%})"
        out.append(_line("corrections recognised", share, ">= 80%", f.corrections_share >= 0.8))
        mi = str(f.machine_intents)
        out.append(_line("machine-text intents", mi, "0", f.machine_intents == 0))
        out.append(_line("lost prompts", str(f.lost), "0", f.lost == 0))
        out.extend(f"    {n}" for n in f.notes)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument(
        "--corpus",
        type=Path,
        help=f"a folder laid out like tests/fixtures/labelled with its labels in {LABELS} "
        "(default: the committed synthetic corpus and its truth.json)",
    )
    args = ap.parse_args(argv)
    corpus, labels = (args.corpus, LABELS) if args.corpus is not None else (CORPUS, TRUTH)
    name = corpus.relative_to(CORPUS.parents[2]) if corpus == CORPUS else corpus
    try:
        parts = measure(corpus, labels)
    except CorpusError as e:
        print(e, file=sys.stderr)
        return 2
    print(f"task boundaries on {name} (offline splitter)")
    print(report(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
