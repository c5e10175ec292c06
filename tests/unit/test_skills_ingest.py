"""Scan → render → split (offline) → commit without a server: deltas, cursors, exactly-once commits."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import activities.skills.scan as ingest
from activities.skills.render import render_delta
from activities.skills.scan import commit_delta, read_atoms, scan
from activities.skills.store import SkillStore
from activities.skills.task_agent import split_delta
from tests.skills_fixtures import (
    CC_MAIN,
    CC_TRAJ,
    CODEX_MAIN,
    CODEX_TRAJ,
    FIXTURES,
    Transcripts,
    all_files_text,
    copy_transcripts,
    leaks,
)
from xsky.skills.atoms import AtomTask
from xsky.skills.runs import DeltaRef, ScanInput, ScanResult
from xsky.skills.sources import Source, resolve


def sources(t: Transcripts) -> list[Source]:
    return [Source(kind, path, "test") for kind, path in t.sources()]


def tick(t: Transcripts, **kw: object) -> ScanResult:
    """One tick done in-process: scan, then each delta rendered, split offline and committed."""
    result = scan(t.home, sources(t), ScanInput(settle_seconds=3600, **kw))  # type: ignore[arg-type]
    for d in result.deltas:
        process(t.home, d)
    return result


def process(home: Path, d: DeltaRef) -> None:
    render_delta(home, d)
    asyncio.run(split_delta(home, d, None, lambda note: None))
    assert commit_delta(home, d).committed


@pytest.fixture
def t(tmp_path: Path) -> Transcripts:
    return Transcripts(copy_transcripts(tmp_path / "transcripts"), tmp_path / "home")


def chain(atoms: list[AtomTask]) -> None:
    assert [int(a.atom_id[-4:]) for a in atoms] == list(range(1, len(atoms) + 1))
    for a, b in zip(atoms, atoms[1:], strict=False):
        assert (a.post_atom_id, b.pre_atom_id, a.offset_end) == (
            b.atom_id,
            a.atom_id,
            b.offset_start,
        )


def test_first_tick_ingests_every_file_and_a_tick_with_nothing_new_reads_no_file(
    t: Transcripts, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = tick(t)
    assert len(first.deltas) == 6 and first.new_files == 6
    assert {p.name for p in t.home.glob("*_sessions/*.md")} >= {
        f"{CC_TRAJ}.md",
        f"{CODEX_TRAJ}.md",
        f"{CC_TRAJ}-side.md",
    }
    chain(read_atoms(t.home, CC_TRAJ))

    def no_reading(*a: object, **k: object) -> None:
        raise AssertionError("a tick with nothing new must not open a transcript")

    monkeypatch.setattr(ingest, "delta_end", no_reading)
    monkeypatch.setattr(ingest, "_name_new", no_reading)
    again = tick(t)
    assert (again.deltas, again.changed, again.files) == ([], 0, 6)


def test_appended_bytes_become_new_atoms_that_continue_the_numbering_and_the_linked_list(
    t: Transcripts,
) -> None:
    tick(t)
    before = read_atoms(t.home, CODEX_TRAJ)
    size = os.path.getsize(t.root / CODEX_MAIN)
    t.append(CODEX_MAIN)
    result = tick(t)
    assert [(d.traj_id, d.start) for d in result.deltas] == [(CODEX_TRAJ, size)]
    after = read_atoms(t.home, CODEX_TRAJ)
    chain(after)
    assert len(after) > len(before) and after[-1].intent.startswith("add a rollback")
    assert [a.atom_id for a in after[: len(before)]] == [a.atom_id for a in before]


def test_an_append_that_continues_the_last_task_extends_its_atom(t: Transcripts) -> None:
    tick(t)
    before = read_atoms(t.home, CODEX_TRAJ)
    line = (
        b'{"timestamp":"2026-11-28T10:30:00.000Z","type":"response_item","payload":{"type":"message","role":"user",'
        b'"content":[{"type":"input_text","text":"no, that is wrong: use EXPLAIN (ANALYZE, BUFFERS) instead"}]}}\n'
    )
    with open(t.root / CODEX_MAIN, "ab") as fh:
        fh.write(line)
    tick(t)
    after = read_atoms(t.home, CODEX_TRAJ)
    assert len(after) == len(before), "a correction belongs to the task it corrects"
    last, old = after[-1], before[-1]
    assert (
        last.atom_id == old.atom_id
        and last.offset_end > old.offset_end
        and last.offset_start == old.offset_start
    )
    assert (
        last.provenance.ux_signals.get("corrections", 0)
        == old.provenance.ux_signals.get("corrections", 0) + 1
    )
    assert last.ux_score < old.ux_score and len(last.provenance.deltas) == 2
    chain(after)


def test_a_partial_last_line_waits_until_it_is_complete_or_the_file_settles(t: Transcripts) -> None:
    tick(t)
    extra = (FIXTURES / CC_MAIN.replace(".jsonl", ".append.jsonl")).read_bytes()
    first_line = extra[: extra.index(b"\n") + 1]
    path = t.root / CC_MAIN
    with open(path, "ab") as fh:
        fh.write(first_line[:40])
    waiting = tick(t)
    assert waiting.deltas == [] and waiting.waiting == 1
    with open(path, "ab") as fh:
        fh.write(first_line[40:])
    done = tick(t)
    assert len(done.deltas) == 1 and done.deltas[0].end == os.path.getsize(path)
    # A last line without its newline, but whole JSON, is taken once the file is old enough.
    with open(path, "ab") as fh:
        fh.write(extra[len(first_line) : extra.index(b"\n", len(first_line))])
    assert tick(t).deltas == []
    old = os.path.getmtime(path) - 600
    os.utime(path, (old, old))
    settled = scan(t.home, sources(t), ScanInput(settle_seconds=300))
    assert len(settled.deltas) == 1 and settled.deltas[0].end == os.path.getsize(path)


def test_a_delta_commits_once_a_retry_gets_the_same_answer_and_an_overlapping_stale_one_is_refused(
    t: Transcripts,
) -> None:
    result = scan(t.home, sources(t), ScanInput(settle_seconds=3600))
    d = next(x for x in result.deltas if x.traj_id == CODEX_TRAJ)
    render_delta(t.home, d)
    asyncio.run(split_delta(t.home, d, None, lambda note: None))
    shadow = d.model_copy(update={"end": d.end - 1})  # another tick's idea of the same bytes
    first = commit_delta(t.home, d)
    assert first.committed and first.new
    again = commit_delta(
        t.home, d
    )  # a retry after a worker died before replying: the same answer, nothing rewritten
    assert (
        again.committed
        and (again.atoms, again.new) == (first.atoms, first.new)
        and "earlier attempt" in again.reason
    )
    stale = commit_delta(t.home, shadow)
    assert not stale.committed and "stale" in stale.reason
    chain(read_atoms(t.home, CODEX_TRAJ))


def test_a_commit_killed_half_way_is_redone_to_the_same_files(
    t: Transcripts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = Transcripts(
        copy_transcripts(tmp_path / "transcriptz"), tmp_path / "homz"
    )  # same path lengths: same offsets
    tick(clean)
    result = scan(t.home, sources(t), ScanInput(settle_seconds=3600))
    d = next(x for x in result.deltas if x.traj_id == CC_TRAJ)
    render_delta(t.home, d)
    asyncio.run(split_delta(t.home, d, None, lambda note: None))
    real = ingest.write_json
    written: list[Path] = []

    def dies_after_one_atom(path: Path, value: object, sync: bool = False) -> None:
        if written:
            raise KeyboardInterrupt("worker killed")  # not an Exception: nothing may catch it
        written.append(path)
        real(path, value, sync)

    monkeypatch.setattr(ingest, "write_json", dies_after_one_atom)
    with pytest.raises(KeyboardInterrupt):
        commit_delta(t.home, d)
    store = SkillStore(t.home)
    assert store.file(d.path).cursor == 0  # type: ignore[union-attr]
    store.close()
    monkeypatch.setattr(ingest, "write_json", real)
    assert commit_delta(t.home, d).committed
    for other in result.deltas:
        if other is not d:
            process(t.home, other)
    ours, theirs = all_files_text(t.home), all_files_text(clean.home)

    def pick(files: dict[str, str], home: Path) -> dict[str, str]:
        return {
            k.replace(str(home), "").replace(str(home.parent), ""): v
            for k, v in files.items()
            if "atom_" in k or k.endswith(".md")
        }

    assert pick(ours, t.home).keys() == pick(theirs, clean.home).keys()
    for name, text in pick(ours, t.home).items():
        other = pick(theirs, clean.home)[name]
        assert text.replace(str(t.root), "") == other.replace(str(clean.root), ""), name


def test_a_codex_session_moved_to_the_archive_keeps_its_trajectory_and_cursor(
    t: Transcripts,
) -> None:
    tick(t)
    src = t.root / CODEX_MAIN
    dest = t.codex / "archived_sessions" / src.name
    shutil.move(src, dest)
    moved = tick(t)
    assert moved.moved == 1 and moved.deltas == [] and moved.new_files == 0
    store = SkillStore(t.home)
    try:
        row = store.file(str(dest))
        assert row is not None and row.traj_id == CODEX_TRAJ and row.cursor == os.path.getsize(dest)
    finally:
        store.close()


def test_a_transcript_that_shrank_is_reported_and_no_longer_followed(t: Transcripts) -> None:
    tick(t)
    path = t.root / CODEX_MAIN
    path.write_bytes(path.read_bytes()[:100])
    result = tick(t)
    assert result.deltas == [] and any("shrank" in p for p in result.problems)


def test_a_long_delta_is_windowed_and_its_atoms_still_tile_the_view(t: Transcripts) -> None:
    path = t.root / CODEX_MAIN
    body = path.read_bytes()
    lines = body.splitlines(keepends=True)
    with open(path, "ab") as fh:
        for _ in range(12):  # the session repeated: ~12 × 25 KB of view, far over 30,000 characters
            fh.writelines(lines[1:])
    tick(t)
    atoms = read_atoms(t.home, CODEX_TRAJ)
    chain(atoms)
    assert len(atoms) >= 12
    view = (t.home / "codex_sessions" / f"{CODEX_TRAJ}.md").read_text()
    for a in (
        atoms
    ):  # each atom's raw_segment is its own slice of the view, once (cut at 30,000 characters)
        segment = a.raw_segment.split("\n[… cut; see provenance.raw]")[0]
        assert (
            segment == view[a.offset_start : a.offset_end][: len(segment)]
            and len(segment) <= 30_000
        )
        assert len(a.provenance.deltas) == 1


def test_no_fixture_secret_reaches_a_view_an_index_an_atom_or_the_database(t: Transcripts) -> None:
    t.append(CC_MAIN)
    t.append(CODEX_MAIN)
    tick(t)
    assert leaks(all_files_text(t.home)) == []


def test_a_registered_source_that_does_not_exist_is_a_problem_with_a_fix(t: Transcripts) -> None:
    missing = Source("codex", t.root / "nowhere", "/p/.xsky/settings.json")
    result = scan(t.home, [*sources(t), missing], ScanInput())
    assert any("no such folder" in p and "remove-source" in p for p in result.problems)


def test_a_kinds_usual_place_that_does_not_exist_is_skipped_quietly(t: Transcripts) -> None:
    # The defaults (no file names a source), and the usual places `add-source` keeps beside a
    # folder it registers (no path): no Codex on this machine is nothing to warn of, every scan.
    env = {"HOME": str(t.root / "no-home")}
    defaults = resolve(None, env)
    kept = resolve([("/p/.xsky/settings.json", [("codex", None), ("claude-code", None)])], env)
    assert all(not s.root.exists() and s.usual for s in defaults + kept)
    result = scan(t.home, [*sources(t), *defaults, *kept], ScanInput())
    assert result.problems == []
    # the same place named by a person is theirs: it warns until it exists or is removed
    named = resolve([("/p/.xsky/settings.json", [("codex", str(kept[0].root))])], env)
    assert not named[0].usual
    result = scan(t.home, [*sources(t), *named], ScanInput())
    assert [p for p in result.problems if "no such folder" in p] != []


def test_a_new_file_at_an_old_path_is_a_new_trajectory_and_an_unrelated_reused_inode_is_not_a_move(
    t: Transcripts,
) -> None:
    tick(t)
    path = t.root / CODEX_MAIN
    data = path.read_bytes()
    path.unlink()
    # The new file may even get the old inode back; its first bytes tell it apart.
    path.write_bytes(
        data.replace(
            b"0199a3c2-7e51-7b20-9c4d-1f2e3d4c5b6a", b"0199ffff-7e51-7b20-9c4d-1f2e3d4c5b6a"
        )
        + data[-300:]
    )
    result = tick(t)
    assert any("was replaced by a new file" in p for p in result.problems)
    assert [d.traj_id for d in result.deltas] == ["traj_codex_learn_0199ffff"]
    store = SkillStore(t.home)
    try:
        old = store.file_of(CODEX_TRAJ)
        assert old is not None and old.status == "replaced"
    finally:
        store.close()


def test_a_moved_file_whose_first_bytes_differ_is_not_taken_for_the_old_one(t: Transcripts) -> None:
    tick(t)
    src = t.root / CODEX_MAIN
    dest = t.codex / "archived_sessions" / src.name
    shutil.move(src, dest)
    with open(dest, "r+b") as fh:  # same inode, different content: not the file we followed
        fh.write(
            b'{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}\n'
        )
    moved = tick(t)
    assert moved.moved == 0 and moved.gone == 1 and moved.new_files == 1


def test_one_task_spanning_several_windows_is_one_atom_holding_its_text_once(
    t: Transcripts,
) -> None:
    path = t.codex / "sessions" / "2026" / "11" / "30" / "rollout-long.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        {
            "type": "session_meta",
            "payload": {"id": "0199eeee-0000-7000-8000-000000000001", "cwd": "/home/dev/long"},
        },
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "profile the nightly batch job"}],
            },
        },
    ]
    for i in range(40):
        lines.append(
            {
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "name": "shell",
                    "call_id": f"c{i}",
                    "arguments": json.dumps({"command": ["bash", "-lc", f"perf record {i}"]}),
                },
            }
        )
        lines.append(
            {
                "type": "response_item",
                "payload": {
                    "type": "function_call_output",
                    "call_id": f"c{i}",
                    "output": f"sample {i} " + "x" * 3000,
                },
            }
        )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    tick(t)
    (atom,) = read_atoms(t.home, "traj_codex_long_0199eeee")
    view = (t.home / "codex_sessions" / "traj_codex_long_0199eeee.md").read_text()
    assert atom.raw_segment.count("profile the nightly batch job") == 1
    segment = atom.raw_segment.split("\n[… cut; see provenance.raw]")[0]
    assert segment == view[atom.offset_start : atom.offset_end][: len(segment)]
    assert atom.provenance.deltas == [f"bytes 0-{path.stat().st_size}"]


def test_a_codex_sub_agents_task_is_its_parent_models_and_counts_as_the_parents_session(
    t: Transcripts,
) -> None:
    # A thread another Codex agent spawned (SessionSource::SubAgent): its prompt is the
    # parent model's, and its atoms belong to the parent's session — evidence must not count
    # a person's one session as two, nor found a skill on a model's words.
    parent = "0199a3c2-7e51-7b20-9c4d-1f2e3d4c5b6a"
    child = (
        t.codex
        / "sessions/2026/11/28/rollout-2026-11-28T09-20-00-0199a3c9-0000-7000-8000-000000000001.jsonl"
    )
    lines = [
        {
            "timestamp": "2026-11-28T09:20:00.000Z",
            "type": "session_meta",
            "payload": {
                "id": "0199a3c9-0000-7000-8000-000000000001",
                "cwd": "/home/kim/learn",
                "source": {"subagent": {"thread_spawn": {"parent_thread_id": parent, "depth": 1}}},
            },
        },
        {
            "timestamp": "2026-11-28T09:20:01.000Z",
            "type": "event_msg",
            "payload": {"type": "task_started"},
        },
        {
            "timestamp": "2026-11-28T09:20:01.000Z",
            "type": "event_msg",
            "payload": {
                "type": "user_message",
                "message": "List every place amounts are rounded in billing/",
            },
        },
        {
            "timestamp": "2026-11-28T09:20:05.000Z",
            "type": "event_msg",
            "payload": {"type": "agent_message", "message": "invoice.py:88 rounds."},
        },
        {
            "timestamp": "2026-11-28T09:20:05.000Z",
            "type": "event_msg",
            "payload": {"type": "task_complete"},
        },
    ]
    child.write_text("".join(json.dumps(x) + "\n" for x in lines))
    tick(t)  # the parent's file is read first (a sub-agent may copy its records) …
    tick(t)  # … then the sub-agent's
    store = SkillStore(t.home)
    try:
        row = store.file(str(child))
        assert row is not None
        (atom,) = read_atoms(t.home, row.traj_id)
    finally:
        store.close()
    assert atom.provenance.origin == "model" and atom.provenance.session == parent


def test_a_subagents_or_archive_folder_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    """The scan follows no link: a `subagents` folder linked elsewhere fed another folder's
    files to the pipeline (a skills worker more privileged than the folder's owner)."""
    from activities.skills.discover import discover

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "agent-x.jsonl").write_text('{"type": "user"}\n')
    (outside / "rollout-x.jsonl").write_text('{"type": "session_meta"}\n')
    session = tmp_path / "claude" / "-home-u-p" / "s1"
    session.mkdir(parents=True)
    (session / "subagents").symlink_to(outside)
    (session.parent / "s1.jsonl").write_text('{"type": "user"}\n')
    found = [e.path for e, _ in discover(Source("claude-code", tmp_path / "claude", "test"))]
    assert found == [str(session.parent / "s1.jsonl")]
    codex = tmp_path / "codex"
    (codex / "sessions").mkdir(parents=True)
    (codex / "archived_sessions").symlink_to(outside)
    assert list(discover(Source("codex", codex, "test"))) == []


