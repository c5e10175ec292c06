"""Claude Code sessions: ``<root>/<munged-cwd>/<session>.jsonl`` (+ ``<session>/subagents/agent-*.jsonl``).

The record format is internal to Claude Code and changes between releases, so only what
is documented by observation is interpreted (``user``, ``assistant``, ``system``
subtypes, ``queue-operation``, hook and queued-command ``attachment``s) and everything
else is kept opaque. Rules that matter for skills:

- order follows the ``parentUuid`` → ``uuid`` chain, not file order; a record whose parent
  is not the previous one starts a branch (a rewind or an edited prompt) and says so;
- one API message is written as several lines (one content block each) sharing
  ``message.id`` and ``requestId``; an identical line seen twice is dropped;
- every user-role text is classified (:mod:`claude_text`, :mod:`intent`): ``isMeta``
  lines, task notifications, hook output, command wrappers and compaction summaries are
  never user intent; a prompt typed while the agent works is a ``queue-operation``
  ``enqueue``, delivered (a ``queued`` user event) at its ``remove`` / ``dequeue``, and not
  counted again when it is popped into the next user message; a subagent's prompts
  (``subagents/agent-*.jsonl``, old-style ``isSidechain`` lanes) are the model's, and a
  compaction agent's file (``agent-acompact-*``, and any other internal agent named so,
  ``agent-aprompt_suggestion-*``) holds no user turn at all;
- a skill is *used* when a ``Skill`` call (``input.skill``, the plugin namespace kept)
  succeeds, or a ``Read`` (or a ``cat`` in ``Bash``) of a ``…/skills/<name>/SKILL.md``
  does: the use is on the result, so a failed call is no use; the injected skill listing
  is not use. A skill the person invoked as a slash command (``/deploy-helm …``) is used
  when Claude Code loads it: the command's wrapper, then an ``isMeta`` "Base directory for
  this skill: …/<name>" (a load that answers a ``Skill`` call is counted on the call).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from xsky.security.redact import redact
from xsky.skills.sessions import claude_subagent_session
from xsky.skills.trajectory import CAPS, MODEL_API, Event
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
    skill_name,
    text_of,
)
from xsky.skills.transcripts.claude_text import (
    INTERRUPTED,
    WARMUP,
    classify,
    machine_kind,
    rejection_feedback,
)
from xsky.skills.transcripts.intent import agent_acted, agent_said, normal, user_origin

# (Windows paths too: `C:\Users\dev\.claude\skills\x\SKILL.md`, also JSON-escaped `\\`.)
SKILL_FILE = re.compile(r"skills[/\\]+([a-z0-9][a-z0-9-]{0,63})[/\\]+SKILL\.md")
# A shell command that reads a SKILL.md (``cat``, ``head``, ``sed -n …``), not one that writes it
# (the command may begin a string: ``"cat …`` in a call's JSON).
SHELL_READ = re.compile(
    r"(?:^|[;&|(\"']\s*|\s)(?:cat|head|tail|less|more|bat|nl|type|Get-Content|gc|sed\s+-n\s+\S+)\s+[^;&|>]*?"
    r"skills[/\\]+([a-z0-9][a-z0-9-]{0,63})[/\\]+SKILL\.md",
    re.I,
)
# Claude Code's message when it loads a skill (2.1.x): the skill's folder, then its body.
SKILL_LOADED = re.compile(r"^Base directory for this skill:\s*(\S+)")
_INTERPRETED = ("user", "assistant", "system")
# Claude Code's own helper agents (compaction, prompt suggestions) are named, not numbered:
# their input is the conversation itself, none of it a turn of theirs.
_INTERNAL_AGENT = re.compile(r"^agent-a[a-z_]{3,}-")
_ATTACHMENT_META = ("hook_",)  # hook output attached to a turn
_QUEUED_ATTACHMENT = "queued_command"
# A queued slash command (`/model opus`) or shell command (`!ls`): not a prompt.
_QUEUED_COMMAND = re.compile(r"^\s*(?:/[a-z][\w:.\-]{0,60}(?:\s|$)|!)")
_COMPARE_CHARS = 2000  # of a delivered prompt, to know its copy in the next user message
# Claude Code writes some assistant records itself (model "<synthetic>", no tokens): the
# model's API failure in words (most flagged isApiErrorMessage, not all), or a stand-in reply
# — "No response requested." after a local command or on each resume (with the isMeta
# "Continue from where you left off."). Neither is the model's answer.
_SYNTHETIC = "<synthetic>"
_API_FAILURE_TEXT = re.compile(
    r"(?i)^\s*(?:API Error\b|Claude AI usage limit reached|Prompt is too long|"
    r"Credit balance is too low|Invalid API key|Not logged in\b|"
    r"You've (?:hit|reached) your (?:\w+ )?limit)"
)


def munged_cwd(cwd: str) -> str:
    """The project folder name Claude Code uses for a cwd."""
    return re.sub(r"[/.\\:]", "-", cwd)


def _spelt_by(cwd: str, project_folder: str) -> str | None:
    """The project a Claude Code project folder's name spells (``-home-me-my-app``: the path
    with every character but letters and digits made '-'), found up ``cwd``'s parents; None
    when none of them is spelt so."""
    path = PurePosixPath(cwd)
    for candidate in (path, *path.parents):
        if re.sub(r"[^A-Za-z0-9]", "-", str(candidate)) == project_folder:
            return folder_name(str(candidate)) or None
    return None


class ClaudeCodeAdapter:
    def identity(self, head: bytes, info: FileInfo) -> Identity:
        path = PurePosixPath(info.path)
        found = first_json_value(head, "cwd", "message.model", "sessionId", "agentId")
        cwd = found.get("cwd")
        project = folder_name(cwd) if cwd else path.parent.name.rsplit("-", 1)[-1]
        if info.subagent:  # <root>/<project>/<session>/subagents/[workflows/<run>/]agent-<id>.jsonl
            folder = claude_subagent_session(info.path) or PurePosixPath(path.parent.parent)
            session = folder.name
            agent = found.get("agentId") or path.stem.removeprefix("agent-")
            # (a subagent may start in a folder below its session's — a worktree, `assets/` —
            # and is its session's project: the one its project folder's name spells)
            project = (
                _spelt_by(cwd, folder.parent.name) or folder_name(cwd)
                if cwd
                else folder.parent.name.rsplit("-", 1)[-1]
            )
            short = f"{session[:8]}-sub-{agent[:8]}"
        elif (parent := _beside_sessions(path, found.get("sessionId"))) and found.get("agentId"):
            short = f"{parent[:8]}-sub-{found['agentId'][:8]}"  # (not its parent's name)
        else:
            short = (found.get("sessionId") or path.stem)[:8]
        return Identity(
            model_or_project=project,
            short_id=short,
            project=project,
            model=found.get("message.model"),
        )

    def parse(self, data: bytes, base: int, state: ParseState, info: FileInfo) -> list[Event]:
        lines = list(records(data, base, state))
        events: list[Event] = []
        held: list[Event] = []  # a typed prompt's, until what follows it says whose it is
        for offset, end, rec in _parent_order(lines):
            copy = copied(info, state, _record_keys(rec))
            said = guarded(
                lambda o, e, r, s: self._record(o, e, r, s, info), offset, end, rec, state
            )
            if copy:  # (a resumed session written as a new file repeats the old one's records)
                # A prompt two sessions may share (a person's typed text has no id of its own)
                # is a copy when the reply after it is: the Agent SDK's fork gives both new uuids.
                # What came between them (a hook's attachment, a system line) goes with it.
                held = []
                continue
            if held and not _answers(rec) and not _typed_prompt(rec):
                held += said  # not yet known whose: held with the prompt, in order
                continue
            events.extend(held)
            held = []
            if info.owner is not None and _typed_prompt(rec):
                held = list(said)
            else:
                events.extend(said)
        return events + held

    # -- one record --------------------------------------------------------------------------

    def _record(
        self, offset: int, end: int, rec: dict[str, Any], state: ParseState, info: FileInfo
    ) -> list[Event]:
        kind = rec.get("type")
        ts = ident(rec.get("timestamp"))
        if kind == "queue-operation":
            state.count_interpreted(kind, rec.get("operation"))

            def queued(kind: Any, text: str, **kw: Any) -> Event:
                return Event(kind, text, offset, end, timestamp=ts, **kw)

            return _queue(rec, state, queued)
        if not isinstance(kind, str) or kind not in (*_INTERPRETED, "attachment"):
            state.count_opaque(kind if isinstance(kind, str) else "(no type)")
            return []
        attachment = json_object(rec.get("attachment"))
        if kind == "attachment":
            atype = attachment.get("type")
            if not (isinstance(atype, str) and _known_attachment(atype)):
                state.count_opaque(kind, atype if isinstance(atype, str) else None)
                return []
            state.count_interpreted(kind, atype)
        else:
            state.count_interpreted(kind, rec.get("subtype") if kind == "system" else None)
        lane = "sidechain" if rec.get("isSidechain") is True and not info.subagent else "main"
        uuid = ident(rec.get("uuid"))
        if isinstance(rec.get("cwd"), str):
            state.cwd = redact(rec["cwd"].replace("\n", " "))[:500]
        if ident(rec.get("sessionId")):
            state.session_id = rec["sessionId"]
            if not info.subagent and state.parent_session is None:
                # a subagent's file beside the sessions (2.0.x): its session is its parent's
                state.parent_session = _beside_sessions(PurePosixPath(info.path), rec["sessionId"])
        key = _dedupe_key(rec)
        if key is not None:
            if key in state.seen:
                return []
            state.remember("seen", key)
        out: list[Event] = []
        parent = ident(rec.get("parentUuid"))
        if uuid is not None:
            last = state.last_uuid.get(lane)
            # An edited first prompt starts a new root: a person's prompt with no parent
            # after the lane began (a compaction's boundary is a system record).
            # Only a person's prompt starts a branch: parallel tool calls are written as one
            # assistant record each, and each result points at its own call's record — a
            # parent that is not the last record, and no rewind.
            prompt = (
                kind == "user"
                and rec.get("isCompactSummary") is not True
                and rec.get("isMeta") is not True
                and not _is_tool_result(json_object(rec.get("message")).get("content"))
            )
            # (a record that does not say its parent at all — no "parentUuid" key, as tools
            # that write Claude Code's shape by hand do — continues in file order: no branch)
            new_root = (
                "parentUuid" in rec and parent is None and last is not None and lane == "main"
            )
            if prompt and (
                new_root
                or (
                    isinstance(parent, str)
                    and last is not None
                    and parent != last
                    and parent in state.known
                )
            ):
                said = (
                    "starts over from the beginning (an edited first prompt)"
                    if parent is None
                    else f"continues from earlier message {parent} (a rewind or an edited prompt)"
                )
                out.append(
                    Event(
                        "marker",
                        said,
                        offset,
                        end,
                        lane,
                        uuid=uuid,
                        marker="branch",
                        timestamp=ts,
                    )
                )
            state.last_uuid[lane] = uuid
            state.remember("known", uuid)
        # A record stamped before one the lane already rendered was written late: Claude Code
        # flushes an API retry notice after the answer that retry got (real12)
        latest = state.last_time.get(lane)
        late = ts is not None and latest is not None and _earlier(ts, latest)
        if ts is not None and not late:
            state.last_time[lane] = ts

        def ev(kind: Any, text: str, **kw: Any) -> Event:
            return Event(kind, text, offset, end, lane, uuid=uuid, timestamp=ts, **kw)

        # Who may type here: the person in a main file's main lane; a model everywhere else.
        writer = "person"
        if info.subagent or lane == "sidechain":
            internal = _INTERNAL_AGENT.match(PurePosixPath(info.path).name)
            writer = "machine" if internal else "model"
        message = json_object(rec.get("message"))
        if kind == "attachment":
            return out + _attachment(attachment, state, ev, writer)
        if kind == "system":
            return out + [_system(rec, ev, late)]
        machine = "machine-agent" if writer == "machine" else state.machine_lane(lane)
        if kind == "assistant":
            if machine is not None:  # a compaction agent's summary, a warm-up's reply: no task
                state.count_not_intent(machine)
                return out + [ev("meta", f"{machine} output")]
            synthetic = message.get("model") == _SYNTHETIC
            said = _result_text(message.get("content"))
            if rec.get("isApiErrorMessage") is True or (
                synthetic and _API_FAILURE_TEXT.match(said)
            ):
                # Claude Code's stand-in for an answer the model's API failed to give ("API
                # Error: 500 …"): the turn failed, it did not complete.
                return out + [ev("tool_result", said or "API error", tool=MODEL_API, is_error=True)]
            if synthetic:
                # Claude Code's own reply ("No response requested."), no word of the model's:
                # it neither answers the turn nor hides the question the agent last asked
                # (real13: Reinhartsamuel/TokenForge, a resumed 2.1.100 after /exit).
                return out + [ev("meta", f"Claude Code: {said}")]
            answered = _assistant(message, state, ev, writer)
            # The skill Claude Code says this answer was written under (2.1.x attributionSkill,
            # also in a subagent's file whose Skill call is its parent's): a measured use.
            attributed = skill_name(rec.get("attributionSkill"))
            if attributed and answered and all(e.skill is None for e in answered):
                answered[0] = replace(answered[0], skill=attributed)
            return out + answered

        # user lines: a prompt, tool results, or injected context
        content = message.get("content")
        marked = _marked_origin(rec.get("origin"))
        if marked is not None:  # Claude Code says who sent it (2.1.x): not the person
            # A tool's result answers its call whoever the record names as its sender (later
            # 2.1 versions mark results {"kind": "cli"}); only the text beside it is the sender's.
            out.extend(
                r
                for block in _blocks(content)
                if block.get("type") == "tool_result"
                for r in _tool_result(block, state, ev, writer)
            )
            said = text_of([b for b in _blocks(content) if b.get("type") != "tool_result"])
            if said.strip() or not _is_tool_result(content):
                state.count_not_intent(marked)
                if writer == "person":
                    _taken(said, state)
                out.append(ev("meta", f"{marked}: {said}"))
            return out
        if rec.get("isCompactSummary") is True:
            out.append(ev("compaction", text_of(content)))
            return out
        if rec.get("isMeta") is True:
            text = text_of(content)
            out.append(ev("meta", text, skill=_slash_skill(rec, text, state, writer)))
            return out
        for block in _blocks(content):
            btype = block.get("type")
            if btype == "tool_result":
                out.extend(_tool_result(block, state, ev, writer))
            elif btype == "text":
                out.extend(_typed(str(block.get("text", "")), state, ev, writer))
            elif btype == "image":
                out.append(ev("meta", "[image]"))
            elif btype is not None:
                state.count_opaque("user", btype)
        return out


def _beside_sessions(path: PurePosixPath, session: Any) -> str | None:
    """The parent session of a subagent's file that Claude Code 2.0.x wrote beside the sessions,
    ``<project>/agent-<id>.jsonl``, its records carrying the parent's ``sessionId`` (2.1 writes
    ``<session>/subagents/agent-<id>.jsonl``); None for any other file."""
    if not (path.name.startswith("agent-") and isinstance(session, str) and session):
        return None
    return session if session != path.stem else None


def _is_tool_result(content: Any) -> bool:
    """A user record that answers tool calls (not a prompt anyone typed)."""
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _known_attachment(atype: str) -> bool:
    return atype.startswith(_ATTACHMENT_META) or atype == _QUEUED_ATTACHMENT


def _earlier(ts: str, than: str) -> bool:
    """Whether timestamp ``ts`` is before ``than`` (ISO 8601; an unreadable one is not)."""
    try:
        a, b = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (ts, than))
        return a < b
    except (ValueError, TypeError):  # (one naive, one aware; not a date)
        return False


def _system(rec: dict[str, Any], ev: Any, late: bool = False) -> Event:
    sub = rec.get("subtype")
    if sub == "compact_boundary":
        meta = json_object(rec.get("compactMetadata"))
        why = f"{meta.get('trigger', '?')} compaction at {meta.get('preTokens', '?')} tokens"
        return ev("marker", why, marker="compaction")
    if sub == "api_error":  # a retry notice (2.1.x): the API failed, Claude Code tries again
        attempt, most = rec.get("retryAttempt"), rec.get("maxRetries")
        status = json_object(rec.get("error")).get("status")
        said = f"API error {status}" if isinstance(status, int) else "API error"
        if isinstance(attempt, int) and isinstance(most, int):
            said += f", retry {attempt} of {most}"
        if late:  # written after the answer its retry got: no failure of the turn
            return ev("meta", f"{said} (answered)")
        return ev("marker", said, marker="api_retry")
    if sub == "turn_duration":
        ms = rec.get("durationMs")
        took = f"turn took {ms / 1000:.0f}s" if isinstance(ms, (int, float)) else ""
        return ev("marker", took, marker="turn_end")
    return ev("meta", f"{sub or 'system'}: {as_text(rec.get('content', ''))}")


def _assistant(message: dict[str, Any], state: ParseState, ev: Any, writer: str) -> list[Event]:
    out: list[Event] = []
    model = ident(message.get("model"))
    if model and not model.startswith("<"):
        state.model = model
    person = writer == "person"
    for block in _blocks(message.get("content")):
        btype = block.get("type")
        if btype == "text":
            text = str(block.get("text", ""))
            if person:
                agent_said(text, state)
            out.append(ev("assistant", text))
        elif btype == "thinking":
            out.append(ev("thinking", str(block.get("thinking", ""))))
        elif btype in ("tool_use", "server_tool_use"):
            name = ident(block.get("name")) or "tool"
            call_id = ident(block.get("id"))
            args = json_object(block.get("input"))
            if call_id:
                state.open_call(call_id, name, _skill_used(name, args))
            if person:
                agent_acted(state)
            out.append(ev("tool_call", _call_text(name, args), call_id=call_id, tool=name))
        elif btype is not None:
            state.count_opaque("assistant", btype)
    return out


def _tool_result(block: dict[str, Any], state: ParseState, ev: Any, writer: str) -> list[Event]:
    call_id = ident(block.get("tool_use_id"))
    text = _result_text(block.get("content"))
    failed = block.get("is_error") is True or text.lstrip().startswith("<tool_use_error>")
    tool, skill = state.close_call(call_id, failed)
    out = [ev("tool_result", text, call_id=call_id, tool=tool, is_error=failed, skill=skill)]
    if writer != "person":
        return out
    feedback = rejection_feedback(text)
    if text.lstrip().startswith(INTERRUPTED):  # stopped mid-call: the next prompt refines
        state.interrupted, state.question = True, ""
    elif feedback is not None:  # the person said no to a tool use: what they say next corrects
        state.correction, state.question = True, ""
        if feedback:
            state.correction = False
            out.append(ev("user", feedback, origin="correction"))
    elif tool == "AskUserQuestion" and not failed:  # the person picked from the agent's menu
        out.append(ev("user", text, origin="answer"))
    return out


def ev_lane(ev: Any) -> str:
    """The lane an event constructor writes to (it is bound to one record)."""
    return str(ev("meta", "").lane)


def _marked_origin(origin: Any) -> str | None:
    """The kind of sender a record's ``origin`` names when it is not the person (2.1.x writes
    ``{"kind": "human"}`` on what the person typed, ``task-notification`` or ``peer`` else)."""
    kind = json_object(origin).get("kind")
    if not isinstance(kind, str) or kind == "human":
        return None
    return ident(kind) or "other-sender"


def _typed(text: str, state: ParseState, ev: Any, writer: str) -> list[Event]:
    """A user-role text: the person's prompt, or machine input, or the model's (subagents)."""
    out: list[Event] = []
    for what, part in classify(text):
        if what == "interrupted":
            if writer == "person":
                state.interrupted, state.question = True, ""
            out.append(ev("marker", "the person interrupted the agent", marker="interrupted"))
        elif what == "queued":
            out.extend(_deliver(part, state, ev) if writer == "person" else [ev("meta", part)])
        elif what != "user":
            if what == "meta" and part.startswith("command /"):
                state.last_command = part.removeprefix("command /")
            found = "command" if part.startswith("command") else machine_kind(part)
            if found is not None:
                state.count_not_intent(found)
                if found == "compaction-prompt" and writer != "person":
                    state.set_machine_lane(ev_lane(ev), "compaction-agent")
            if writer == "person":
                _taken(part, state)
            out.append(ev(what, part))
        elif writer == "machine":  # a compaction agent's input: the conversation to summarise
            state.count_not_intent("machine-agent")
            out.append(ev("meta", part))
        elif writer == "model" and part.strip() == WARMUP:  # Claude Code warming a subagent
            state.count_not_intent("warm-up")
            state.set_machine_lane(ev_lane(ev), "warm-up")
            out.append(ev("meta", "warm-up"))
        elif writer == "model":
            state.set_machine_lane(ev_lane(ev), None)  # a new task for the lane: its own again
            out.append(ev("user", part, origin="model"))
        elif not _popped(part, state):
            out.append(ev("user", part, origin=user_origin(part, state)))
    return out


# -- the prompt queue --------------------------------------------------------------------------


def _queue(rec: dict[str, Any], state: ParseState, new: Any) -> list[Event]:
    """``enqueue`` keeps a prompt typed while the agent works; ``remove`` (taken in mid-turn) and
    ``dequeue`` (sent as the next message) deliver it; ``popAll`` hands the queue back to the
    input box, where the person edits it and sends an ordinary prompt.

    Claude Code queues its task notifications in the same queue: each entry keeps its kind
    (from its marker) so a notification taken off the queue is machine text, and the person's
    prompts keep their own places: a dequeue without content takes the head, as Claude Code does,
    and a remove without content the first of the person's prompts (it is absorbed mid-turn).
    """
    op = rec.get("operation")
    content = rec.get("content")
    text = content if isinstance(content, str) and content.strip() else None
    if op == "enqueue":
        if text is not None:
            _push(state, redact(text[: CAPS["user"] + 4096])[: CAPS["user"]])
        return []
    if op == "popAll":
        state.queued.clear()
        state.queued_kinds.clear()
        return []
    if op not in ("remove", "dequeue"):
        return []
    if text is None:
        if not state.queued:
            return []
        _align(state)
        # A ``remove`` absorbs the person's prompt into the running turn (2.1.28x writes it with
        # its content and ``reason: absorbed_mid_turn``); a task notification queued before it
        # waits for the turn's end (2.1.39 writes that remove bare: handgemacht-ai/spotter's
        # 258c7280… fixture). A ``dequeue`` takes the head.
        at = 0
        if op == "remove":
            at = next((i for i, k in enumerate(state.queued_kinds) if k == "prompt"), 0)
        text, kind = _pop(state, at)
        if kind != "prompt":
            state.count_not_intent(kind)
            return [new("meta", f"{kind} taken from the queue")]
    return _deliver(text, state, new)


def _queued_kind(text: str) -> str:
    """A queue entry's kind: the person's ``prompt`` or the machine kind its marker says."""
    return machine_kind(text) or "prompt"


def _push(state: ParseState, text: str) -> None:
    _align(state)
    state.bounded("queued", text)
    state.bounded("queued_kinds", _queued_kind(text))


def _pop(state: ParseState, i: int) -> tuple[str, str]:
    _align(state)
    return state.queued.pop(i), state.queued_kinds.pop(i)


def _align(state: ParseState) -> None:
    """Kinds for entries of a state saved before kinds were kept (their prompts, then)."""
    missing = len(state.queued) - len(state.queued_kinds)
    if missing > 0:
        state.queued_kinds[:0] = [_queued_kind(q) for q in state.queued[:missing]]
    elif missing < 0:
        del state.queued_kinds[:-missing]


def _deliver(text: str, state: ParseState, ev: Any, mode: str | None = None) -> list[Event]:
    """A queued entry reaches the agent: the person's prompt as a ``queued`` user event, once;
    a task notification (by its marker or the record's ``commandMode``) as machine text."""
    shown = redact(text)
    key = normal(shown)[:_COMPARE_CHARS]
    for i, q in enumerate(state.queued):
        if normal(q)[:_COMPARE_CHARS] == key:
            _pop(state, i)
            break
    kind = machine_kind(shown) or (mode if mode not in (None, "prompt") else None)
    if kind is not None:
        state.count_not_intent(kind)
        return [ev("meta", shown)]
    if _QUEUED_COMMAND.match(shown):  # Claude Code runs it; its wrapper (and args) follow
        state.count_not_intent("queued-command")
        return [ev("meta", f"queued command {shown.split()[0][:80]}")]
    if key in state.delivered:  # already delivered (a remove, then its copy in a reminder)
        return []
    state.bounded("delivered", key)
    state.correction, state.question, state.interrupted = False, "", False
    return [ev("user", shown, origin="queued")]


def _taken(text: str, state: ParseState) -> None:
    """A queued entry handed over as a user message with no queue operation of its own (2.1.x
    sends the task notifications queued before an interruption so) is off the queue: a later
    ``remove`` without content takes the entry after it, not this one again."""
    if not state.queued:
        return
    key = normal(redact(text))[:_COMPARE_CHARS]
    for i, q in enumerate(state.queued):
        if normal(q)[:_COMPARE_CHARS] == key:
            _pop(state, i)
            return


def _popped(text: str, state: ParseState) -> bool:
    """Whether this user message only repeats prompts just delivered from the queue."""
    if not state.delivered:
        return False
    key = normal(redact(text))[:_COMPARE_CHARS]
    if key in state.delivered:
        state.delivered.remove(key)
        return True
    joined = " ".join(state.delivered)[:_COMPARE_CHARS]
    state.delivered.clear()  # the next message is new: a later repeat is typed again
    return key == joined


def _attachment(attachment: dict[str, Any], state: ParseState, ev: Any, writer: str) -> list[Event]:
    atype = str(attachment.get("type"))
    if atype == _QUEUED_ATTACHMENT:
        prompt = attachment.get("prompt", attachment.get("content"))
        text = prompt if isinstance(prompt, str) else text_of(prompt)
        if not text.strip():
            return []
        if writer != "person":
            return [ev("meta", text)]
        mode = ident(attachment.get("commandMode"))
        sender = _marked_origin(attachment.get("origin"))
        if mode == "bash":  # a shell command typed with `!`: Claude Code runs it
            mode = "shell-command"
        return _deliver(text, state, ev, sender or mode)
    body = next((attachment[k] for k in ("content", "stdout", "stderr") if attachment.get(k)), "")
    return [ev("meta", f"{atype}: {as_text(body)}")]


def _parent_order(
    lines: list[tuple[int, int, dict[str, Any]]],
) -> list[tuple[int, int, dict[str, Any]]]:
    """File order, except that a record never comes before its parent from the same delta."""
    in_delta = {rec["uuid"] for _, _, rec in lines if isinstance(rec.get("uuid"), str)}
    emitted: set[str] = set()
    waiting: dict[str, list[tuple[int, int, dict[str, Any]]]] = {}
    ordered: list[tuple[int, int, dict[str, Any]]] = []

    def emit(item: tuple[int, int, dict[str, Any]]) -> None:
        stack = [item]
        while stack:
            current = stack.pop()
            ordered.append(current)
            uuid = current[2].get("uuid")
            if isinstance(uuid, str):
                emitted.add(uuid)
                stack.extend(reversed(waiting.pop(uuid, [])))

    for item in lines:
        parent = item[2].get("parentUuid")
        if (
            isinstance(parent, str)
            and parent in in_delta
            and parent not in emitted
            and parent != item[2].get("uuid")
        ):
            waiting.setdefault(parent, []).append(item)
        else:
            emit(item)
    for rest in waiting.values():  # parents that never came (a cycle or a broken chain): file order
        ordered.extend(rest)
    return ordered


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    if isinstance(content, str) and content:
        return [{"type": "text", "text": content}]
    return []


def _dedupe_key(rec: dict[str, Any]) -> str | None:
    """``message.id:requestId`` plus the line's content: the same block written twice is one."""
    message = rec.get("message")
    if rec.get("type") != "assistant" or not isinstance(message, dict):
        return None
    mid, rid = message.get("id"), rec.get("requestId")
    if not isinstance(mid, str):
        return None
    body = json.dumps(message.get("content"), sort_keys=True, default=str)
    return f"{mid}:{rid}:{hashlib.sha1(body.encode(), usedforsecurity=False).hexdigest()[:12]}"


def _call_text(name: str, args: dict[str, Any]) -> str:
    for key in ("command", "file_path", "pattern", "url", "skill", "prompt", "path"):
        if isinstance(args.get(key), str) and len(args) <= 3:
            rest = {k: v for k, v in args.items() if k != key}
            return args[key] + (f"\n{as_text(rest)}" if rest else "")
    return as_text(args)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return text_of(content) or as_text(content)


def _slash_skill(rec: dict[str, Any], text: str, state: ParseState, writer: str) -> str | None:
    """The skill a slash command loaded (see the module docstring), or None. The name is the
    command's when it names the same folder (a plugin's ``ns:name`` keeps its namespace)."""
    command, state.last_command = state.last_command, ""
    m = SKILL_LOADED.match(text.strip())
    if m is None or rec.get("sourceToolUseID") or writer != "person" or not command:
        return None  # a load with no slash command before it answers a Skill call (2.0.x)
    folder = PurePosixPath(m.group(1).rstrip("/")).name
    return skill_name(command) if command.split(":")[-1] == folder else None


def _skill_used(name: str, args: dict[str, Any]) -> str | None:
    """The skill a call would use (counted on its successful result)."""
    if name == "Skill":
        return skill_name(args.get("skill") or args.get("command"))
    if name in ("Read", "View"):
        m = SKILL_FILE.search(str(args.get("file_path", "")))
        return m.group(1) if m else None
    if name == "Bash":
        m = SHELL_READ.search(str(args.get("command", "")))
        return m.group(1) if m else None
    return None


def _record_keys(rec: dict[str, Any]) -> list[str]:
    """What names a record wherever Claude Code copies it: its uuid (a session resumed into a
    new file, ``--fork-session``: records copied as they were, the session id rewritten), and
    its time and content (the Agent SDK's fork gives the records it copies new uuids)."""
    keys: list[str] = []
    uid = rec.get("uuid")
    if isinstance(uid, str) and uid:
        keys.append(f"cc:{uid}")
    at = rec.get("timestamp")
    body = rec.get("message")
    if isinstance(at, str) and at and isinstance(body, dict) and not _typed_prompt(rec):
        # Content with an id of its own — an answer (its message.id), a tool's result (its
        # tool_use_id) —, never what two sessions may say alike: a person's typed prompt (two
        # `claude -p` runs of a script, the same millisecond), a system line, a hook's output.
        if rec.get("type") != "assistant" and not _has_tool_result(body):
            return keys
        text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        digest = hashlib.sha256(f"{rec.get('type')}\n{text}".encode()).hexdigest()[:16]
        keys.append(f"cc:{at}:{digest}")
    return keys


def _has_tool_result(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id")
        for b in content
    )


def _typed_prompt(rec: dict[str, Any]) -> bool:
    """A user record that is text a person (or a script) typed: no id of its own."""
    message = rec.get("message")
    return rec.get("type") == "user" and isinstance(message, dict) and not _has_tool_result(message)


def _answers(rec: dict[str, Any]) -> bool:
    """An answer or a tool's result: what tells whose a prompt before it was."""
    message = rec.get("message")
    return rec.get("type") == "assistant" or (
        isinstance(message, dict) and _has_tool_result(message)
    )
