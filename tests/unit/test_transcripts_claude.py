"""Claude Code (2.0.76 and 2.1.7 shapes): every user-role record classified — the person's
prompt, a queued prompt, a correction, an answer, the model's (subagents), or machine input —
and skill use measured on the successful result, plugin namespaces kept."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from xsky.skills.trajectory import Event
from xsky.skills.transcripts import FileInfo, ParseState, adapter_for, skill_name

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
NOTES = FIXTURES / "claude-code-2.0.76/projects/-home-dev-notes"
NOTES_MAIN = NOTES / "6b1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e.jsonl"
NOTES_SUB = NOTES / "6b1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e/subagents/agent-a3c4d5e6.jsonl"
NOTES_COMPACT = NOTES / "6b1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e/subagents/agent-acompact-5f1e2d.jsonl"
SHIPIT = (
    FIXTURES
    / "claude-code-2.1.7/projects/-home-dev-shipit/9c8b7a6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d.jsonl"
)


def parse(path: Path, subagent: bool = False) -> tuple[list[Event], ParseState]:
    state = ParseState()
    events = adapter_for("claude-code").parse(
        path.read_bytes(), 0, state, FileInfo(str(path), subagent)
    )
    return events, state


def users(events: list[Event], lane: str = "main") -> list[tuple[str | None, str]]:
    return [(e.origin, e.text) for e in events if e.kind == "user" and e.lane == lane]


def test_2_0_76_the_persons_turns_each_with_its_origin_and_no_machine_text() -> None:
    events, _ = parse(NOTES_MAIN)
    assert users(events) == [
        ("prompt", "add a `search` command to the notes CLI that greps note titles and bodies"),
        ("queued", "also make the search case-insensitive"),  # delivered at its dequeue, once
        ("answer", "d"),  # the agent offered (p) / (d)
        ("after_interrupt", "no, keep the old flag names — only add the new command"),
        ("prompt", "/review the search command, for edge cases"),  # as the person typed it
        ("prompt", "now add a `--limit N` option to search"),
    ]
    meta = [e.text for e in events if e.kind == "meta"]
    assert any(t.startswith("<task-notification>") for t in meta), "a task notification is meta"
    assert any(t.startswith("Caveat: The messages below") for t in meta)
    assert "command /model" in meta and "command /review" in meta  # wrappers, no args: meta only
    assert any(t.startswith("<local-command-stdout>") for t in meta)
    assert [e.kind for e in events].count("compaction") == 1
    assert any(e.marker == "compaction" for e in events)


def test_2_0_76_an_old_style_sidechain_lane_is_the_models_task_never_the_persons() -> None:
    events, _ = parse(NOTES_MAIN)
    side = users(events, "sidechain")
    assert side == [("model", side[0][1])] and side[0][1].startswith("List every place")


def test_a_queued_prompt_never_dequeued_stays_pending_in_the_state() -> None:
    events, state = parse(NOTES_MAIN)
    assert state.queued == ["and document it in the README"]
    assert not any("document it in the README" in e.text for e in events)
    assert state.interpreted["queue-operation/enqueue"] == 2
    assert state.interpreted["queue-operation/dequeue"] == 1
    assert "queue-operation" not in state.opaque


def test_a_subagent_files_first_prompt_is_model_written() -> None:
    events, _ = parse(NOTES_SUB, subagent=True)
    assert [o for o, _ in users(events)] == ["model"]


def test_a_compaction_agents_file_holds_no_user_turn_at_all() -> None:
    events, _ = parse(NOTES_COMPACT, subagent=True)
    assert events and not [e for e in events if e.kind == "user"]
    # even the copy of the person's prompt it was given to summarise is not a turn here
    assert any(e.kind == "meta" and e.text.startswith("add a `search`") for e in events)


def test_skill_use_is_the_successful_result_and_the_plugin_namespace_stays() -> None:
    events, _ = parse(NOTES_MAIN)
    used = [(e.kind, e.skill) for e in events if e.skill]
    assert used == [("tool_result", "handgemacht:commit")], "deploy-prod failed: no use"
    failed = next(e for e in events if e.kind == "tool_result" and "deploy-prod" in e.text)
    assert failed.is_error and failed.skill is None


def test_skill_md_reads_count_as_use_by_read_and_by_cat_but_not_when_they_fail() -> None:
    events, _ = parse(SHIPIT)
    assert [e.skill for e in events if e.skill] == ["release-notes", "changelog"]
    missing = next(e for e in events if e.kind == "tool_result" and "does not exist" in e.text)
    assert missing.is_error and missing.skill is None


def test_2_1_7_hooks_queue_rejections_and_menu_answers() -> None:
    events, state = parse(SHIPIT)
    assert users(events) == [
        ("prompt", "write release notes for v2.3 from the merged PRs"),  # the hook's text cut off
        (
            "queued",
            "group them by area, not by author",
        ),  # remove, its reminder copy, attachment: once
        ("correction", "put them in CHANGELOG.md instead, newest first"),  # a rejection's feedback
        ("answer", events[[e.tool for e in events].index("AskUserQuestion") + 1].text),
        ("correction", "use the PR titles verbatim, no rewording"),  # after a bare rejection
        ("answer", "go ahead"),  # the agent asked "Shall I also tag the release?"
        ("prompt", "push the tag to origin and open the GitHub release page"),  # popAll: not queued
    ]
    meta = [e.text for e in events if e.kind == "meta"]
    assert "hook_success: loaded 3 project rules" in meta
    assert any("<user-prompt-submit-hook>" in t for t in meta)
    assert state.queued == [] and state.interpreted["attachment/hook_success"] == 1
    assert {"progress", "file-history-snapshot"} <= set(state.opaque)


def test_skill_names_keep_their_namespace_and_refuse_anything_else() -> None:
    assert skill_name("handgemacht:commit") == "handgemacht:commit"
    assert skill_name("/commit the staged files") == "commit"
    assert skill_name("pdf-extract") == "pdf-extract"
    for bad in ("a:b:c", "../x", "Handgemacht:Commit", ":commit", "commit:", "/"):
        assert skill_name(bad) is None, bad


def test_a_prompt_after_a_tool_call_interrupted_mid_run_is_marked_after_interrupt() -> None:
    lines = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "deploy to staging"}},
        {
            "type": "assistant",
            "uuid": "u2",
            "parentUuid": "u1",
            "message": {
                "id": "m1",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Bash",
                        "input": {"command": "make deploy"},
                    }
                ],
            },
        },
        {
            "type": "user",
            "uuid": "u3",
            "parentUuid": "u2",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": "[Request interrupted by user for tool use]",
                        "is_error": True,
                    }
                ],
            },
        },
        {
            "type": "user",
            "uuid": "u4",
            "parentUuid": "u3",
            "message": {"role": "user", "content": "use the canary target"},
        },
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    events = adapter_for("claude-code").parse(data, 0, ParseState(), FileInfo("/s.jsonl"))
    assert users(events) == [
        ("prompt", "deploy to staging"),
        ("after_interrupt", "use the canary target"),
    ]


def test_any_named_internal_agent_is_machine_input_and_a_numbered_one_the_models(
    tmp_path: Path,
) -> None:
    line = json.dumps(
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "fix it"}}
    )
    kinds = {}
    for name in (
        "agent-aprompt_suggestion-9f8e7d.jsonl",
        "agent-acafe12.jsonl",
        "agent-a1b2c3d.jsonl",
    ):
        path = tmp_path / "s" / "subagents" / name
        events = adapter_for("claude-code").parse(
            (line + "\n").encode(), 0, ParseState(), FileInfo(str(path), True)
        )
        kinds[name] = [(e.kind, e.origin) for e in events]
    assert kinds == {
        "agent-aprompt_suggestion-9f8e7d.jsonl": [("meta", None)],
        "agent-acafe12.jsonl": [("user", "model")],
        "agent-a1b2c3d.jsonl": [("user", "model")],
    }


def test_a_short_new_ask_after_anything_else_is_a_prompt_and_a_pick_is_an_answer() -> None:
    def turns(question: str, reply: str) -> list[tuple[str | None, str]]:
        lines = [
            {
                "type": "assistant",
                "uuid": "a1",
                "message": {"id": "m", "content": [{"type": "text", "text": question}]},
            },
            {
                "type": "user",
                "uuid": "u1",
                "parentUuid": "a1",
                "message": {"role": "user", "content": reply},
            },
        ]
        data = "".join(json.dumps(x) + "\n" for x in lines).encode()
        return users(adapter_for("claude-code").parse(data, 0, ParseState(), FileInfo("/s.jsonl")))

    assert turns("Done. Anything else?", "run the tests") == [("prompt", "run the tests")]
    assert turns("Postgres or SQLite for the cache?", "sqlite") == [("answer", "sqlite")]
    assert turns("Want me to open a PR?", "yes please") == [("answer", "yes please")]
    assert turns("Done: the tests pass.", "go ahead") == [("prompt", "go ahead")]  # nothing asked
    assert turns("Done: the tests pass.", "2") == [("answer", "2")]  # a menu choice, always


def test_a_queued_slash_command_is_the_persons_prompt_as_typed_and_its_wrapper_is_not() -> None:
    session = "s1"
    lines = [
        {
            "type": "queue-operation",
            "operation": "enqueue",
            "content": "/review the parser",
            "sessionId": session,
        },
        {"type": "queue-operation", "operation": "dequeue", "sessionId": session},
        {
            "type": "user",
            "uuid": "u1",
            "message": {
                "role": "user",
                "content": "<command-name>/review</command-name>\n<command-message>review</command-message>\n"
                "<command-args>the parser</command-args>",
            },
        },
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    events = adapter_for("claude-code").parse(data, 0, ParseState(), FileInfo("/s.jsonl"))
    assert users(events) == [("prompt", "/review the parser")]
    assert [e.text for e in events if e.kind == "meta"] == [
        "queued command /review",
        "command /review",
    ]


def test_a_command_that_asks_for_work_is_a_task_of_its_own_and_a_setting_is_none() -> None:
    from xsky.skills.transcripts.claude_text import classify

    def typed(name: str, args: str = "") -> str:
        return (
            f"<command-message>{name} is running…</command-message>\n"
            f"<command-name>/{name}</command-name>\n<command-args>{args}</command-args>"
        )

    # a bare command is a task (it produced no prompt at all before)
    assert classify(typed("commit")) == [("meta", "command /commit"), ("user", "/commit")]
    # its argument is not an answer "42" to a menu
    assert classify(typed("review-pr", "42"))[1] == ("user", "/review-pr 42")
    # Claude Code's settings: no one's task ("/model opus" is not a prompt "opus")
    assert classify(typed("model", "opus")) == [("meta", "command /model")]
    assert classify(typed("compact", "keep the API notes")) == [("meta", "command /compact")]
    # after a task, a command starts the next one, however short
    from xsky.skills.followups import SLASH_COMMAND
    from xsky.skills.followups import classify as follow

    assert follow("/fix-issue 123", "prompt", ["fix", "issue"], True, False) == "new"
    assert not SLASH_COMMAND.match("/tmp/x.log shows the error")  # a path is not a command


def test_an_unknown_hyphenated_wrapper_is_machine_input_but_a_pasted_tag_in_prose_is_not() -> None:
    from xsky.skills.transcripts.claude_text import classify

    assert classify("<bash-notification>\n<id>7</id>\n</bash-notification>") == [
        ("meta", "<bash-notification>\n<id>7</id>\n</bash-notification>")
    ]
    prose = "why does <my-widget> render twice?"
    assert classify(prose) == [("user", prose)]
    pasted = "<my-button>Save</my-button>\nwhy is this button not styled?"
    assert classify(pasted) == [("user", pasted)]


T1 = datetime(2026, 11, 2, 1, 0, tzinfo=UTC)


def slash_session() -> list[dict[str, Any]]:
    """A Claude Code 2.1 session where the person typed ``/deploy-helm billing to staging``:
    the command's wrapper, then Claude Code loading the skill (isMeta, no Skill call)."""
    from tests.integration.test_canary_export import NAME, cc_session

    lines = cc_session("billing", T1)
    call = next(i for i, x in enumerate(lines) if "Skill" in json.dumps(x.get("message", {})))
    loaded = {k: v for k, v in lines[call + 2].items() if k != "sourceToolUseID"}
    lines[0]["message"]["content"] = (
        f"<command-message>{NAME}</command-message>\n<command-name>/{NAME}</command-name>\n"
        "<command-args>billing to staging</command-args>"
    )
    return [lines[0], loaded, *lines[call + 3 :]]