def test_one_record_of_gigabytes_is_passed_over_unread_and_what_follows_is_mined(
    t: Transcripts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest, "HUGE_LINE", 256 * 1024)  # (64 MiB in the product)
    tick(t)
    before = read_atoms(t.home, CODEX_TRAJ)
    path = t.root / CODEX_MAIN
    huge = json.dumps({"type": "response_item", "payload": {"text": "x" * 600_000}})
    with open(path, "ab") as fh:
        fh.write(huge.encode() + b"\n")
    reads: list[int] = []
    real_open = open

    class Counting:  # how much of the file render reads at once
        def __init__(self, f: Any) -> None:
            self.f = f

        def __enter__(self) -> Counting:
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()

        def seek(self, at: int) -> int:
            return int(self.f.seek(at))

        def read(self, n: int = -1) -> bytes:
            reads.append(n)
            return bytes(self.f.read(n))

    def counting_open(p: Any, mode: str = "r", *a: Any, **kw: Any) -> Any:
        f = real_open(p, mode, *a, **kw)
        return Counting(f) if str(p) == str(path) and mode == "rb" else f

    monkeypatch.setattr("activities.skills.render.open", counting_open, raising=False)
    t.append(CODEX_MAIN)  # then the person goes on
    result = scan(t.home, sources(t), ScanInput(settle_seconds=3600, max_delta_bytes=64 * 1024))
    unreadable = 0
    for d in result.deltas:
        unreadable += render_delta(t.home, d).unreadable
        asyncio.run(split_delta(t.home, d, None, lambda note: None))
        assert commit_delta(t.home, d).committed
    assert unreadable == 1
    assert reads and max(reads) <= 1 << 20  # the record was looked through, never held
    tick(t)  # a file's next delta, the next round
    after = read_atoms(t.home, CODEX_TRAJ)
    assert len(after) > len(before) and after[-1].intent.startswith("add a rollback")


