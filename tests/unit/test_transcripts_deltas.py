"""The same bytes give the same events whatever the delta boundaries: every classification
that spans records (a queued prompt and its delivery, a question and its answer, an
interrupt and its correction, Codex's two copies of a prompt, a call and its result) lives
in the parse state, which is saved between deltas as JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from xsky.skills.trajectory import Event
from xsky.skills.transcripts import FileInfo, ParseState, adapter_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
CASES = [
    ("claude-code", p)
    for p in sorted(FIXTURES.glob("claude-code-*/projects/**/*.jsonl"))
    if not p.name.endswith(".append.jsonl")
] + [("codex", p) for p in sorted(FIXTURES.glob("codex-*/sessions/**/*.jsonl"))]


def facts(e: Event) -> tuple[object, ...]:
    return (e.kind, e.text, e.origin, e.skill, e.is_error, e.marker, e.tool, e.lane, e.offset)


def in_deltas(kind: str, path: Path, cuts: list[int]) -> list[tuple[object, ...]]:
    data = path.read_bytes()
    info = FileInfo(str(path), "/subagents/" in str(path))
    state_json = ParseState().model_dump_json()
    events: list[Event] = []
    for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
        state = ParseState.model_validate_json(state_json)  # as the store keeps it
        events += adapter_for(kind).parse(data[start:end], start, state, info)
        state_json = state.model_dump_json()
    return [facts(e) for e in events]


def line_ends(path: Path) -> list[int]:
    data = path.read_bytes()
    return [i + 1 for i, b in enumerate(data) if b == 0x0A][:-1]


@pytest.mark.parametrize(("kind", "path"), CASES, ids=lambda v: getattr(v, "name", v)[:40])
def test_one_cut_at_any_line_gives_the_events_of_the_whole_file(kind: str, path: Path) -> None:
    whole = in_deltas(kind, path, [])
    assert whole
    for cut in line_ends(path):
        assert in_deltas(kind, path, [cut]) == whole, f"cut at byte {cut}"


@pytest.mark.parametrize(("kind", "path"), CASES, ids=lambda v: getattr(v, "name", v)[:40])
def test_a_delta_per_line_gives_the_events_of_the_whole_file(kind: str, path: Path) -> None:
    assert in_deltas(kind, path, line_ends(path)) == in_deltas(kind, path, [])


def test_cuts_inside_a_queued_prompt_deliver_it_once() -> None:
    path = next(p for k, p in CASES if "notes" in str(p) and "subagents" not in str(p))
    lines = path.read_bytes().splitlines(keepends=True)
    enqueue = next(i for i, x in enumerate(lines) if b'"enqueue"' in x)
    dequeue = next(i for i, x in enumerate(lines) if b'"dequeue"' in x)
    at = [sum(len(x) for x in lines[: i + 1]) for i in range(len(lines))]
    for cuts in ([at[enqueue]], [at[dequeue]], [at[enqueue], at[dequeue]], [at[dequeue - 1]]):
        events = in_deltas("claude-code", path, cuts)
        queued = [f for f in events if f[0] == "user" and f[2] == "queued"]
        assert [f[1] for f in queued] == ["also make the search case-insensitive"], cuts
