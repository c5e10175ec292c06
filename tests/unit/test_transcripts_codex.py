"""Codex (0.58, 0.125, 0.128 rollout shapes): the person's prompt from whichever log has it,
never twice; injected context is meta; exit codes from metadata, text and exec_command_end
are errors; a prompt after turn_aborted corrects; SKILL.md reads count when they succeed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from xsky.skills.trajectory import Event
from xsky.skills.transcripts import FileInfo, ParseState, adapter_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
V058 = next((FIXTURES / "codex-0.58").rglob("rollout-*.jsonl"))
V0125 = next((FIXTURES / "codex-0.125").rglob("rollout-*.jsonl"))
V0128 = next((FIXTURES / "codex-0.128").rglob("rollout-*.jsonl"))


def parse(path: Path, data: bytes | None = None) -> tuple[list[Event], ParseState]:
    state = ParseState()
    raw = path.read_bytes() if data is None else data
    return adapter_for("codex").parse(raw, 0, state, FileInfo(str(path))), state


def users(events: list[Event]) -> list[tuple[str | None, str]]:
    return [(e.origin, e.text) for e in events if e.kind == "user"]


def test_0_58_a_mirrored_prompt_is_not_doubled_and_context_is_meta() -> None:
    events, _ = parse(V058)
    assert users(events) == [
        (
            "prompt",
            "the /health endpoint returns 500 when redis is down; make it report degraded instead",
        ),
        ("answer", "1"),  # the agent offered 1. / 2.
        ("after_interrupt", "don't touch the redis client, only the handler"),  # after turn_aborted
    ]
    meta = [e.text for e in events if e.kind == "meta"]
    assert any(t.startswith("# AGENTS.md instructions") for t in meta)
    assert any(t.startswith("<environment_context>") for t in meta)
    assert any(t.startswith("<turn_aborted>") for t in meta)
    assert [e.kind for e in events].count("assistant") == 2, "agent_message mirrors are dropped"


def test_0_58_exit_codes_in_metadata_and_in_exec_command_end_are_errors() -> None:
    events, state = parse(V058)
    results = {e.text.splitlines()[-1]: e.is_error for e in events if e.kind == "tool_result"}
    assert results == {"---": False, "1 failed in 0.31s": True, "ruff: 2 errors": True}
    assert [e.skill for e in events if e.skill] == ["fastapi-health"]
    assert state.interpreted["event_msg/exec_command_end"] == 2 and state.failed_calls == []
    assert state.opaque == {"ghost_snapshot": 1}


def test_0_125_unified_exec_and_freeform_shell_failures_are_read_from_their_text() -> None:
    events, _ = parse(V0125)
    results = [(e.tool, e.is_error) for e in events if e.kind == "tool_result"]
    assert results == [
        ("exec_command", False),  # "Process exited with code 0"
        ("exec_command", True),  # "Process exited with code 1" (the body's own line is ignored)
        ("apply_patch", False),
        ("shell", True),  # "Exit code: 2"
        ("local_shell", False),
    ]
    assert [(e.kind, e.skill) for e in events if e.skill] == [("tool_result", "uv-upgrade")]
    assert users(events) == [("prompt", "bump fastapi to 0.120 and fix whatever breaks")]


def test_0_128_desktop_prompts_exist_only_as_events_and_come_out_once_each() -> None:
    events, state = parse(V0128)
    assert users(events) == [
        ("prompt", "add a /metrics endpoint with prometheus_client"),
        ("prompt", "now protect it with the same basic auth as /admin"),
        ("answer", "same one"),  # the agent asked which password
        ("prompt", "now protect it with the same basic auth as /admin"),  # typed again: kept
    ]
    assistant = [e.text for e in events if e.kind == "assistant"]
    assert assistant[0].startswith("prometheus_client is not")  # only an agent_message
    assert assistant.count("Added `app/metrics.py` and mounted it at /metrics.") == 1
    grep = next(e for e in events if e.kind == "tool_result" and e.tool == "exec_command")
    assert grep.is_error, "exec_command_end said exit code 1"
    assert any(e.kind == "compaction" for e in events) and not state.opaque


def test_a_prompt_mirrored_in_the_other_order_is_still_one() -> None:
    prompt = "rename the health module"
    lines = [
        {"type": "event_msg", "payload": {"type": "user_message", "message": prompt}},
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": prompt}, {"type": "input_image"}],
            },
        },
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    events, _ = parse(V058, data)
    assert users(events) == [("prompt", prompt)]


def test_a_patch_that_edits_a_skill_md_is_not_its_use() -> None:
    patch = "*** Begin Patch\n*** Update File: .agents/skills/uv-upgrade/SKILL.md\n*** End Patch\n"
    lines = [
        {
            "type": "response_item",
            "payload": {
                "type": "custom_tool_call",
                "call_id": "c1",
                "name": "apply_patch",
                "input": patch,
            },
        },
        {
            "type": "response_item",
            "payload": {"type": "custom_tool_call_output", "call_id": "c1", "output": "Success."},
        },
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    events, _ = parse(V058, data)
    assert [e.kind for e in events] == ["tool_call", "tool_result"]
    assert not [e for e in events if e.skill]


def test_an_exit_code_recorded_after_the_output_still_makes_the_call_an_error() -> None:
    """Some rollouts write ``exec_command_end`` after the ``function_call_output``: the output
    read as a success, the later non-zero exit code still counts as a tool error (once)."""
    call = {
        "type": "response_item",
        "payload": {
            "type": "function_call",
            "name": "shell",
            "arguments": json.dumps({"command": ["bash", "-lc", "pytest -q"]}),
            "call_id": "call_late1",
        },
    }
    output = {
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "call_late1", "output": "3 failed"},
    }
    end = {
        "type": "event_msg",
        "payload": {"type": "exec_command_end", "call_id": "call_late1", "exit_code": 1},
    }
    ok_end = {**end, "payload": {**end["payload"], "call_id": "call_other", "exit_code": 0}}
    data = "".join(json.dumps(x) + "\n" for x in [call, output, end, end, ok_end]).encode()
    events, state = parse(V058, data)
    results = [(e.text, e.is_error) for e in events if e.kind == "tool_result"]
    assert results == [("3 failed", False), ("the command exited with code 1", True)]
    assert state.succeeded == [] and state.failed_calls == []


def _lines(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def test_the_freeform_shells_command_is_read_as_a_command_and_a_skill_it_reads_counts() -> None:
    """`shell_command` (Codex's current shell tool) gives `command` as text: the view showed
    its raw JSON, and a `cat …/SKILL.md` in it was not seen as the skill's use."""
    call = {
        "type": "response_item",
        "payload": {
            "type": "function_call",
            "name": "shell_command",
            "arguments": json.dumps(
                {
                    "command": "cat /home/dev/.codex/skills/deploy-billing-api/SKILL.md",
                    "workdir": "/home/dev/billing",
                    "timeout_ms": 120000,
                }
            ),
            "call_id": "call_s1",
        },
    }
    output = {
        "type": "response_item",
        "payload": {
            "type": "function_call_output",
            "call_id": "call_s1",
            "output": "Exit code: 0\nOutput:\n---",
        },
    }
    events, _ = parse(V058, _lines(call, output))
    [tool_call] = [e for e in events if e.kind == "tool_call"]
    assert (
        tool_call.text.splitlines()[0] == "cat /home/dev/.codex/skills/deploy-billing-api/SKILL.md"
    )
    assert [e.skill for e in events if e.skill] == ["deploy-billing-api"]


def test_an_mcp_tool_that_failed_and_an_error_that_ended_the_turn_are_errors() -> None:
    call = {
        "type": "response_item",
        "payload": {
            "type": "function_call",
            "name": "kubernetes__get_pods",
            "arguments": "{}",
            "call_id": "call_m1",
        },
    }
    end = {
        "type": "event_msg",
        "payload": {
            "type": "mcp_tool_call_end",
            "call_id": "call_m1",
            "result": {"Err": "tool call error: connection refused"},
        },
    }
    output = {
        "type": "response_item",
        "payload": {
            "type": "function_call_output",
            "call_id": "call_m1",
            "output": "tool call error: connection refused",
        },
    }
    error = {"type": "event_msg", "payload": {"type": "error", "message": "stream disconnected"}}
    # the end event before the output (as recorded), and after it (as some versions write it)
    tool = "kubernetes__get_pods"
    for order, said in (
        ((call, end, output, error), [(tool, True), ("model API", True)]),
        # read as a success first, then the failure as an event of its own (as a late exit)
        ((call, output, end, error), [(tool, False), (tool, True), ("model API", True)]),
    ):
        events, state = parse(V058, _lines(*order))
        assert [(e.tool, e.is_error) for e in events if e.kind == "tool_result"] == said
        assert state.opaque == {}


def test_a_rollout_from_before_the_envelope_is_read_too(tmp_path: Path) -> None:
    """Codex CLI rollouts to mid-2025: a bare header, `record_type: state` lines and bare
    response items. Every record was opaque: no prompt, no call, no atom, and the trajectory
    named `unknown`."""
    from xsky.skills.transcripts import adapter_for

    tid = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
    header = {"id": tid, "timestamp": "2025-08-20T13:20:47.060Z", "instructions": None}
    context = {
        "type": "message",
        "role": "user",
        "content": [
            {
                "type": "input_text",
                "text": "<environment_context>\n  <cwd>/home/dev/api</cwd>\n</environment_context>",
            }
        ],
    }
    prompt = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "add an index on orders(customer_id)"}],
    }
    call = {
        "type": "function_call",
        "name": "shell",
        "arguments": json.dumps({"command": ["bash", "-lc", "ls migrations"]}),
        "call_id": "call_1",
    }
    output = {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": json.dumps({"output": "0001_init.sql\n", "metadata": {"exit_code": 0}}),
    }
    answer = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Added the migration."}],
    }
    state = {"record_type": "state"}
    data = _lines(header, state, context, state, prompt, call, output, state, answer)
    path = tmp_path / f"rollout-2025-08-20T13-20-47-{tid}.jsonl"
    path.write_bytes(data)
    events, parsed = parse(path, data)
    assert users(events) == [("prompt", "add an index on orders(customer_id)")]
    assert [e.kind for e in events if e.kind in ("tool_call", "tool_result", "assistant")] == [
        "tool_call",
        "tool_result",
        "assistant",
    ]
    assert parsed.opaque == {}
    who = adapter_for("codex").identity(data[:4096], FileInfo(str(path)))
    assert (who.project, who.short_id) == ("api", "5973b6c0")