def test_a_workflow_runs_agents_are_mined_as_the_sessions_subagents(t: Transcripts) -> None:
    """Claude Code's `Workflow` tool writes its agents' transcripts one level below the
    session's other subagents, `<session>/subagents/workflows/<run>/agent-<id>.jsonl`, beside
    the run's `journal.jsonl` (daaain/claude-code-log `test/test_data/workflow_scriptpath/`):
    they were never found, so every task a workflow's agents did was left out unsaid."""
    from activities.skills.discover import discover

    session = "22220000-0000-4000-8000-000000000002"
    project = t.claude / "-repo"
    run = project / session / "subagents" / "workflows" / "wf_sp01"
    run.mkdir(parents=True)
    head = {"isSidechain": False, "userType": "external", "cwd": "/repo", "version": "2.1.2"}
    main = [
        {
            **head,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "sessionId": session,
            "timestamp": "2026-06-28T09:00:00.000Z",
            "message": {"role": "user", "content": "Run the docs sweep workflow from its file."},
        },
        {
            **head,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "sessionId": session,
            "timestamp": "2026-06-28T09:00:01.000Z",
            "message": {
                "id": "msg_a1",
                "role": "assistant",
                "model": "claude-opus-4-8",
                "content": [{"type": "text", "text": "Launched the sweep."}],
            },
        },
    ]
    (project / f"{session}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in main))
    sub = {
        **head,
        "isSidechain": True,
        "sessionId": f"{session}#agent-agsp0001",
        "agentId": "agsp0001",
    }
    agent = [
        {
            **sub,
            "type": "user",
            "uuid": "s1",
            "parentUuid": None,
            "timestamp": "2026-06-28T09:00:02.000Z",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": "Sweep docs batches a and b."}],
            },
        },
        {
            **sub,
            "type": "assistant",
            "uuid": "s2",
            "parentUuid": "s1",
            "timestamp": "2026-06-28T09:00:03.000Z",
            "message": {
                "id": "msg_s2",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [
                    {"type": "text", "text": "Batch a and b swept; 2 stale pages flagged."}
                ],
            },
        },
    ]
    (run / "agent-agsp0001.jsonl").write_text("".join(json.dumps(r) + "\n" for r in agent))
    (run / "journal.jsonl").write_text(
        '{"type": "started", "key": "v2:hsp0", "agentId": "agsp0001"}\n'
        '{"type": "result", "key": "v2:hsp0", "agentId": "agsp0001", "result": "swept"}\n'
    )
    found = {e.path: sub for e, sub in discover(Source("claude-code", t.claude, "test"))}
    assert found.get(str(run / "agent-agsp0001.jsonl")) is True
    assert str(run / "journal.jsonl") not in found  # the run's journal is no transcript
    tick(t)
    store = SkillStore(t.home)
    try:
        row = store.file(str(run / "agent-agsp0001.jsonl"))
        assert row is not None and row.traj_id.startswith("traj_cc_repo_22220000-sub-agsp0001")
        (atom,) = read_atoms(t.home, row.traj_id)
    finally:
        store.close()
    assert atom.intent == "Sweep docs batches a and b."
    assert atom.provenance.origin == "model" and atom.provenance.session == session


