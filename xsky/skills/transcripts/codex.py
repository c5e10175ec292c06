"""Codex CLI rollouts: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` and ``archived_sessions/``.

Each line is ``{"timestamp", "type", "payload"}`` (0.58 – 0.128). ``response_item`` is the
protocol log; ``event_msg`` is the UI log, which repeats much of it — which events get
persisted changes between versions. Rules that matter for skills:

- the model is in ``turn_context``, the cwd and thread id in ``session_meta``;
- the person's prompt is the ``response_item`` user message or the ``event_msg``
  ``user_message``, whichever comes first, never both (Codex Desktop rollouts have only the
  event); the agent's message likewise (``agent_message``); a prompt after ``turn_aborted``
  is a correction;
- calls and their outputs are paired by ``call_id``; a non-zero exit code is an error,
  whether in the output's metadata, in its text ("Process exited with code 1", "Exit
  code: 1": unified exec and the freeform shell) or in an ``exec_command_end`` event (one
  written after the output adds a tool error of its own);
- injected context (``<environment_context>``, AGENTS.md / ``<user_instructions>``,
  ``<skills_instructions>``) arrives as user messages but is never user intent;
- a ``compacted`` record is a model-written summary, a boundary, not intent;
- a skill is used when the agent reads a ``…/skills/<name>/SKILL.md`` (Codex lists
  skills in the prompt and the model opens the file itself) and the read succeeds;
- code mode (0.14x): the model's calls are a JavaScript script run by ``exec``; the
  ``tools.<name>(…)`` calls written in it are the calls (``code_mode.py``), one outcome.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import PurePosixPath
from typing import Any

from xsky.security.redact import redact
from xsky.skills.trajectory import MODEL_API, Event
from xsky.skills.transcripts import (
    FileInfo,
    Identity,
    ParseState,
    as_text,
    copied,
    first_json_value,
    folder_name,
    guarded,
    ident,
    json_object,
    records,
)
from xsky.skills.transcripts.claude_code import SHELL_READ
from xsky.skills.transcripts.code_mode import CODE_MODE_TOOLS, Source, inner_calls
from xsky.skills.transcripts.intent import agent_acted, agent_said, fingerprint, user_origin

# The fragments Codex adds since 2026 (codex-rs/core/src/contextual_user_message.rs,
# artificial_messages.rs): each a user message of its own, its tag closing at its end — a
# person's prompt that begins "<warning> javac …" is theirs.
_FRAGMENTS = (
    "<skill>",  # a skill's SKILL.md Codex loaded for `$name` (a use of it: see _user)
    "<subagent_notification>",
    "<additional_context>",  # "Context from my editor"
    "<warning>",  # a model warning
    "<multiagent_context>",
    "<agents_instructions>",
    "<goal_context>",
    "<hook_prompt",  # a Stop hook's continuation (it carries attributes)
)
_INJECTED = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<skills_instructions>",
    "<permissions instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<ide_context>",
    "<user_action>",  # a /review's findings handed back to the main thread (review/exit_*.xml)
    *_FRAGMENTS,
)


def _whole_fragment(text: str, side: str) -> bool:
    """Whether text that begins as injected context is that: an older marker as it begins; a
    newer fragment only as a whole message on the protocol side (the event log's user message
    is only what the person typed)."""
    head = text.lstrip()
    if not head.startswith(_FRAGMENTS):
        return True
    tag = head[1 : head.find(">") if ">" in head else len(head)].split()[0]
    return side == "item" and head.rstrip().endswith(f"</{tag}>")


# A skill Codex injected: <skill>\n<name>demo</name>\n<path>…/SKILL.md</path>\nbody</skill>
_SKILL_NAME = re.compile(r"\A\s*<skill>\s*<name>\s*([a-z0-9][a-z0-9:_-]{0,99})\s*</name>")
# The person's `$name` as Codex records it: a link to the skill's file, the home folder in it
# ("… by Superteam [$apply-grant](C:\\Users\\me\\.agents\\skills\\apply-grant\\SKILL.md)").
# The prompt reads as typed: `$apply-grant`.
_SKILL_MENTION = re.compile(r"\[(\$[A-Za-z0-9][\w:.-]{0,99})\]\([^()\n]{0,1000}?SKILL\.md\)")
# A task one agent hands another (multi-agent v2's inter_agent_communication)
_NEW_TASK = re.compile(r"\A\s*Message Type:\s*NEW_TASK\b[\s\S]*?\nPayload:\s*\n?([\s\S]+)\Z")
# The tags Codex puts around a pasted image, each an input_text of its own beside the image
_IMAGE_TAG = re.compile(r"\A\s*(?:<image(?:\s+name=[^>]*)?>|</image>)\s*\Z")
# Sub-agents whose user turns are no one's task: a review, a compaction, memory work.
_MACHINE_SUBAGENTS = ("review", "compact", "memory_consolidation")


class CodexAdapter:
    def identity(self, head: bytes, info: FileInfo) -> Identity:
        found = first_json_value(head, "payload.id", "payload.cwd", "payload.model")
        cwd = found.get("payload.cwd")
        if not cwd:  # a rollout from before the envelope: its cwd is in the context it sent
            m = _CWD_IN_CONTEXT.search(head.decode("utf-8", errors="replace"))
            cwd = json.loads(f'"{m.group(1)}"') if m else None
        project = folder_name(cwd) if cwd else None
        thread = found.get("payload.id") or PurePosixPath(info.path).stem[-36:]
        first = first_json_value(
            head[: head.find(b"\n") + 1],  # its own header: a fork's copy holds its parent's
            "payload.forked_from_id",
            "payload.source.subagent.thread_spawn.parent_thread_id",
        )
        return Identity(
            model_or_project=project or found.get("payload.model"),
            short_id=thread.replace("-", "")[:8],
            project=project,
            model=found.get("payload.model"),
            copies=ident(
                first.get("payload.forked_from_id")
                or first.get("payload.source.subagent.thread_spawn.parent_thread_id")
            ),
        )

    def parse(self, data: bytes, base: int, state: ParseState, info: FileInfo) -> list[Event]:
        events: list[Event] = []
        for offset, end, rec in records(data, base, state):
            key = _chain_key(rec, state)
            # Only a fork, or a sub-agent given its parent's context, copies records: two
            # sessions of one project begin alike (the same turn context, environment and
            # AGENTS.md), and that prefix is no copy of anything in a session of its own.
            copy = copied(info, state, [key] if key else [], look=state.forked)
            said = guarded(self._record, offset, end, rec, state)
            if not copy:  # (a fork, or a sub-agent given its parent's context, copies a prefix)
                events.extend(said)
        return events

    def _record(self, offset: int, end: int, rec: dict[str, Any], state: ParseState) -> list[Event]:
        kind = rec.get("type")
        payload = json_object(rec.get("payload"))
        if "payload" not in rec:  # a rollout from before the envelope (Codex CLI to mid-2025)
            if kind in _ITEMS:  # a bare response item
                kind, payload = "response_item", rec
            elif rec.get("record_type") == "state":  # its state markers: nothing to read
                state.count_interpreted("state")
                return []
            elif kind is None and isinstance(rec.get("id"), str):  # its header: the session
                kind, payload = "session_meta", rec
        ts = ident(rec.get("timestamp"))
        state.seq += 1

        def ev(kind: Any, text: str, **kw: Any) -> Event:
            return Event(kind, text, offset, end, timestamp=ts, **kw)

        if kind in ("session_meta", "turn_context", "compacted"):
            state.count_interpreted(kind)
        if kind == "session_meta":
            if state.session_id is not None:  # a fork repeats its parent's after its own
                return []
            _source(payload.get("source"), state)
            forked_from = ident(payload.get("forked_from_id"))
            if forked_from or state.parent_session:  # its parent's records come first
                state.forked = True
                state.parent_session = state.parent_session or forked_from
            state.session_id = state.session_id or ident(payload.get("id"))
            state.cwd = _cwd(payload.get("cwd")) or state.cwd
            facts = ", ".join(
                f"{k} {payload[k]}"
                for k in ("cwd", "originator", "cli_version")
                if _str(payload.get(k))
            )
            return [ev("marker", facts, marker="session_start")]
        if kind == "turn_context":
            state.model = ident(payload.get("model")) or state.model
            state.cwd = _cwd(payload.get("cwd")) or state.cwd
            return []
        if kind == "compacted":
            return [ev("compaction", _str(payload.get("message")) or "(context compacted)")]
        if kind == "event_msg":
            return _event_msg(payload, state, ev)
        if kind == "inter_agent_communication":  # multi-agent v2: one agent's message to another
            state.count_interpreted(kind)
            return _agent_message(_str(payload.get("content")) or "", ev)
        if kind != "response_item":
            state.count_opaque(kind if isinstance(kind, str) else "(no type)")
            return []

        ptype = payload.get("type")
        if (
            ptype == "agent_message"
        ):  # the same message as a history item (ResponseItem::AgentMessage)
            state.count_interpreted(kind, ptype)
            content = payload.get("content")
            said = "\n".join(
                c["text"]
                for c in (content if isinstance(content, list) else [])
                if isinstance(c, dict)
                and c.get("type") == "input_text"
                and isinstance(c.get("text"), str)
            )
            if not said.strip():  # encrypted only: who wrote to whom is what can be read
                who = f"{_str(payload.get('author')) or '?'} to {_str(payload.get('recipient')) or '?'}"
                return [ev("meta", f"agent message from {who} (encrypted)")]
            return _agent_message(said, ev)
        if ptype not in _ITEMS:
            state.count_opaque(kind, ptype)
            return []
        state.count_interpreted(kind, ptype)
        if ptype == "message":
            role = payload.get("role")
            text = _content_text(payload.get("content"))
            if role == "user":
                return _user(text, "item", state, ev)
            if role == "assistant":
                return _assistant(text, "item", state, ev)
            return [ev("meta", f"{role}: {text}")]
        if ptype == "reasoning":
            # its summary; else its raw content (reasoning_text: open-weight models, --oss)
            summary, content = (payload.get(k) for k in ("summary", "content"))
            items = [s for s in summary if isinstance(s, dict)] if isinstance(summary, list) else []
            if not items and isinstance(content, list):
                items = [c for c in content if isinstance(c, dict)]
            text = "\n".join(t for t in (i.get("text") for i in items) if isinstance(t, str))
            return [ev("thinking", text)] if text.strip() else []
        if ptype in _CALLS:
            name = ident(payload.get("name")) or ptype.removesuffix("_call")
            call_id = ident(payload.get("call_id")) or ident(payload.get("id"))
            text = _call_text(ptype, payload)
            if ptype == "custom_tool_call" and name in CODE_MODE_TOOLS:
                inner = _script_calls(text, call_id, state, ev)
                if inner:
                    return inner
            m = SHELL_READ.search(text)  # a shell read of a SKILL.md; a patch editing one is no use
            if call_id:
                state.open_call(call_id, name, m.group(1) if m else None)
            agent_acted(state)
            return [ev("tool_call", text, call_id=call_id, tool=name)]
        # an output: paired with its call; the use of a skill counts when it succeeded
        call_id = ident(payload.get("call_id"))
        text, failed = _output(payload.get("output"))
        if call_id is not None and call_id in state.failed_calls:
            state.failed_calls.remove(call_id)
            failed = True
        name, skill = state.close_call(call_id, failed)
        if call_id and not failed:  # an exit code may still come after it (exec_command_end)
            state.bounded("succeeded", f"{call_id}\t{name or ''}")
        return [ev("tool_result", text, call_id=call_id, tool=name, is_error=failed, skill=skill)]


def _script_calls(script: str, call_id: str | None, state: ParseState, ev: Any) -> list[Event]:
    """A code-mode script's calls as the tools they are (``exec_command`` and its command,
    ``apply_patch`` and its patch …), each a call of the script's ``call_id``: the one output
    the script gets is their outcome. None when the script names no tool (it stays ``exec``)."""
    found = inner_calls(script)
    calls = [(tool, c.argument) for c in found if (tool := ident(c.tool)) is not None]
    if not calls or len(calls) < len(found):  # (a name that is no plain identifier)
        return []
    events, skill = [], None
    for tool, argument in calls:
        if isinstance(argument, Source) or argument is None:
            text = script  # (what it was given cannot be read: the script says what it can)
        elif isinstance(argument, str):
            text = argument
        else:
            text = _call_text("function_call", {"arguments": argument})
        m = SHELL_READ.search(text) if tool != "apply_patch" else None
        skill = skill or (m.group(1) if m else None)
        events.append(ev("tool_call", text, call_id=call_id, tool=tool))
    tools = {tool for tool, _ in calls}
    if call_id:  # its output is the script's: named for its tool when it called only one
        state.open_call(call_id, tools.pop() if len(tools) == 1 else "exec", skill)
    agent_acted(state)
    return events


# The working directory in an <environment_context> the agent was sent (JSON-escaped text).
_CWD_IN_CONTEXT = re.compile(r"<cwd>((?:[^<\\\"]|\\.)+)</cwd>")
_CALLS = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
_ITEMS = ("message", "reasoning", *_CALLS, *_OUTPUTS)
# The UI log's events that only repeat a response item or count tokens: read, and dropped.
_ECHOES = ("token_count", "agent_reasoning", "exec_command_begin", "agent_reasoning_raw_content")
_MIRROR_RECORDS = 50  # a prompt's two copies are this close together at most


def _event_msg(payload: dict[str, Any], state: ParseState, ev: Any) -> list[Event]:
    """The UI log: turn markers, the person's prompt (the only copy in Codex Desktop rollouts),
    the agent's message, and a command's exit code."""
    etype = payload.get("type")
    known = etype in (
        *_TURN_MARKS,
        "user_message",
        "agent_message",
        "exec_command_end",
        "mcp_tool_call_end",
        "patch_apply_end",
        "error",
        "thread_rolled_back",
        "undo_completed",
        "entered_review_mode",
        "exited_review_mode",
        *_ECHOES,
    )
    (state.count_interpreted if known else state.count_opaque)("event_msg", etype)
    if etype in ("task_started", "turn_started"):
        return [ev("marker", "", marker="task_start")]
    if etype in ("task_complete", "turn_complete"):
        return [ev("marker", "", marker="task_complete")]
    if etype == "turn_aborted":
        reason = _str(payload.get("reason")) or ""
        if reason not in ("", "interrupted"):
            # "replaced" (a new prompt took the turn's place), "review_ended": Codex's own
            # doing, not the person stopping the agent
            return [ev("marker", reason, marker="turn_end")]
        # the person stopped the turn: what they say next refines it, or names a new goal
        state.interrupted, state.question = True, ""
        return [ev("marker", reason, marker="aborted")]
    if etype == "thread_rolled_back":  # the person undid the last turns (/undo, a rollback)
        turns = payload.get("num_turns")
        said = f"the person rolled back {turns} turn(s)" if isinstance(turns, int) else ""
        return [ev("marker", said or "the person rolled back the last turn", marker="branch")]
    if etype == "undo_completed":  # /undo: the last turn's file changes restored away
        if payload.get("success") is not True:  # nothing was undone (no snapshot, a failure)
            return []
        said = _str(payload.get("message")) or "the person undid the last turn's changes"
        return [ev("marker", said, marker="reverted")]
    if etype in ("entered_review_mode", "exited_review_mode"):  # /review: its own thread's work
        return []
    if etype == "user_message":
        return _user(_str(payload.get("message")) or "", "event", state, ev)
    if etype == "agent_message":
        return _assistant(_str(payload.get("message")) or "", "event", state, ev)
    if etype == "error":  # the turn failed (the model's API, a stream that broke for good)
        text = _str(payload.get("message")) or "error"
        return [ev("tool_result", text, tool=MODEL_API, is_error=True)]
    failure: str | None = None
    if etype == "exec_command_end":
        code = payload.get("exit_code")
        if isinstance(code, int) and code != 0:
            failure = f"the command exited with code {code}"
    elif etype == "patch_apply_end" and payload.get("success") is False:
        failure = "the patch did not apply: " + (
            _str(payload.get("stderr")) or _str(payload.get("stdout")) or "(no reason given)"
        )
    elif etype == "mcp_tool_call_end":  # result {"Ok": …} or {"Err": "…"}
        result = payload.get("result")
        if isinstance(result, dict) and "Err" in result:
            failure = f"tool call error: {as_text(result['Err'])}"
        elif isinstance(result, dict) and json_object(result.get("Ok")).get("isError") is True:
            failure = "the tool said it failed (isError)"
    call_id = ident(payload.get("call_id"))
    if failure is not None and call_id and call_id in state.calls:
        state.bounded("failed_calls", call_id)  # its output, recorded next, is an error
    elif failure is not None and call_id:
        return _late_failure(call_id, failure, state, ev)
    return []


def _agent_message(said: str, ev: Any) -> list[Event]:
    """One agent's message to another: a new task given to this thread is its spawner model's
    prompt; the rest (a report back, a note) is context."""
    task = _NEW_TASK.match(said)
    return [ev("user", task.group(1), origin="model")] if task else [ev("meta", said)]


def _late_failure(call_id: str, text: str, state: ParseState, ev: Any) -> list[Event]:
    """A failure (a non-zero exit code, an MCP error) recorded after the call's output was
    read as a success: an event of its own (counted as a tool error), not lost."""
    for i, item in enumerate(state.succeeded):
        done, _, tool = item.partition("\t")
        if done == call_id:
            del state.succeeded[i]
            return [ev("tool_result", text, call_id=call_id, tool=tool or None, is_error=True)]
    return []


_TURN_MARKS = ("task_started", "turn_started", "task_complete", "turn_complete", "turn_aborted")


def _mirrored(text: str, side: str, state: ParseState) -> bool:
    """Whether ``text`` is the other log's copy of a text just seen; remembered if not."""
    fp = fingerprint(text)
    other = "event" if side == "item" else "item"
    for i, entry in enumerate(state.mirror):
        s, n, f = entry.split(":", 2)
        if s == other and f == fp and state.seq - int(n) <= _MIRROR_RECORDS:
            del state.mirror[i]
            return True
    state.bounded("mirror", f"{side}:{state.seq}:{fp}")
    return False