def _events_of(lines: list[dict[str, Any]], tmp_path: Path) -> list[Event]:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    events, _ = parse(path)
    return events


def test_a_skill_typed_as_a_slash_command_is_used_when_claude_code_loads_it(tmp_path: Path) -> None:
    from tests.integration.test_canary_export import NAME, cc_session

    events = _events_of(slash_session(), tmp_path)
    assert [(e.kind, e.skill) for e in events if e.skill] == [("meta", NAME)]
    assert users(events) == [("prompt", f"/{NAME} billing to staging")]  # as typed
    # loaded for a Skill call (sourceToolUseID): counted once, on the call's result
    called = _events_of(cc_session("billing", T1), tmp_path)
    assert [(e.kind, e.skill) for e in called if e.skill] == [("tool_result", NAME)]
    # a "Base directory" message with no slash command before it answers a Skill call (as
    # 2.0.x writes it, without sourceToolUseID): not a second use
    bare = slash_session()
    bare[0]["message"]["content"] = "deploy billing to staging"
    assert [e.skill for e in _events_of(bare, tmp_path) if e.skill] == []


def test_a_turn_that_ended_on_an_api_error_is_not_a_completed_task(tmp_path: Path) -> None:
    """Claude Code writes an assistant record with isApiErrorMessage when the model's API
    failed ("API Error: 500 …"): it was read as the agent's answer, the task scored completed."""
    import json

    from xsky.skills.atom_finish import heuristic_ux

    records = [
        {
            "type": "user",
            "uuid": "u1",
            "message": {"role": "user", "content": "upgrade react to 19 and fix the type errors"},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "isApiErrorMessage": True,
            "message": {
                "role": "assistant",
                "model": "<synthetic>",
                "content": [{"type": "text", "text": "API Error: 500 Internal server error"}],
            },
        },
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    events, _ = parse(path)
    assert [(e.kind, e.tool, e.is_error) for e in events][-1] == ("tool_result", "model API", True)
    assert not any(e.kind == "assistant" for e in events)
    assert heuristic_ux({"api_errors": 1}) < heuristic_ux({})


def test_an_edited_first_prompt_a_new_root_after_the_lane_began_is_a_branch() -> None:
    def rec(uuid: str, parent: str | None, role: str, text: str) -> dict[str, Any]:
        return {
            "type": role,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": "s1",
            "message": {
                "role": role,
                "content": text if role == "user" else [{"type": "text", "text": text}],
            },
        }

    lines = [
        rec("u1", None, "user", "fix the rounding"),
        rec("a1", "u1", "assistant", "Done."),
        rec("u2", None, "user", "fix the rounding, in one helper"),  # the prompt, edited
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    events = adapter_for("claude-code").parse(data, 0, ParseState(), FileInfo("/s.jsonl"))
    kinds = [(e.kind, e.marker) for e in events]
    assert kinds.index(("marker", "branch")) == len(kinds) - 2  # just before the edited prompt
    assert users(events)[-1] == ("prompt", "fix the rounding, in one helper")


def test_parallel_tool_calls_are_no_branch_though_each_result_points_at_its_own_call() -> None:
    """Claude Code writes N parallel tool_use blocks as N assistant records, and each result's
    parent is its own call's record: read as rewinds, a good task scored 2 (a review found it)."""

    def rec(kind: str, uuid: str, parent: str | None, content: Any) -> dict[str, Any]:
        return {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": "s1",
            "message": {"role": kind, "content": content},
        }

    lines = [
        rec("user", "u0", None, "read a.py and b.py and tell me which defines main"),
        rec(
            "assistant",
            "a1",
            "u0",
            [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.py"}}],
        ),
        rec(
            "assistant",
            "a2",
            "a1",
            [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "b.py"}}],
        ),
        rec(
            "user",
            "r1",
            "a1",
            [{"type": "tool_result", "tool_use_id": "t1", "content": "def main(): pass"}],
        ),
        rec("user", "r2", "a2", [{"type": "tool_result", "tool_use_id": "t2", "content": "x = 1"}]),
        rec("assistant", "a3", "r2", [{"type": "text", "text": "a.py defines main."}]),
        rec("user", "u1", "a3", "thanks, now add a docstring to main"),
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    events = adapter_for("claude-code").parse(data, 0, ParseState(), FileInfo("/s.jsonl"))
    assert [e for e in events if e.marker == "branch"] == []


def test_an_edited_first_prompt_is_said_as_a_new_start_not_as_message_none(tmp_path: Path) -> None:
    """A person's prompt with no parent after the lane began (an edited first prompt, or a
    record written without parentUuid, as in daaain/claude-code-log's and
    simonw/claude-code-transcripts' fixtures) read "continues from earlier message None"."""
    head = {"isSidechain": False, "userType": "external", "cwd": "/p", "sessionId": "s"}
    lines = [
        {
            **head,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"role": "user", "content": "write the parser"},
        },
        {
            **head,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
            },
        },
        {
            **head,
            "type": "user",
            "uuid": "u2",
            "parentUuid": None,
            "message": {"role": "user", "content": "write the parser, in Rust"},
        },
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    events, _ = parse(path)
    (marker,) = [e for e in events if e.kind == "marker"]
    assert marker.marker == "branch" and "None" not in marker.text
    assert marker.text == "starts over from the beginning (an edited first prompt)"


def test_records_that_name_no_parent_at_all_follow_file_order_with_no_rewind(
    tmp_path: Path,
) -> None:
    """simonw/claude-code-transcripts' `tests/sample_session.jsonl` writes no `parentUuid` key:
    every prompt after the first was read as a new root, a rewind, and the work before it
    scored as undone (ux 2: "The person rewound the conversation past this work")."""
    head = {"cwd": "/project", "sessionId": "test-session-id"}
    lines = [
        {
            **head,
            "type": "user",
            "uuid": "msg-001",
            "message": {"role": "user", "content": "Create a hello world function"},
        },
        {
            **head,
            "type": "assistant",
            "uuid": "msg-002",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        },
        {
            **head,
            "type": "user",
            "uuid": "msg-006",
            "message": {"role": "user", "content": "Now add a goodbye function"},
        },
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    events, _ = parse(path)
    assert [e for e in events if e.kind == "marker"] == []
    assert users(events) == [
        ("prompt", "Create a hello world function"),
        ("prompt", "Now add a goodbye function"),
    ]


def test_a_tool_result_marked_with_a_non_human_origin_still_answers_its_call() -> None:
    """Later 2.1 versions mark a tool's result ``"origin": {"kind": "cli"}`` (the shape in
    jazzyalex/agent-sessions' stage0 Claude fixture, version 2.1.220): the result is read and
    paired with its call (a failed one counts as an error), not dropped as a sender's text."""
    base = {"isSidechain": False, "userType": "external", "cwd": "/tmp", "sessionId": "s1"}
    recs = [
        {
            **base,
            "type": "user",
            "parentUuid": None,
            "uuid": "u1",
            "origin": {"kind": "human"},
            "message": {"role": "user", "content": "list the files"},
        },
        {
            **base,
            "type": "assistant",
            "parentUuid": "u1",
            "uuid": "a1",
            "requestId": "r1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Bash",
                        "input": {"command": "ls /x"},
                    }
                ],
            },
        },
        {
            **base,
            "type": "user",
            "parentUuid": "a1",
            "uuid": "u2",
            "origin": {"kind": "cli"},
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "is_error": True,
                        "content": [{"type": "text", "text": "ls: cannot access '/x'"}],
                    }
                ],
            },
        },
        {
            **base,
            "type": "user",
            "parentUuid": "u2",
            "uuid": "u3",
            "origin": {"kind": "peer"},
            "message": {"role": "user", "content": "a teammate's note"},
        },
    ]
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()
    state = ParseState()
    events = adapter_for("claude-code").parse(data, 0, state, FileInfo("/p/-tmp/s1.jsonl", False))
    results = [e for e in events if e.kind == "tool_result"]
    assert [(e.call_id, e.tool, e.is_error) for e in results] == [("toolu_1", "Bash", True)]
    assert "cannot access" in results[0].text
    assert state.calls == {}
    assert users(events) == [("prompt", "list the files")]
    assert [e.text for e in events if e.kind == "meta"] == ["peer: a teammate's note"]