def test_a_rollout_codex_compressed_is_read_through_a_copy(tmp_path: Path) -> None:
    """Codex compresses cold rollouts in place, ``rollout-….jsonl`` → ``….jsonl.zst``
    (codex-rs/rollout/src/compression.rs), and reads either. Its tasks were skipped without a
    word (v0.12.0), then said and not read; they are read through a decompressed copy now."""
    import zstandard

    codex = tmp_path / "codex"
    day = codex / "sessions" / "2026" / "11" / "30"
    archive = codex / "archived_sessions"
    day.mkdir(parents=True)
    archive.mkdir()
    meta = '{"type": "session_meta", "payload": {"id": "0199"}}\n'
    (day / "rollout-2026-11-30T10-00-00-0199.jsonl").write_text(meta)
    old = (FIXTURES / CODEX_MAIN).read_bytes()
    packed = archive / "rollout-2026-11-01T10-00-00-0198.jsonl.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(old))
    (archive / "rollout-2026-11-02T10-00-00-0197.jsonl.zst").write_bytes(b"(not zstd)")
    # a compressed rollout beside its plain copy is the plain one (Codex reads that)
    (day / "rollout-2026-11-30T10-00-00-0199.jsonl.zst").write_bytes(b"(zstd)")
    home = tmp_path / "home"
    found = scan(home, [Source("codex", codex, "test")], ScanInput(settle_seconds=0))
    paths = sorted(d.path for d in found.deltas)
    assert len(paths) == 2 and str(day / "rollout-2026-11-30T10-00-00-0199.jsonl") in paths
    (copy,) = [p for p in paths if "unpacked" in p]
    assert Path(copy).read_bytes() == old and Path(copy).stat().st_mode & 0o077 == 0
    (problem,) = found.problems  # the one that is no zstd at all is said
    assert (
        "rollout-2026-11-02T10-00-00-0197.jsonl.zst" in problem and "could not be read" in problem
    )
    made = Path(copy).stat().st_ino
    scan(home, [Source("codex", codex, "test")], ScanInput(settle_seconds=0))
    assert Path(copy).stat().st_ino == made  # made once, not again at every scan
    # Its compressed rollout deleted (or Codex wrote the plain file back): the copy goes too —
    # copies of every rollout ever read would fill the skill home.
    packed.unlink()
    (home / "unpacked" / ".tmp-0123456789ab").write_bytes(b"")  # another scan's, being written
    scan(home, [Source("codex", codex, "test")], ScanInput(settle_seconds=0))
    assert not Path(copy).exists()
    left = sorted(p.name for p in (home / "unpacked").iterdir())
    assert left[1:] == [".tmp-0123456789ab"] and left[0].startswith(".failed-")  # (the bad one)