def _source(source: Any, state: ParseState) -> None:
    """Who started this thread (``session_meta.source``): a person ("cli", "vscode", "exec")
    or another agent — ``{"subagent": {"thread_spawn": {"parent_thread_id": …}}}`` (its
    prompts are the parent model's) or ``{"subagent": "review"}`` (machine work)."""
    sub = source.get("subagent") if isinstance(source, dict) else None
    if sub is None:
        return
    # A review's, a compaction's: no task. Any other (a spawned thread, a kind this reader does
    # not know yet): a model's prompts — never a person's.
    state.writer = "machine" if sub in _MACHINE_SUBAGENTS else "model"
    spawn = json_object(sub.get("thread_spawn")) if isinstance(sub, dict) else {}
    state.parent_session = ident(spawn.get("parent_thread_id"))


def _user(text: str, side: str, state: ParseState, ev: Any) -> list[Event]:
    if not text.strip():
        return []
    if text.lstrip().startswith(_INJECTED) and _whole_fragment(text, side):
        loaded = _SKILL_NAME.match(text)
        if loaded and side == "item":  # Codex loaded it for the person's `$name`: a use
            return [ev("meta", text, skill=loaded.group(1))]
        return [ev("meta", text)] if side == "item" else []
    text = _SKILL_MENTION.sub(r"\1", text)
    if _mirrored(text, side, state):
        return []
    if state.writer == "machine":  # a review's or a compaction's instructions: no task
        state.count_not_intent("machine-agent")
        return [ev("meta", text)]
    if state.writer == "model":  # the parent model's prompt, not a person's
        return [ev("user", text, origin="model")]
    return [ev("user", text, origin=user_origin(text, state))]