def test_a_2_0_subagent_file_beside_the_sessions_counts_as_its_parents_session(
    tmp_path: Path,
) -> None:
    """Claude Code 2.0.x wrote a subagent's transcript beside the sessions,
    ``<project>/agent-<id>.jsonl``, its records carrying the parent's ``sessionId`` and its own
    ``agentId`` (2.1 moved it to ``<session>/subagents/``): its atoms are of the parent's
    session — evidence counts one session, not one per subagent — and its trajectory is named
    as a subagent's, not after the parent's session."""
    import asyncio

    from activities.skills.render import render_delta
    from activities.skills.scan import commit_delta, read_atoms, scan
    from activities.skills.store import SkillStore
    from activities.skills.task_agent import split_delta
    from xsky.skills.runs import ScanInput
    from xsky.skills.sources import Source

    sid = "550e8400-e29b-41d4-a716-446655440000"
    base = {
        "userType": "external",
        "cwd": "/Users/test/proj",
        "sessionId": sid,
        "version": "2.0.70",
    }

    def said(uuid: str, parent: str | None, side: bool, role: str, content: Any) -> dict:
        rec = {**base, "uuid": uuid, "parentUuid": parent, "isSidechain": side, "type": role}
        if side:
            rec["agentId"] = "a123456"
        msg: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant":
            msg["id"], rec["requestId"] = f"msg-{uuid}", f"req-{uuid}"
        return {**rec, "timestamp": f"2025-12-16T19:53:0{uuid[-1]}.000Z", "message": msg}

    project = tmp_path / "projects" / "-Users-test-proj"
    project.mkdir(parents=True)
    main = [
        said("m1", None, False, "user", "find the retry delay and fix the off-by-one"),
        said("m2", "m1", False, "assistant", [{"type": "text", "text": "Fixed it."}]),
    ]
    agent = [
        said("s1", None, True, "user", "Search the repo for the retry delay computation"),
        said("s2", "s1", True, "assistant", [{"type": "text", "text": "net/retry.py:42"}]),
    ]
    for name, recs in ((f"{sid}.jsonl", main), ("agent-a123456.jsonl", agent)):
        (project / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
    home = tmp_path / "home"
    for d in scan(home, [Source("claude-code", tmp_path / "projects", "t")], ScanInput()).deltas:
        render_delta(home, d)
        asyncio.run(split_delta(home, d, None, lambda note: None))
        assert commit_delta(home, d).committed
    store = SkillStore(home)
    try:
        atoms = {t.traj_id: read_atoms(home, t.traj_id) for t in store.trajs()}
    finally:
        store.close()
    by_origin = {
        a.provenance.origin: (tid, a.provenance.session) for tid, got in atoms.items() for a in got
    }
    assert by_origin["person"] == ("traj_cc_proj_550e8400", sid)
    assert by_origin["model"] == ("traj_cc_proj_550e8400-sub-a123456-side", sid)


def test_an_answer_attributed_to_a_skill_is_a_measured_use_of_it() -> None:
    """Claude Code 2.1.x labels each answer written under a skill ``attributionSkill`` (a
    plugin's keeps its namespace), also in a subagent's file whose Skill call is in its
    parent's: that is a use, measured from the record; an answer without one uses none."""
    base = {"isSidechain": True, "userType": "external", "cwd": "/w", "sessionId": "s1"}
    recs = [
        {
            **base,
            "type": "user",
            "parentUuid": None,
            "uuid": "u1",
            "message": {"role": "user", "content": "bootstrap the workspace"},
        },
        {
            **base,
            "type": "assistant",
            "parentUuid": "u1",
            "uuid": "a1",
            "requestId": "r1",
            "attributionSkill": "gns-cowork:gns-bootstrap",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Bootstrapping."},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                ],
            },
        },
        {
            **base,
            "type": "assistant",
            "parentUuid": "a1",
            "uuid": "a2",
            "requestId": "r2",
            "message": {
                "id": "m2",
                "role": "assistant",
                "content": [{"type": "text", "text": "Done."}],
            },
        },
    ]
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()
    path = "/p/-w/s1/subagents/agent-a1.jsonl"
    events = adapter_for("claude-code").parse(data, 0, ParseState(), FileInfo(path, True))
    assert [(e.kind, e.skill) for e in events if e.kind != "user"] == [
        ("assistant", "gns-cowork:gns-bootstrap"),
        ("tool_call", None),
        ("assistant", None),
    ]


