"""Adapters on realistic Claude Code, Codex and xsky transcripts: what is intent, what is not,
order, dedupe, pairing, measured skill use, unknown records kept opaque."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from activities.agents.key import AgentKey
from activities.agents.transcripts import write_transcript
from tests.skills_fixtures import CC_MAIN, CODEX_MAIN, FIXTURES
from xsky.plan.models import RoleCapabilityModel, WorkflowAgent
from xsky.runs import AgentInput
from xsky.skills.trajectory import Event
from xsky.skills.transcripts import FileInfo, ParseState, adapter_for


def parse(
    kind: str, rel: str, subagent: bool = False, data: bytes | None = None
) -> tuple[list[Event], ParseState]:
    path = FIXTURES / rel
    state = ParseState()
    raw = path.read_bytes() if data is None else data
    return adapter_for(kind).parse(raw, 0, state, FileInfo(str(path), subagent)), state


def test_claude_code_prompts_are_real_user_intent_and_meta_compaction_and_sidechains_are_not() -> (
    None
):
    events, state = parse("claude-code", CC_MAIN)
    prompts = [e.text for e in events if e.kind == "user" and e.lane == "main"]
    assert prompts[0].startswith("tests/test_cart.py is failing")
    assert any(p.startswith("no, the rounding should use Decimal") for p in prompts)
    assert not any("The following skills are available" in p for p in prompts), (
        "the skill listing is meta"
    )
    assert not any(e.kind == "user" and "This session is being continued" in e.text for e in events)
    assert [e.kind for e in events].count("compaction") == 1
    assert any(e.marker == "compaction" for e in events)
    assert any(e.marker == "interrupted" for e in events)
    side = [e for e in events if e.lane == "sidechain"]
    assert side and all(e.lane == "sidechain" for e in side)
    assert state.model == "claude-sonnet-4-5-20250929" and state.cwd == "/home/dev/shopapp"
    assert {"file-history-snapshot", "agent-telemetry-v9"} <= set(state.opaque)
    assert "queue-operation/enqueue" in state.interpreted and "user" in state.interpreted
    assert not set(state.opaque) & {k.split("/")[0] for k in state.interpreted}


def test_claude_code_order_follows_parent_uuid_and_a_repeated_line_is_dropped() -> None:
    lines = [json.loads(x) for x in (FIXTURES / CC_MAIN).read_text().splitlines()]
    events, _ = parse("claude-code", CC_MAIN)
    uuids = [e.uuid for e in events if e.uuid]
    position = {u: i for i, u in reversed(list(enumerate(uuids)))}
    for rec in lines:
        parent, uuid = rec.get("parentUuid"), rec.get("uuid")
        if parent in position and uuid in position and rec.get("type") in ("user", "assistant"):
            assert position[parent] < position[uuid], f"{uuid} came before its parent {parent}"
    calls = [e.call_id for e in events if e.kind == "tool_call"]
    assert len(calls) == len(set(calls)), "the duplicated tool_use line must be rendered once"


def test_claude_code_skill_use_is_the_skill_tool_call_not_the_listing() -> None:
    events, _ = parse("claude-code", CC_MAIN)
    assert [e.skill for e in events if e.skill] == ["pytest-runner"]
    blog, _ = parse(
        "claude-code", "claude/projects/-home-dev-blog/8d41e0b7-2c9a-4f3e-b6d1-0a9e8c7f6d5e.jsonl"
    )
    assert [e.skill for e in blog if e.skill] == ["pdf-extract"]


def test_claude_code_tool_results_are_paired_with_their_calls_and_errors_marked() -> None:
    events, _ = parse("claude-code", CC_MAIN)
    results = [e for e in events if e.kind == "tool_result"]
    assert all(r.tool for r in results), "every result names the tool that produced it"
    assert any(r.is_error and r.tool == "Bash" for r in results)


def test_a_subagent_file_is_its_own_trajectory_named_after_its_session() -> None:
    rel = "claude/projects/-home-dev-shopapp/3f2a9c1e-5b7d-4e21-9a0c-6d8e1f2a3b4c/subagents/agent-a7c91e02.jsonl"
    adapter = adapter_for("claude-code")
    ident = adapter.identity(
        (FIXTURES / rel).read_bytes(), FileInfo(str(FIXTURES / rel), subagent=True)
    )
    assert ident.short_id == "3f2a9c1e-sub-a7c91e02" and ident.project == "shopapp"
    events, _ = parse("claude-code", rel, subagent=True)
    assert events and all(e.lane == "main" for e in events)


def test_codex_model_cwd_injected_context_pairing_and_skill_reads() -> None:
    events, state = parse("codex", CODEX_MAIN)
    assert state.model == "gpt-5.1-codex" and state.cwd == "/home/dev/learn"
    prompts = [e.text for e in events if e.kind == "user"]
    assert prompts[0].startswith("write a migration")
    assert not any(p.startswith(("<environment_context>", "# AGENTS.md")) for p in prompts)
    results = [e for e in events if e.kind == "tool_result"]
    assert all(r.tool for r in results) and any(r.is_error for r in results)
    assert [e.skill for e in events if e.skill] == ["sql-migrate"]
    assert any(e.kind == "compaction" for e in events)
    assert {e.marker for e in events} >= {"task_start", "task_complete", "aborted", "session_start"}
    assert "world_state" in state.opaque
    ident = adapter_for("codex").identity(
        (FIXTURES / CODEX_MAIN).read_bytes(), FileInfo(str(FIXTURES / CODEX_MAIN))
    )
    assert (ident.project, ident.short_id) == ("learn", "0199a3c2")


def test_a_line_that_is_not_json_is_counted_and_skipped() -> None:
    data = (FIXTURES / CODEX_MAIN).read_bytes().replace(b"\n", b"\n{not json\n", 1)
    events, state = parse("codex", CODEX_MAIN, data=data)
    assert state.unreadable == 1 and events


def test_xsky_transcripts_read_back_with_read_skill_as_measured_use(tmp_path: Path) -> None:
    inp = AgentInput(
        run_id="run-1",
        task_id="T-1",
        agent=WorkflowAgent(id="1", name="doc", task="write the changelog"),
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are doc."},
        {"role": "user", "content": "Your task:\nwrite the changelog"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_skill", "arguments": '{"name": "changelog-style"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "# changelog-style\n..."},
        {"role": "user", "content": "Message from your supervisor: hurry"},
        {"role": "assistant", "content": "Done: CHANGELOG.md updated."},
    ]
    path = write_transcript(
        tmp_path,
        AgentKey.of(inp),
        RoleCapabilityModel(name="doc"),
        "m",
        "key1",
        messages,
        "completed",
    )
    events = adapter_for("xsky").parse(path.read_bytes(), 0, ParseState(), FileInfo(str(path)))
    assert [e.text for e in events if e.kind == "user"] == ["write the changelog"]
    assert [e.skill for e in events if e.skill] == ["changelog-style"]
    assert [e.tool for e in events if e.kind == "tool_result"] == ["read_skill"]
    assert events[-1].marker == "task_complete"


def test_hostile_records_neither_break_parsing_nor_smuggle_text_or_paths() -> None:
    key = "sk-ant-api03-" + "Q" * 40
    lines = [
        {
            "type": "assistant",
            "uuid": "u1",
            "message": {
                "id": "m1",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "/"}}
                ],
            },
        },
        {
            "type": "assistant",
            "uuid": "u2",
            "message": {
                "id": "m2",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t2",
                        "name": "Skill",
                        "input": {"skill": "../../../../home/u/proj"},
                    }
                ],
            },
        },
        {
            "type": "assistant",
            "uuid": "u3",
            "message": {
                "id": "m3",
                "content": [{"type": "tool_use", "id": key, "name": key, "input": {}}],
            },
        },
        {"type": key},
        {
            "type": "user",
            "uuid": "u4",
            "message": {"content": [{"type": "tool_result", "tool_use_id": 7, "content": None}]},
        },
        {"type": "assistant", "uuid": "u5", "message": "not a dict"},
        {"type": "system", "subtype": "turn_duration", "durationMs": "soon"},
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    events = adapter_for("claude-code").parse(data, 0, state := ParseState(), FileInfo("/x.jsonl"))
    assert [e.skill for e in events if e.skill] == [], "neither '/' nor a path is a skill name"
    assert all(key not in (e.tool or "") and key not in (e.call_id or "") for e in events)
    assert key not in json.dumps(state.model_dump())
    xsky_line = (
        json.dumps(
            {"type": "message", "message": {"role": "assistant", "content": "x", "tool_calls": 5}}
        )
        + "\n"
    )
    assert (
        adapter_for("xsky").parse(xsky_line.encode(), 0, ParseState(), FileInfo("/y.jsonl"))[0].kind
        == "assistant"
    )


def test_windows_sessions_are_named_for_their_project_and_their_skill_reads_count() -> None:
    """A session recorded on Windows: its project was the whole path squashed
    (`cusersdevshopapp`), and a `Read` or `Get-Content` of a SKILL.md by a Windows path was not
    the skill's use."""
    from xsky.skills.transcripts import folder_name
    from xsky.skills.transcripts.claude_code import SHELL_READ, SKILL_FILE

    assert folder_name(r"C:\Users\dev\shop-app") == "shop-app"
    assert folder_name(r"\\server\share\billing-api") == "billing-api"
    assert folder_name("/home/dev/shop-app") == "shop-app"
    path = r"C:\Users\dev\.claude\skills\fix-flaky-tests\SKILL.md"
    assert SKILL_FILE.search(path).group(1) == "fix-flaky-tests"  # type: ignore[union-attr]
    escaped = path.replace("\\", "\\\\")  # as it stands in a call's JSON
    assert SKILL_FILE.search(escaped).group(1) == "fix-flaky-tests"  # type: ignore[union-attr]
    for command in (
        r"Get-Content C:\Users\dev\.codex\skills\deploy-billing-api\SKILL.md",
        '{"command": "cat /home/dev/.codex/skills/deploy-billing-api/SKILL.md"}',
        "type C:\\Users\\dev\\.codex\\skills\\deploy-billing-api\\SKILL.md",
    ):
        m = SHELL_READ.search(command)
        assert m is not None and m.group(1) == "deploy-billing-api", command
    # writing one is not reading it
    assert SHELL_READ.search("echo x > skills/deploy-billing-api/SKILL.md") is None