def _assistant(text: str, side: str, state: ParseState, ev: Any) -> list[Event]:
    if not text.strip() or _mirrored(text, side, state):
        return []
    agent_said(text, state)
    return [ev("assistant", text)]


def _cwd(value: Any) -> str | None:
    return redact(value.replace("\n", " "))[:500] if isinstance(value, str) and value else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict):
            if isinstance(item.get("text"), str):
                if not _IMAGE_TAG.match(item["text"]):  # (the event's copy has no such tags)
                    parts.append(item["text"])
            elif item.get("type") == "input_image":
                parts.append("[image]")
    return "\n".join(parts)


def _call_text(ptype: str, payload: dict[str, Any]) -> str:
    if ptype == "function_call":
        raw = payload.get("arguments")
        try:
            args = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            return str(raw)
        if isinstance(args, dict) and isinstance(args.get("command"), list):
            command = args["command"]
            shown = (
                command[-1]
                if len(command) >= 3 and command[0] in ("bash", "sh", "zsh")
                else " ".join(map(str, command))
            )
            rest = {k: v for k, v in args.items() if k != "command"}
            return str(shown) + (f"\n{as_text(rest)}" if rest else "")
        # the freeform shell (`shell_command`) and unified exec (`exec_command`) give it as text
        for key in ("command", "cmd"):
            if isinstance(args, dict) and isinstance(args.get(key), str):
                rest = {k: v for k, v in args.items() if k != key}
                return args[key] + (f"\n{as_text(rest)}" if rest else "")
        return as_text(args)
    if ptype == "custom_tool_call":
        return as_text(payload.get("input", ""))
    if ptype == "local_shell_call":
        action = json_object(payload.get("action"))
        command = action.get("command")
        return " ".join(map(str, command)) if isinstance(command, list) else as_text(action)
    # web_search_call: {"query": …}, or whatever a newer version sends
    search = payload.get("action")
    return as_text(search.get("query", search) if isinstance(search, dict) else search)