def test_a_queued_notification_handed_over_as_a_user_message_leaves_the_queue() -> None:
    """Claude Code 2.1.39 (handgemacht-ai/spotter's fixture 258c7280…jsonl, lines 279-603): a
    background task's notification is queued, the person interrupts, and the notification is
    sent as a plain user message with no queue operation of its own; the person then queues
    "check again" and, later (a second notification queued before it), a new request, each
    taken by a ``remove`` without content — a remove absorbs the person's prompt mid-turn, and
    the second notification waits for the turn's end. The first notification stayed on xsky's
    queue and each remove took the head: "check again" arrived one remove late and the new
    request was never delivered (left pending for ever)."""
    notification = (
        "<task-notification>\n<task-id>b0be39e</task-id>\n"
        "<output-file>/tmp/claude-1000/x/tasks/b0be39e.output</output-file>\n"
        "<status>completed</status>\n<summary>Background command completed (exit code 0)</summary>\n"
        "</task-notification>\nRead the output file to retrieve the result: /tmp/claude-1000/x"
    )

    def user(uid: str, parent: str, content: Any, at: str) -> dict[str, Any]:
        message = {"role": "user", "content": content}
        return {
            "type": "user",
            "uuid": uid,
            "parentUuid": parent,
            "timestamp": at,
            "message": message,
        }

    def call(uid: str, parent: str, tool: str, at: str) -> dict[str, Any]:
        block = {"type": "tool_use", "id": f"t-{uid}", "name": "Bash", "input": {"command": tool}}
        message = {"id": f"m-{uid}", "role": "assistant", "content": [block]}
        return {
            "type": "assistant",
            "uuid": uid,
            "parentUuid": parent,
            "timestamp": at,
            "message": message,
        }

    def result(uid: str, call_id: str, at: str) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": f"t-{call_id}", "content": "ok"}
        return user(uid, call_id, [block], at)

    def queue(op: str, at: str, content: str | None = None) -> dict[str, Any]:
        rec = {"type": "queue-operation", "operation": op, "timestamp": at}
        return rec | ({"content": content} if content is not None else {})

    lines = [
        user("u1", "", "Implement the annotations epic", "2026-02-11T20:36:45Z"),
        queue("enqueue", "2026-02-11T20:40:51Z", notification),
        user(
            "i1",
            "u1",
            [{"type": "text", "text": "[Request interrupted by user]"}],
            "2026-02-11T20:51:08Z",
        ),
        user("n1", "i1", notification, "2026-02-11T20:51:10Z"),
        queue("enqueue", "2026-02-11T20:51:12Z", "check again"),
        call("a3", "n1", "tail -20 out", "2026-02-11T20:51:15Z"),
        queue("remove", "2026-02-11T20:51:19Z"),
        result("r3", "a3", "2026-02-11T20:51:19.5Z"),
        queue("enqueue", "2026-02-11T20:52:00Z", notification.replace("b0be39e", "bd0afab")),
        queue("enqueue", "2026-02-11T20:54:57Z", "new beads for the epic were added. tackle them"),
        call("a4", "r3", "git commit -am wip", "2026-02-11T20:56:10Z"),
        queue("remove", "2026-02-11T20:56:15Z"),
        result("r4", "a4", "2026-02-11T20:56:15.5Z"),
        # the second notification waited for the turn's end, handed over as a user message
        user("n2", "r4", notification.replace("b0be39e", "bd0afab"), "2026-02-11T21:36:41Z"),
    ]
    lines[0]["parentUuid"] = None
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    state = ParseState()
    events = adapter_for("claude-code").parse(data, 0, state, FileInfo("/s.jsonl"))
    assert [(e.origin, e.text, e.timestamp) for e in events if e.kind == "user"] == [
        ("prompt", "Implement the annotations epic", "2026-02-11T20:36:45Z"),
        ("queued", "check again", "2026-02-11T20:51:19Z"),
        ("queued", "new beads for the epic were added. tackle them", "2026-02-11T20:56:15Z"),
    ]
    assert state.queued == []
    # (Claude Code marks the notification's sender in later 2.1 versions: the same holds)
    lines[3]["origin"] = lines[-1]["origin"] = {"kind": "task-notification"}
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    again = adapter_for("claude-code").parse(data, 0, ParseState(), FileInfo("/s.jsonl"))
    assert [e.text for e in again if e.kind == "user"] == [
        e.text for e in events if e.kind == "user"
    ]