# -- newer record kinds (shapes from openai/codex's protocol: SessionSource::SubAgent,
# EventMsg::ThreadRolledBack, PatchApplyEndEvent, TurnAbortReason, review/exit_success.xml) --


def rollout(*records: dict[str, object], source: object = "cli") -> bytes:
    head = {
        "timestamp": "2026-11-20T10:00:00.000Z",
        "type": "session_meta",
        "payload": {"id": "019aa002-2222-7333-8444-555566667777", "cwd": "/w", "source": source},
    }
    lines = [head, *({"timestamp": "2026-11-20T10:01:00.000Z", **r} for r in records)]
    return "".join(json.dumps(x) + "\n" for x in lines).encode()


def said(text: str) -> dict[str, object]:
    return {"type": "event_msg", "payload": {"type": "user_message", "message": text}}


def event(kind: str, **payload: object) -> dict[str, object]:
    return {"type": "event_msg", "payload": {"type": kind, **payload}}


def item(**payload: object) -> dict[str, object]:
    return {"type": "response_item", "payload": payload}


PARENT = "019aa001-1111-7222-8333-444455556666"


def test_a_sub_agents_prompts_are_its_parent_models_and_a_reviews_are_no_task() -> None:
    spawned = {"subagent": {"thread_spawn": {"parent_thread_id": PARENT, "depth": 1}}}
    events, state = parse(
        V0128, rollout(said("Explore billing/ and list rounding"), source=spawned)
    )
    assert users(events) == [("model", "Explore billing/ and list rounding")]
    assert state.parent_session == PARENT  # its atoms count as the parent's session
    events, _ = parse(
        V0128, rollout(said("Review the current code changes"), source={"subagent": "review"})
    )
    assert users(events) == [] and any(e.text == "Review the current code changes" for e in events)
    events, state = parse(V0128, rollout(said("fix the parser")))  # a person's own session
    assert users(events) == [("prompt", "fix the parser")] and state.parent_session is None