# How unified exec ("Process exited with code 1") and the freeform shell ("Exit code: 1")
# report a command's end, in the header lines above its output.
_EXIT_LINE = re.compile(r"(?im)^\s*(?:process exited with code|exit code:?)\s*(-?\d+)\b")
_HEADER_LINES = 8
_PATCH_REFUSED = ("apply_patch verification failed", "Failed to apply patch")
# Code mode (0.14x: the model's calls are a script run by the ``exec`` tool, its output headed
# "Script completed", "Script running with cell ID 3" or "Script failed" — a patch it could not
# apply, an error thrown): the script failing is the call failing.
_SCRIPT_FAILED = re.compile(r"^\s*Script failed\s*(?:\n|$)")


def _exit_in_text(text: str) -> int | None:
    head = text.split("\nOutput:", 1)[0] if "\nOutput:" in text else text
    head = "\n".join(head.splitlines()[:_HEADER_LINES])
    m = _EXIT_LINE.search(head)
    return int(m.group(1)) if m else None


def _output(output: Any) -> tuple[str, bool]:
    """The text of a call's output and whether it failed (non-zero exit code)."""
    if isinstance(output, str):
        try:
            parsed = json.loads(output) if output.lstrip().startswith("{") else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "output" in parsed:
            output = parsed
        else:
            code = _exit_in_text(output)
            # apply_patch answers a patch it could not apply in plain text, without a code
            refused = output.lstrip().startswith(_PATCH_REFUSED) or _SCRIPT_FAILED.match(output)
            return output, bool(refused) or (code is not None and code != 0)
    if isinstance(output, dict) and output.get("type") in ("input_text", "input_image"):
        output = [output]  # a single content item
    if isinstance(output, dict):
        meta = json_object(output.get("metadata"))
        code = meta.get("exit_code", output.get("exit_code"))
        body = as_text(output.get("output", output))
        if not isinstance(code, int):
            code = _exit_in_text(body)
        failed = isinstance(code, int) and code != 0
        return (f"exit code {code}\n{body}" if failed else body), failed
    if isinstance(output, list):
        text = "\n".join(_content_item(o) for o in output)
        code = _exit_in_text(text)
        return text, bool(_SCRIPT_FAILED.match(text)) or (code is not None and code != 0)
    return as_text(output), False


def _content_item(item: Any) -> str:
    """One of an output's content items (``input_text``, ``input_image``: a screenshot, an
    MCP tool's picture): its text, an image as ``[image]`` — never its base64 bytes."""
    if not isinstance(item, dict):
        return as_text(item)
    if item.get("type") in ("input_image", "image") or (
        "image_url" in item and not isinstance(item.get("text"), str)
    ):
        return "[image]"
    return as_text(item.get("text", item))


def _chain_key(rec: dict[str, Any], state: ParseState) -> str | None:
    """A record's place in its thread: the hash of every record up to it but the session
    headers (a fork writes its own, then its parent's) and the line timestamps (a fork
    stamps the records it copies anew). Codex copies a fork's history as a prefix of the
    parent's records, so a copied record has the parent's key and the first new one differs."""
    if rec.get("type") == "session_meta" or (
        "payload" not in rec and rec.get("type") is None and isinstance(rec.get("id"), str)
    ):
        return None
    body = {k: v for k, v in rec.items() if k != "timestamp"}
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    state.chain = hashlib.sha256(f"{state.chain}\n{text}".encode()).hexdigest()[:24]
    return f"cx:{state.chain}"