def test_another_sessions_message_and_an_agents_hand_back_are_no_prompt_of_the_persons() -> None:
    """Claude Code's cross-session messages (2.1.x: a peer session's SendMessage) and background
    agents' hand-backs reach a session as user turns wrapped in tags that carry attributes —
    ``<cross-session-message from="…" name="…">``, ``<agent-message from="…">`` — under the
    preamble "Another Claude session sent a message:" or after a ``<system-reminder>``, and
    not always with an ``origin`` naming the sender (the shapes an open-source transcript
    parser's field survey records: claude_session_restore, transcript/events/incoming.rs).
    They were read as the person's prompts (a wrapper's tag with attributes was not one)."""
    texts = [
        "fix the flaky upload test",
        "<system-reminder>\nThe separate session for background task task_00000001 "
        '("Example background task") has ended.\n</system-reminder>\n\n'
        '<cross-session-message from="local_00000000-0000-0000-0000-000000000000" '
        'name="Neighbour session">\nplaceholder answer\n</cross-session-message>',
        "Another Claude session sent a message:\n"
        '<cross-session-message from="uds:/tmp/cc-socks/41217.sock" from-name="peer-a" '
        'from-mode="prompting">\nplease rebase onto main\n</cross-session-message>\n',
        '<agent-message from="a1b2c3d4e5f607182">\n[Subagent hand-back] placeholder report\n'
        "</agent-message>",
        "<system-reminder>\nThe user started your suggested background task task_00000001 "
        '("Example") in a separate local session.\n</system-reminder>\n\nis it done? all checked?',
    ]
    lines = [
        {"type": "user", "uuid": f"u{i}", "message": {"role": "user", "content": text}}
        for i, text in enumerate(texts)
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    state = ParseState()
    events = adapter_for("claude-code").parse(data, 0, state, FileInfo("/s.jsonl"))
    assert [text for _, text in users(events)] == [
        "fix the flaky upload test",
        "is it done? all checked?",
    ]
    assert state.interpreted["not-intent/peer-message"] == 1
    assert state.interpreted["not-intent/agent-handback"] == 1


def test_a_cancelled_tool_use_and_a_rejected_plan_are_the_persons_no() -> None:
    """Claude Code has more refusals than REJECT_MESSAGE ("The user doesn't want to proceed
    with this tool use…"): the person cancelling at the permission prompt gets CANCEL_MESSAGE,
    "The user doesn't want to take this action right now. STOP what you are doing and wait for
    the user to tell you how to proceed.", and a plan refused at ExitPlanMode gets
    PLAN_REJECTION_PREFIX, "The agent proposed a plan that was rejected by the user. …"
    (Claude Code's src/utils/messages.ts, as public ports quote it). Neither was read as a
    refusal: the person's next words were an ordinary prompt, free to start a new task."""
    refusals = [
        "The user doesn't want to take this action right now. STOP what you are doing and wait "
        "for the user to tell you how to proceed.",
        "The agent proposed a plan that was rejected by the user. The user chose to stay in plan "
        "mode rather than proceed with implementation.\n\nRejected plan:\n# Plan\n1. add a queue",
        # the reason after the prefix, however it is spaced
        "The user doesn't want to proceed with this tool use. The tool use was rejected. To tell "
        "you how to proceed, the user said: keep the branch",
    ]
    for refusal in refusals:
        lines: list[dict[str, Any]] = [
            {
                "type": "user",
                "uuid": "u1",
                "message": {"role": "user", "content": "plan the uploader"},
            },
            {
                "type": "assistant",
                "uuid": "a1",
                "parentUuid": "u1",
                "message": {
                    "id": "m1",
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "t1", "name": "ExitPlanMode", "input": {}}
                    ],
                },
            },
            {
                "type": "user",
                "uuid": "r1",
                "parentUuid": "a1",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": refusal,
                            "is_error": True,
                        }
                    ],
                },
            },
            {
                "type": "user",
                "uuid": "u2",
                "parentUuid": "r1",
                "message": {
                    "role": "user",
                    "content": "write the migration for the retry table first",
                },
            },
        ]
        data = "".join(json.dumps(x) + "\n" for x in lines).encode()
        events = adapter_for("claude-code").parse(data, 0, ParseState(), FileInfo("/s.jsonl"))
        said = users(events)
        if refusal.endswith("keep the branch"):
            assert said[1:] == [("correction", "keep the branch"), ("prompt", said[2][1])], said
        else:
            assert said[1] == ("correction", "write the migration for the retry table first"), said