def test_a_reviews_findings_handed_back_are_not_the_persons_prompt() -> None:
    back = "<user_action>\n  <context>User initiated a review task. Here's the full review output"
    events, _ = parse(
        V0128,
        rollout(
            event("entered_review_mode"),
            event("exited_review_mode"),
            said(back),
            said("fix the P1"),
        ),
    )
    assert users(events) == [("prompt", "fix the P1")]


def test_a_patch_that_did_not_apply_is_a_failed_call() -> None:
    patch = "*** Begin Patch\n*** Update File: a.py\n*** End Patch\n"
    refused = "apply_patch verification failed: Failed to find expected lines in a.py"
    events, _ = parse(
        V0128,
        rollout(
            item(type="custom_tool_call", call_id="p1", name="apply_patch", input=patch),
            item(type="custom_tool_call_output", call_id="p1", output=refused),
            item(type="custom_tool_call", call_id="p2", name="apply_patch", input=patch),
            item(
                type="custom_tool_call_output",
                call_id="p2",
                output='{"output": "Success.", "metadata": {"exit_code": 0}}',
            ),
            event(
                "patch_apply_end", call_id="p2", stderr="error: file changed on disk", success=False
            ),
        ),
    )
    failed = [(e.call_id, e.text) for e in events if e.kind == "tool_result" and e.is_error]
    assert failed == [
        ("p1", refused),
        ("p2", "the patch did not apply: error: file changed on disk"),
    ]