def test_a_compressed_rollout_that_cannot_be_read_is_not_read_again_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sec11: a corrupt (or too large) rollout was decompressed again at every scan — up to
    # 1 GiB of work every 30 s; it is said at every scan, and tried again once it changes.
    import os

    import zstandard

    from activities.skills import unpacked

    codex = tmp_path / "codex"
    archive = codex / "archived_sessions"
    archive.mkdir(parents=True)
    bad = archive / "rollout-2026-11-02T10-00-00-0197.jsonl.zst"
    bad.write_bytes(b"(not zstd)")
    tries: list[Path] = []
    real = unpacked._decompress

    def counted(source: Path, copy: Path, mtime_ns: int) -> None:
        tries.append(source)
        real(source, copy, mtime_ns)

    monkeypatch.setattr(unpacked, "_decompress", counted)
    home = tmp_path / "home"
    for _ in range(3):
        found = scan(home, [Source("codex", codex, "test")], ScanInput(settle_seconds=0))
        (problem,) = found.problems
        assert "could not be read" in problem
    assert len(tries) == 1
    bad.write_bytes(zstandard.ZstdCompressor().compress((FIXTURES / CODEX_MAIN).read_bytes()))
    os.utime(bad, ns=(bad.stat().st_mtime_ns + 10**9,) * 2)
    found = scan(home, [Source("codex", codex, "test")], ScanInput(settle_seconds=0))
    assert found.problems == [] and len(tries) == 2 and len(found.deltas) == 1


def test_a_rollout_the_machine_failed_to_unpack_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # review14: a full disk (or EIO) once marked a good rollout unreadable for good
    import errno

    import zstandard

    from activities.skills import unpacked

    codex = tmp_path / "codex"
    archive = codex / "archived_sessions"
    archive.mkdir(parents=True)
    rollout = archive / "rollout-2026-11-01T10-00-00-0198.jsonl.zst"
    rollout.write_bytes(zstandard.ZstdCompressor().compress((FIXTURES / CODEX_MAIN).read_bytes()))
    real = unpacked._decompress
    calls: list[int] = []

    def full_once(source: Path, copy: Path, mtime_ns: int) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(source, copy, mtime_ns)

    monkeypatch.setattr(unpacked, "_decompress", full_once)
    home = tmp_path / "home"
    first = scan(home, [Source("codex", codex, "test")], ScanInput(settle_seconds=0))
    assert "No space left on device" in first.problems[0]
    again = scan(home, [Source("codex", codex, "test")], ScanInput(settle_seconds=0))
    assert again.problems == [] and len(again.deltas) == 1 and len(calls) == 2