def test_api_retry_notices_with_no_answer_after_them_are_a_failed_turn(tmp_path: Path) -> None:
    """Claude Code 2.1.x writes a ``system``/``api_error`` record each time it retries the
    model's API. A real 2.1.76 session (diiviikk5/Xeus@42754914, claude-session.jsonl) is
    "hello" and then eight of them (status 500, "your current token plan not support model"):
    no answer ever came, and the task scored 9. A retry that is answered is no failure."""
    from xsky.skills.atom_finish import DeltaView, finish
    from xsky.skills.drafts import group_offline
    from xsky.skills.trajectory import render

    def notice(n: int, parent: str) -> dict[str, Any]:
        # the record's shape, trimmed (headers and ids left out)
        return {
            "parentUuid": parent,
            "isSidechain": False,
            "type": "system",
            "subtype": "api_error",
            "level": "error",
            "error": {
                "status": 500,
                "error": {"type": "error", "error": {"type": "api_error", "message": "plan"}},
            },
            "retryInMs": 38084.8,
            "retryAttempt": n,
            "maxRetries": 10,
            "uuid": f"r{n}",
            "sessionId": "s1",
            "version": "2.1.76",
        }

    hello = {
        "type": "user",
        "uuid": "u1",
        "sessionId": "s1",
        "message": {"role": "user", "content": "hello"},
    }
    answer = {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "r3",
        "sessionId": "s1",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "Hi! How can I help?"}],
        },
    }

    def atom(lines: list[dict[str, Any]]) -> Any:
        rendered = render(_events_of(lines, tmp_path), 0)
        view = DeltaView("t", "/s.jsonl", rendered.text, 0, 0, 1)
        (made,) = finish(group_offline(rendered.units, None), view, 1, "offline")
        return made

    failed = atom([hello, notice(1, "u1"), notice(2, "r1"), notice(3, "r2")])
    assert failed.provenance.ux_signals.get("api_errors") == 1
    assert failed.ux_score <= 7 and failed.provenance.ended == "open"
    answered = atom([hello, notice(1, "u1"), notice(2, "r1"), notice(3, "r2"), answer])
    assert "api_errors" not in answered.provenance.ux_signals
    assert answered.ux_score == atom([hello, {**answer, "parentUuid": "u1"}]).ux_score