def test_only_the_person_stopping_a_turn_is_an_interruption_and_a_rollback_is_a_rewind() -> None:
    events, _ = parse(
        V0128,
        rollout(said("add a fee"), event("turn_aborted", reason="replaced"), said("add a 2% fee")),
    )
    assert [e.marker for e in events if e.kind == "marker"][1:] == ["turn_end"]
    assert users(events)[1][0] == "prompt"  # not "after_interrupt"
    events, _ = parse(
        V0128, rollout(said("rename total"), event("thread_rolled_back", num_turns=1))
    )
    assert [(e.marker, e.text) for e in events if e.kind == "marker"][1:] == [
        ("branch", "the person rolled back 1 turn(s)")
    ]


def test_an_undo_is_a_revert_of_the_agents_edits_and_lowers_the_tasks_score(
    tmp_path: Path,
) -> None:
    """Codex's /undo restores the ghost snapshot taken before the last turn and persists
    ``undo_completed`` (codex-rs/core/src/tasks/undo.rs; rollout/src/policy.rs keeps it): the
    person threw the agent's file changes away. A successful one is a reverted edit; a failed
    one ("No ghost snapshot available to undo.") changed nothing."""
    from activities.skills.render import render_delta
    from activities.skills.scan import commit_delta, read_atoms, scan
    from activities.skills.store import SkillStore
    from activities.skills.task_agent import split_delta
    from xsky.skills.runs import ScanInput
    from xsky.skills.sources import Source

    work = [
        said("add a --json flag to the export command"),
        event("task_started"),
        item(type="function_call", name="apply_patch", call_id="c1", arguments="{}"),
        item(type="function_call_output", call_id="c1", output="Success. Updated: cli.py"),
        event("agent_message", message="Added the --json flag."),
        event("task_complete"),
    ]
    undone = event("undo_completed", success=True, message="Undo restored snapshot 1a2b3c4.")
    failed = event("undo_completed", success=False, message="No ghost snapshot available to undo.")

    events, state = parse(V0128, rollout(*work, undone, failed))
    assert [(e.marker, e.text) for e in events if e.kind == "marker"][-1] == (
        "reverted",
        "Undo restored snapshot 1a2b3c4.",
    )
    assert state.interpreted.get("event_msg/undo_completed") == 2 and not state.opaque

    def mined(name: str, data: bytes) -> dict:
        day = tmp_path / name / "sessions/2026/11/20"
        day.mkdir(parents=True)
        (
            day / "rollout-2026-11-20T10-00-00-019aa002-2222-7333-8444-555566667777.jsonl"
        ).write_bytes(data)
        home = tmp_path / f"{name}-home"
        sources = [Source("codex", tmp_path / name, "test")]
        for d in scan(home, sources, ScanInput(settle_seconds=0)).deltas:
            render_delta(home, d)
            asyncio.run(split_delta(home, d, None, lambda note: None))
            assert commit_delta(home, d).committed
        store = SkillStore(home)
        try:
            (atom,) = [a for t in store.trajs() for a in read_atoms(home, t.traj_id)]
        finally:
            store.close()
        return {"ux": atom.ux_score, "signals": atom.provenance.ux_signals}

    kept, reverted = mined("kept", rollout(*work)), mined("undone", rollout(*work, undone))
    assert reverted["signals"].get("reverted_edits") == 1
    assert reverted["ux"] < kept["ux"]