def test_a_line_nested_deeper_than_python_walks_is_unreadable_not_a_stuck_transcript() -> None:
    # One such line made every tick fail the same delta: nothing after it was ever learned.
    ok = {
        "type": "user",
        "uuid": "u1",
        "sessionId": "s1",
        "message": {"role": "user", "content": "fix the flaky test"},
    }
    deep = '{"type":"user","x":' + "[" * 200_000 + "]" * 200_000 + "}"
    later = {**ok, "uuid": "u2", "message": {"role": "user", "content": "now the other one"}}
    data = "\n".join([json.dumps(ok), deep, json.dumps(later)]).encode() + b"\n"
    state = ParseState()
    events = adapter_for("claude-code").parse(data, 0, state, FileInfo("/s.jsonl"))
    assert [e.text for e in events if e.kind == "user"] == [
        "fix the flaky test",
        "now the other one",
    ]
    assert state.unreadable == 1


def test_a_subagent_that_starts_below_its_project_is_named_for_its_sessions_project() -> None:
    # real7: a compaction agent's file of the session in -home-dev-my-shop that started in
    # /home/dev/my-shop/assets was named "assets"; the project folder's name spells my-shop
    # (hyphen and all, which its name alone loses: "-home-dev-my-shop" → "shop").
    rel = "-home-dev-my-shop/3f2a9c1e-5b7d-4e21-9a0c-6d8e1f2a3b4c/subagents/agent-a7c91e02.jsonl"
    head = json.dumps({"cwd": "/home/dev/my-shop/assets", "sessionId": "3f2a9c1e"}).encode() + b"\n"
    adapter = adapter_for("claude-code")
    ident = adapter.identity(head, FileInfo(f"/root/.claude/projects/{rel}", subagent=True))
    assert ident.project == "my-shop"
    elsewhere = json.dumps({"cwd": "/tmp/scratch", "sessionId": "3f2a9c1e"}).encode() + b"\n"
    ident = adapter.identity(elsewhere, FileInfo(f"/root/.claude/projects/{rel}", subagent=True))
    assert ident.project == "scratch"  # a folder its project's name does not spell: its own