def test_a_task_the_models_api_never_answered_is_not_done(tmp_path: Path) -> None:
    """Real sessions whose every turn met an API failure: ahmadou5/token-app@016eef4a
    (claude-session.jsonl, Claude Code 2.0.31: the request asked twice, each answered only by
    the stand-in "Credit balance is too low") scored 4, and peridotvault/app-peridotvault-web
    @ca01efa9 (2.1.81, one request in Indonesian, the same stand-in) scored 7 — as if done with
    a detour (real12). The agent never answered nor acted: not done. Records trimmed (usage,
    ids and the cwd left out)."""


def test_a_retry_notice_written_after_the_answer_it_got_is_no_failure(tmp_path: Path) -> None:
    """A real Claude Code 2.1.121 session (samar-58/scout@9a5eb814, claude-session.jsonl): a
    401 retry notice stamped 07:01:03, its parent an attachment of the turn, is written after
    the turn's answer (07:01:59) — the retry was answered at 07:01:09. Read in file order it
    was the turn's last word: a task done and answered scored 7, 'open', 'the model API
    failed' (real12). Records trimmed (headers, ids and the cwd left out)."""
    from xsky.skills.atom_finish import DeltaView, finish
    from xsky.skills.drafts import group_offline
    from xsky.skills.trajectory import render

    ask = "help me apply for the agentic engineering grant by Superteam"

    def prompt(uuid: str, parent: str | None, text: str = ask) -> dict[str, Any]:
        return {
            "parentUuid": parent,
            "type": "user",
            "uuid": uuid,
            "sessionId": "s1",
            "version": "2.0.31",
            "message": {"role": "user", "content": text},
        }

    def stand_in(uuid: str, parent: str) -> dict[str, Any]:
        return {
            "parentUuid": parent,
            "type": "assistant",
            "uuid": uuid,
            "sessionId": "s1",
            "isApiErrorMessage": True,
            "error": "billing_error",
            "message": {
                "model": "<synthetic>",
                "role": "assistant",
                "type": "message",
                "content": [{"type": "text", "text": "Credit balance is too low"}],
            },
        }

    def atoms(lines: list[dict[str, Any]]) -> list[Any]:
        rendered = render(_events_of(lines, tmp_path), 0)
        view = DeltaView("t", "/s.jsonl", rendered.text, 0, 0, 1)
        return finish(group_offline(rendered.units, None), view, 1, "offline")

    (twice,) = atoms(
        [prompt("u1", None), stand_in("a1", "u1"), prompt("u2", "a1"), stand_in("a2", "u2")]
    )
    assert twice.provenance.ux_signals.get("never_answered") == 1
    assert twice.ux_score == 2
    indonesian = "bisakah kamu bantu buatkan test untuk mengecek semua get function di registry?"
    (once,) = atoms([prompt("u1", None, indonesian), stand_in("a1", "u1")])
    assert once.ux_score == 2
    # an agent that answered (or acted) before the API failed did something: a detour
    answer = {
        "parentUuid": "u1",
        "type": "assistant",
        "uuid": "a0",
        "sessionId": "s1",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "The grant form is here."}],
        },
    }
    (partial,) = atoms(
        [prompt("u1", None), answer, prompt("u2", "a0", "go on"), stand_in("a2", "u2")]
    )
    assert "never_answered" not in partial.provenance.ux_signals
    assert partial.ux_score == 7

    def at(second: int) -> str:
        return f"2026-05-05T07:0{second // 60}:{second % 60:02d}.000Z"

    prompt = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "timestamp": at(50),
        "sessionId": "s1",
        "message": {"role": "user", "content": "fix this ui in the video consultation"},
    }
    answer = {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "timestamp": at(119),
        "sessionId": "s1",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "No type errors in the changed files."}],
        },
    }
    notice = {
        "parentUuid": "u1",
        "type": "system",
        "subtype": "api_error",
        "level": "error",
        "error": {"status": 401, "type": "authentication_error"},
        "retryInMs": 567.0,
        "retryAttempt": 1,
        "maxRetries": 10,
        "timestamp": at(63),
        "uuid": "r1",
        "sessionId": "s1",
        "version": "2.1.121",
    }
    hook = {
        "parentUuid": "r1",
        "type": "system",
        "subtype": "stop_hook_summary",
        "timestamp": at(119),
        "uuid": "h1",
        "sessionId": "s1",
    }

    def atom(lines: list[dict[str, Any]]) -> Any:
        rendered = render(_events_of(lines, tmp_path), 0)
        view = DeltaView("t", "/s.jsonl", rendered.text, 0, 0, 1)
        (made,) = finish(group_offline(rendered.units, None), view, 1, "offline")
        return made

    late = atom([prompt, answer, notice, hook])
    assert "api_errors" not in late.provenance.ux_signals
    assert late.provenance.ended == "completed"
    assert late.ux_score == atom([prompt, answer]).ux_score
    # a notice in its time with nothing after it is still the turn's failure
    failed = atom([prompt, notice])
    assert failed.provenance.ux_signals.get("api_errors") == 1