def test_an_image_in_a_calls_output_is_shown_as_image_not_its_bytes() -> None:
    """A function call's output can be content items (codex-rs/protocol models.rs
    FunctionCallOutputContentItem: input_text, input_image — a screenshot, an MCP tool's
    picture, as a data URL): the image is ``[image]``, and text after it is kept, not pushed
    out of the view's 2,000 characters by base64."""
    png = "data:image/png;base64," + "iVBORw0KGgo" * 400
    events, _ = parse(
        V0128,
        rollout(
            said("screenshot the page and say what is wrong"),
            item(type="function_call", name="mcp__pw__screenshot", call_id="c1", arguments="{}"),
            item(
                type="function_call_output",
                call_id="c1",
                output=[
                    {"type": "input_image", "image_url": png},
                    {"type": "input_text", "text": "The page shows a 404"},
                ],
            ),
            item(type="custom_tool_call", name="view", call_id="c2", input="a.png"),
            item(
                type="custom_tool_call_output",
                call_id="c2",
                output={"type": "input_image", "image_url": png, "detail": None},
            ),
        ),
    )
    results = [e.text for e in events if e.kind == "tool_result"]
    assert results == ["[image]\nThe page shows a 404", "[image]"]


def test_reasoning_with_only_raw_content_is_read() -> None:
    """A reasoning item carries a summary, or — from a model that shows its raw reasoning
    (gpt-oss, ``--oss``) — only ``content`` ``reasoning_text`` parts (codex-rs/protocol
    models.rs ReasoningItemContent): read either; a summary, when there is one, is preferred."""
    raw = {"type": "reasoning_text", "text": "the flag parser drops the last arg"}
    events, _ = parse(
        V0128,
        rollout(
            said("why does --json get ignored?"),
            item(type="reasoning", summary=[], content=[raw], encrypted_content=None),
            item(
                type="reasoning",
                summary=[{"type": "summary_text", "text": "**Checking the parser**"}],
                content=[raw],
            ),
        ),
    )
    assert [e.text for e in events if e.kind == "thinking"] == [
        "the flag parser drops the last arg",
        "**Checking the parser**",
    ]


