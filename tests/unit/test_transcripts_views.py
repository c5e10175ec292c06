"""What reaches the views: no terminal control sequences (the raw JSONL keeps them), every
record type counted as interpreted or opaque, those counts summed in the store and shown by
``skills status``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from activities.skills.store import SkillStore
from cli import skills_status_cmd
from cli.render import out
from client.skills import Skills
from xsky.config import Settings, load_settings
from xsky.errors import ConnectError
from xsky.skills.trajectory import Event, render, strip_terminal
from xsky.skills.transcripts import FileInfo, ParseState, adapter_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
SHIPIT = next((FIXTURES / "claude-code-2.1.7").rglob("*.jsonl"))
V058 = next((FIXTURES / "codex-0.58").rglob("rollout-*.jsonl"))


def test_ansi_escapes_and_progress_redraws_are_stripped_from_views() -> None:
    raw = (
        "\x1b[1;31mFAILED\x1b[0m tests/test_a.py \x1b]0;pytest\x07"
        "\x1b]8;;https://ci.example.com/1\x1b\\build 1\x1b]8;;\x1b\\ \x1b(Bdone\x1b[2K\n"
        "downloading 10%\rdownloading 55%\rdownloading 100%\r\nnext\x08 line\x9b1m"
    )
    assert strip_terminal(raw) == (
        "FAILED tests/test_a.py build 1 done\ndownloading 100%\nnext line"
    )
    event = Event("tool_result", raw, 0, 10, tool="Bash")
    rendered = render([event], 0)
    assert "\x1b" not in rendered.text and "\r" not in rendered.text
    assert "FAILED tests/test_a.py" in rendered.units[0].head


def test_a_secret_split_by_colour_codes_is_still_redacted() -> None:
    key = "sk-ant-api03-" + "Q" * 40
    raw = f"export ANTHROPIC_API_KEY=\x1b[32m{key}\x1b[0m"
    rendered = render([Event("tool_result", raw, 0, 1)], 0)
    assert key not in rendered.text and "[REDACTED:" in rendered.text


def test_xsky_agent_task_is_a_prompt() -> None:
    lines = [
        {"type": "session", "runId": "r1", "agentId": "a1", "role": "doc", "model": "m"},
        {"type": "message", "message": {"role": "user", "content": "Your task:\nwrite docs"}},
        {
            "type": "message",
            "message": {"role": "user", "content": "Message from your supervisor: x"},
        },
        {"type": "telemetry"},
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    events = adapter_for("xsky").parse(data, 0, state := ParseState(), FileInfo("/t.jsonl"))
    assert [(e.kind, e.origin, e.text) for e in events if e.kind == "user"] == [
        ("user", "prompt", "write docs")
    ]
    assert state.interpreted == {"session": 1, "message": 2} and state.opaque == {"telemetry": 1}


def _follow(store: SkillStore, path: Path, kind: str, traj: str, subagent: bool = False) -> None:
    state = ParseState()
    data = path.read_bytes()
    adapter_for(kind).parse(data, 0, state, FileInfo(str(path), subagent))
    store.add_file(str(path), kind, traj, subagent, len(data), 0, 0, 0, False, 0.0, "")
    store.advance_cursor(str(path), len(data), state.model_dump_json(), f"{traj}-0", {})


def _settings(home: Path, tmp: Path) -> Settings:
    env = {
        "XSKY_SKILLS_HOME": str(home),
        "XSKY_USER_SETTINGS": str(tmp / "user.json"),
        "XSKY_PROJECT_DIR": str(tmp),
        "XSKY_HOME": str(tmp / ".xsky"),
        "TEMPORAL_CONFIG_FILE": str(tmp / "none.toml"),
    }
    return load_settings(env)


async def _no_server(self: Skills) -> None:
    raise ConnectError("no Temporal server in a unit test")


def test_the_store_sums_record_counts_per_source_and_status_shows_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Skills, "_connected", _no_server)
    store = SkillStore(tmp_path)
    try:
        _follow(store, SHIPIT, "claude-code", "traj_cc_shipit_9c8b7a6d")
        _follow(store, V058, "codex", "traj_codex_api_019a8f2e")
        store.add_file("/gone.jsonl", "codex", "traj_codex_x_0", False, 0, 0, 0, 0, False, 0.0, "")
        counts = {(r.kind, r.record, r.how): r.count for r in store.record_counts()}
    finally:
        store.close()
    assert counts[("claude-code", "queue-operation/enqueue", "interpreted")] == 2
    assert counts[("claude-code", "progress", "opaque")] == 1
    assert counts[("codex", "event_msg/user_message", "interpreted")] == 3
    assert counts[("codex", "ghost_snapshot", "opaque")] == 1
    assert not [k for k in counts if k[0] == "codex" and k[1].startswith("queue")]

    status = asyncio.run(Skills(_settings(tmp_path, tmp_path)).status())
    assert "error" in status.schedule
    assert {
        "record": "progress",
        "how": "opaque",
        "count": 1,
        "kind": "claude-code",
        "trajectories": 1,
    } in (status.as_json()["records"])
    with out.capture() as captured:
        skills_status_cmd._print_records(status.records)
    shown = captured.get()
    assert "records read" in shown and "kept opaque" in shown
    row = next(line for line in shown.splitlines() if "queue-operation/enqueue" in line)
    assert "claude-code" in row and "interpreted" in row and " 2 " in row
    row = next(line for line in shown.splitlines() if "ghost_snapshot" in line)
    assert "opaque" in row
    assert asyncio.run(Skills(_settings(tmp_path / "none", tmp_path)).status()).records == []


def test_lines_that_are_no_json_object_are_counted_and_shown_not_dropped_unsaid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transcript's lines that are no JSON object (a gzip'd or UTF-16 file under
    ~/.claude/projects, a line cut off; daaain/claude-code-log's `codex/malformed` fixture)
    were passed over with no word anywhere: `skills status` said "2 files followed … no
    trajectories yet", as for empty files."""
    monkeypatch.setattr(Skills, "_connected", _no_server)
    bad = tmp_path / "aaaaaaaa-0000-4000-8000-000000000001.jsonl"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage\x00\x01\n{synthetic malformed json\n")
    store = SkillStore(tmp_path)
    try:
        _follow(store, bad, "claude-code", "traj_cc_p_aaaaaaaa")
        _follow(store, SHIPIT, "claude-code", "traj_cc_shipit_9c8b7a6d")
        counts = {(r.kind, r.record, r.how): r.count for r in store.record_counts()}
    finally:
        store.close()
    assert counts[("claude-code", "(no JSON object)", "unreadable")] == 2
    status = asyncio.run(Skills(_settings(tmp_path, tmp_path)).status())
    with out.capture() as captured:
        skills_status_cmd._print_records(status.records)
    shown = captured.get()
    assert "2 unreadable" in shown
    row = next(line for line in shown.splitlines() if "(no JSON object)" in line)
    assert "unreadable" in row and " 2 " in row