def test_claude_codes_own_no_response_requested_is_no_answer(tmp_path: Path) -> None:
    """Claude Code writes an assistant record of its own (model "<synthetic>", no tokens) when a
    session is resumed after a local command: "No response requested." (a real 2.1.92 session
    resumed by 2.1.100 after /exit, Reinhartsamuel/TokenForge claude-session.jsonl @ 43fe06dd;
    also on each resume after an isMeta "Continue from where you left off.", yashpunmiya/Solsmile
    2.1.79). It was read as the agent's answer: the task's summary ended with it, an agent that
    had only asked a question scored 9 (not 2), and a turn its API never answered scored 7 (not
    2). Records trimmed (ids, usage and the cwd left out)."""
    from xsky.skills.atom_finish import DeltaView, finish
    from xsky.skills.drafts import group_offline
    from xsky.skills.trajectory import render

    def rec(kind: str, content: Any, **kw: Any) -> dict[str, Any]:
        message = {"role": kind, "content": content}
        if kind == "assistant":
            message["model"] = kw.pop("model", "claude-opus-4-6")
        return {"type": kind, "sessionId": "s1", "message": message, **kw}

    def said(text: str, **kw: Any) -> dict[str, Any]:
        return rec("assistant", [{"type": "text", "text": text}], **kw)

    ask = rec("user", "add a dark mode toggle to the settings page")
    question = said("Before I start: which default do you want, the system theme or light?")
    took = {"type": "system", "subtype": "turn_duration", "durationMs": 9000, "sessionId": "s1"}
    failed = said(
        "API Error: 500 Internal server error", model="<synthetic>", isApiErrorMessage=True
    )
    leave = [
        rec(
            "user",
            "<command-name>/exit</command-name>\n            <command-message>exit</command-message>\n            <command-args></command-args>",
        ),  # fmt: skip
        rec("user", "<local-command-stdout>Catch you later!</local-command-stdout>"),
    ]
    resumed = said("No response requested.", model="<synthetic>", isApiErrorMessage=False)
    meta = rec("user", [{"type": "text", "text": "Continue from where you left off."}], isMeta=True)

    def atom(lines: list[dict[str, Any]]) -> Any:
        chained = [
            {**r, "uuid": f"r{i}", "parentUuid": f"r{i - 1}" if i else None}
            for i, r in enumerate(lines)
        ]
        rendered = render(_events_of(chained, tmp_path), 0)
        view = DeltaView("t", "/s.jsonl", rendered.text, 0, 0, 1)
        (only,) = finish(group_offline(rendered.units, None), view, 1, "offline")
        return only

    asked = atom([ask, question, took, *leave, resumed])
    assert asked.provenance.ux_signals.get("unanswered_question") == 1
    assert asked.ux_score == 2
    assert "No response requested" not in asked.summary
    assert atom([ask, question, took, meta, resumed]).ux_score == 2  # a resume
    never = atom([ask, failed, *leave, resumed])
    assert never.provenance.ux_signals.get("never_answered") == 1
    assert never.ux_score == 2
    # a synthetic API failure Claude Code did not flag is still the API's failure
    unflagged = {**failed, "isApiErrorMessage": False}
    assert atom([ask, unflagged]).provenance.ux_signals.get("never_answered") == 1
    # the person's reply after a resume answers the question the agent asked before it
    answered = atom([ask, question, took, meta, resumed, rec("user", "light")])
    assert answered.provenance.split is not None and answered.provenance.split.prompts == 1