def test_a_task_given_as_an_agent_message_item_is_the_spawner_models_prompt() -> None:
    """Multi-agent messages are also persisted as history items, ``ResponseItem::AgentMessage``
    {author, recipient, content: input_text | encrypted_content} (codex-rs/rollout policy.rs
    should_persist_response_item): a NEW_TASK given to a sub-agent is its parent model's prompt,
    like the ``inter_agent_communication`` record; a report back is context; an encrypted one
    says who wrote to whom. They were opaque: a sub-agent's task was never read."""
    task = "Message Type: NEW_TASK\nTask name: dates\nSender: /root\nPayload:\nMigrate the date helpers"
    spawn = {
        "subagent": {"thread_spawn": {"parent_thread_id": PARENT, "agent_path": "/root/dates"}}
    }

    def message(author: str, recipient: str, *content: dict[str, object]) -> dict[str, object]:
        return item(type="agent_message", author=author, recipient=recipient, content=list(content))

    events, state = parse(
        V0128,
        rollout(
            message("/root", "/root/dates", {"type": "input_text", "text": task}),
            message(
                "/root/dates", "/root", {"type": "input_text", "text": "Done: 4 helpers moved"}
            ),
            message(
                "/root", "/root/dates", {"type": "encrypted_content", "encrypted_content": "gA"}
            ),
            source=spawn,
        ),
    )
    said = [(e.kind, e.origin, e.text) for e in events if e.kind in ("user", "meta")]
    assert said == [
        ("user", "model", "Migrate the date helpers"),
        ("meta", None, "Done: 4 helpers moved"),
        ("meta", None, "agent message from /root to /root/dates (encrypted)"),
    ]
    assert state.interpreted.get("response_item/agent_message") == 3


def test_a_code_mode_script_that_failed_is_a_failed_call() -> None:
    # Codex 0.144's code mode (real8: a real 0.144.1 rollout, AkashJana18/edgerunner
    # codex-session.jsonl, shape only): the model's calls are one `exec` script whose output
    # is headed "Script completed" / "Script running with cell ID n" / "Script failed"; five
    # patches the script could not apply were read as successes.
    script = "const r = await tools.apply_patch({patch: '*** Begin Patch'});\ntext(r);"
    head = "Script failed\nWall time 0.1 seconds\nOutput:\n"
    refused = "Script error:\napply_patch verification failed: Failed to find expected lines"
    events, _ = parse(
        V0128,
        rollout(
            item(type="custom_tool_call", call_id="c1", name="exec", input=script),
            item(
                type="custom_tool_call_output",
                call_id="c1",
                output=[
                    {"type": "input_text", "text": head},
                    {"type": "input_text", "text": refused},
                ],
            ),
            item(type="custom_tool_call", call_id="c2", name="exec", input=script),
            item(
                type="custom_tool_call_output",
                call_id="c2",
                output=[
                    {
                        "type": "input_text",
                        "text": "Script completed\nWall time 0.1 seconds\nOutput:\n",
                    }
                ],
            ),
            item(type="function_call", call_id="c3", name="wait", arguments='{"cell_id": "4"}'),
            item(type="function_call_output", call_id="c3", output=head + "\n" + refused),
        ),
    )
    results = [(e.call_id, e.is_error) for e in events if e.kind == "tool_result"]
    assert results == [("c1", True), ("c2", False), ("c3", True)]


def _script(call_id: str, script: str, head: str = "Script completed") -> list[dict[str, object]]:
    out = [{"type": "input_text", "text": f"{head}\nWall time 0.1 seconds\nOutput:\n"}]
    return [
        item(type="custom_tool_call", call_id=call_id, name="exec", input=script),
        item(type="custom_tool_call_output", call_id=call_id, output=out),
    ]


