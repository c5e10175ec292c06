"""The same bytes give the same atoms whatever the delta cut points (and window edges).

The pipeline cuts a transcript into deltas at arbitrary record boundaries (a file that grows
while the agent works, ``max_delta_bytes``), and a long delta into windows; the splitter's
state crosses both in the atom it extends. Each labelled session is ingested whole, then
again cut at random line boundaries (hypothesis), through the real render, offline split and
commit steps: every atom file must be the same but for the list of deltas that built it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import activities.skills.task_agent as task_agent
from activities.skills.render import render_delta
from activities.skills.scan import commit_delta, read_atoms, scan
from activities.skills.task_agent import split_delta
from xsky.skills import atoms as atoms_module
from xsky.skills.runs import ScanInput
from xsky.skills.sources import Source

LABELLED = Path(__file__).resolve().parents[1] / "fixtures" / "labelled"
FILES = sorted(str(p.relative_to(LABELLED)) for p in LABELLED.rglob("*.jsonl"))


def line_ends(data: bytes) -> list[int]:
    return [i + 1 for i, b in enumerate(data) if b == 0x0A][:-1]


def ingest_cut(rel: str, cuts: list[int]) -> dict[str, dict[str, Any]]:
    """The atom files of ``rel`` ingested in deltas ending at ``cuts`` (and the file's end)."""
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "corpus", Path(tmp) / "home"
        (root / rel).parent.mkdir(parents=True)
        shutil.copy(LABELLED / rel, root / rel)
        kind, base = (
            ("claude-code", "claude/projects") if rel.startswith("claude") else ("codex", "codex")
        )
        (root / base).mkdir(parents=True, exist_ok=True)
        (found,) = scan(
            home, [Source(kind, root / base, "test")], ScanInput(settle_seconds=3600)
        ).deltas
        start = 0
        for end in [*sorted(set(cuts)), found.end]:
            if end <= start:
                continue
            d = found.model_copy(update={"start": start, "end": end})
            render_delta(home, d)
            asyncio.run(split_delta(home, d, None, lambda note: None))
            assert commit_delta(home, d).committed
            start = end
        out = {}
        for a in read_atoms(home, found.traj_id):
            # the temporary folder is in paths and the view's header: the same in every run
            dumped = json.loads(a.model_dump_json().replace(str(root), "<root>"))
            dumped["provenance"].pop("deltas")
            out[a.atom_id] = dumped
        return out


WHOLE: dict[str, dict[str, dict[str, Any]]] = {}


def whole(rel: str) -> dict[str, dict[str, Any]]:
    if rel not in WHOLE:
        WHOLE[rel] = ingest_cut(rel, [])
    return WHOLE[rel]


def differences(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> list[str]:
    if a.keys() != b.keys():
        return [f"atoms {sorted(a)} != {sorted(b)}"]
    out = []
    for aid in a:
        for key in a[aid]:
            if a[aid][key] != b[aid][key]:
                out.append(f"{aid}.{key}: {str(a[aid][key])[:300]} != {str(b[aid][key])[:300]}")
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_same_bytes_give_the_same_atoms_whatever_the_delta_cuts(data: st.DataObject) -> None:
    rel = data.draw(st.sampled_from(FILES), label="file")
    ends = line_ends((LABELLED / rel).read_bytes())
    cuts = data.draw(st.lists(st.sampled_from(ends), max_size=8), label="cuts")
    assert differences(whole(rel), ingest_cut(rel, cuts)) == []


@pytest.mark.parametrize("rel", FILES)
def test_every_line_a_delta_and_tiny_windows_give_the_same_atoms(
    rel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = whole(rel)
    # Windows of ~1,500 characters: a window edge between almost every two units.
    monkeypatch.setattr(task_agent, "windows", lambda units: atoms_module.windows(units, cap=1500))
    assert differences(expected, ingest_cut(rel, line_ends((LABELLED / rel).read_bytes()))) == []


def test_a_delta_of_machine_lines_only_writes_no_atom_and_the_first_task_starts_at_them() -> None:
    rel = next(f for f in FILES if f.startswith("codex"))
    ends = line_ends((LABELLED / rel).read_bytes())
    # session_meta, turn_context and the injected environment context: nothing of a task yet
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "corpus", Path(tmp) / "home"
        (root / rel).parent.mkdir(parents=True)
        shutil.copy(LABELLED / rel, root / rel)
        (found,) = scan(
            home, [Source("codex", root / "codex", "test")], ScanInput(settle_seconds=3600)
        ).deltas
        d = found.model_copy(update={"end": ends[2]})
        render_delta(home, d)
        asyncio.run(split_delta(home, d, None, lambda note: None))
        assert commit_delta(home, d).committed
        assert read_atoms(home, found.traj_id) == []
    first = next(iter(whole(rel).values()))
    assert first["offset_start"] == ingest_cut(rel, [ends[2]])[first["atom_id"]]["offset_start"]
    assert first["raw_segment"].startswith("> session_start:")