def test_a_code_mode_scripts_calls_are_the_tools_it_calls() -> None:
    # Codex 0.144's code mode (real9: a real 0.144.1 rollout, AkashJana18/edgerunner
    # codex-session.jsonl, script shapes only — its 153 `exec` scripts call
    # tools.exec_command / apply_patch / web__run / write_stdin / update_plan): every call was
    # "exec" ("exec ×147"), the commands and patches inside hidden from the summary, the tool
    # counts and revert detection.
    from xsky.skills.atom_finish import offline_summary
    from xsky.skills.drafts import fold
    from xsky.skills.trajectory import render

    read = (
        'const r = await tools.exec_command({"cmd":"sed -n \'1,240p\' '
        '/home/dev/.codex/skills/demo/SKILL.md","workdir":"/w","yield_time_ms":10000});\n'
        "text(r.output);"
    )
    patch = (
        '// @exec: {"yield_time_ms": 10000}\n'
        'const patch = "*** Begin Patch\\n*** Update File: src/engine.rs\\n@@\\n-a\\n+b\\n'
        '*** End Patch";\ntext(await tools.apply_patch(patch));'
    )
    loop = (
        'const common={workdir:"/w",yield_time_ms:10000};\n'
        'for (const p of ["health","ready"]) {\n'
        "  const r=await tools.exec_command({...common,cmd:`curl -sS http://127.0.0.1:8080/${p}`});\n"
        "  text(`-- ${p} --\\n${r.output}`); // a comment with tools.nothing( in it\n"
        "}\n"
        "await tools['exec_command']({...common, cmd: 'git checkout -- ' + \"src/engine.rs\"});"
    )
    events, _ = parse(
        V0128,
        rollout(
            *_script("c1", read),
            *_script("c2", patch, head="Script failed"),
            *_script("c3", loop),
            *_script("c4", "const m = ALL_TOOLS.filter(x => /exec/i.test(x.name)); text(m);"),
            *_script("c5", 'const r = await tools.exec_command({cmd: "ls"'),  # cut short
            *_script("c6", 'tools.write_stdin({session_id: 7, chars: "\\u0003"})'),
        ),
    )
    calls = [(e.call_id, e.tool, e.text.splitlines()[0]) for e in events if e.kind == "tool_call"]
    assert calls == [
        ("c1", "exec_command", "sed -n '1,240p' /home/dev/.codex/skills/demo/SKILL.md"),
        ("c2", "apply_patch", "*** Begin Patch"),
        ("c3", "exec_command", "curl -sS http://127.0.0.1:8080/${p}"),
        ("c3", "exec_command", "git checkout -- src/engine.rs"),
        ("c4", "exec", "const m = ALL_TOOLS.filter(x => /exec/i.test(x.name)); text(m);"),
        ("c5", "exec", 'const r = await tools.exec_command({cmd: "ls"'),
        ("c6", "write_stdin", '{"chars": "\\u0003", "session_id": 7}'),
    ]
    patched = next(e.text for e in events if e.tool == "apply_patch" and e.kind == "tool_call")
    assert "*** Update File: src/engine.rs" in patched  # the patched file is seen
    results = [(e.call_id, e.tool, e.is_error, e.skill) for e in events if e.kind == "tool_result"]
    assert results == [  # one outcome per script, the script's
        ("c1", "exec_command", False, "demo"),
        ("c2", "apply_patch", True, None),
        ("c3", "exec_command", False, None),
        ("c4", "exec", False, None),
        ("c5", "exec", False, None),
        ("c6", "write_stdin", False, None),
    ]
    units = render(events, 0).units
    assert fold(units).state.signals.get("reverted_edits") == 1
    assert (
        "7 tool calls (exec_command ×3, exec ×2, apply_patch, write_stdin), 1 failed"
        in offline_summary(units)
    )


def test_a_skill_the_person_named_with_dollar_reads_as_typed_not_as_its_files_path() -> None:
    """Codex records the person's `$apply-grant` as a link to the skill's file, the home folder
    in it; the task's intent and summary showed the path (a real Codex 0.142.5 rollout on
    Windows, yashpunmiya/Solsmile codex-session.jsonl @ f1e66f04, lines 6-7; real12's leftover,
    real13). The prompt reads as typed; another markdown link is the person's own text."""
    typed = (
        "help me apply for the agentic engineering grant by Superteam "
        "[$apply-grant](C:\\\\Users\\\\yyash\\\\.agents\\\\skills\\\\apply-grant\\\\SKILL.md) \n"
    )
    mirrored = item(type="message", role="user", content=[{"type": "input_text", "text": typed}])
    events, _ = parse(V0128, rollout(mirrored, said(typed)))
    assert [(o, t.strip()) for o, t in users(events)] == [
        ("prompt", "help me apply for the agentic engineering grant by Superteam $apply-grant")
    ]
    posix = "run [$checks](/Users/dev/.codex/skills/checks/SKILL.md) on the branch"
    events, _ = parse(V0128, rollout(said(posix)))
    assert users(events) == [("prompt", "run $checks on the branch")]
    link = "fix the typo in [the guide](docs/guide.md)"
    events, _ = parse(V0128, rollout(said(link)))
    assert users(events) == [("prompt", link)]
