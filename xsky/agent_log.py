"""Agent logs: where an agent's transcript is in the artifact store, reading it back, and
rendering its events for a person. (Written by ``activities/agent_transcripts.AgentLog``.)

One JSON object per line, each with ``type`` and ``at``:

| type | fields |
|---|---|
| attempt | runId, agentId, taskId, dispatch, attempt, planVersion, role, model |
| message | role (system, user, assistant), content |
| llm | model, ms, promptTokens, completionTokens, totalTokens |
| tool_call | id, name, arguments |
| permission | tool, arguments, effect (allow, ask, deny), reason, by |
| tool_result | id, name, ms, content |
| outcome | status (completed, question, needs_approval, failed), error, tokens, iterations, ms, result, request |
| leader | point (result, question, approval, stall), verdict, reason, detail, by, model — what the leader's coordinator said of this agent's work (written by the ``coordinate`` activity; the leader applies it within the person's bounds, see the run's ``ledger``) |
"""

from __future__ import annotations

import json
import re
from typing import Any

from xsky.artifacts import artifact_path

TRANSCRIPT_NAME = "transcript.jsonl"
# Why an agent that ended has no transcript (activities/agents/activity.py: UNLOGGED)
UNLOGGED_SAID = "a no-op or a loop's gather keeps no transcript: its result is all it did"


def transcript_key(run_id: str, agent_id: str) -> str:
    """Where an agent's log is in the store (``<run>/<agent>/transcript.jsonl``)."""
    return artifact_path(run_id, agent_id, TRANSCRIPT_NAME)


# Where a line says when it was written: log_line writes "type" then "at", so it is near the start.
_AT = re.compile(rb'"at": ?"([^"]*)"')


def _at(line: bytes) -> bytes:
    found = _AT.search(line, 0, 200)
    return found[1] if found else b""


def with_tails(log: bytes, tails: list[tuple[str, bytes]]) -> bytes:
    """An agent log with the lines its attempts' kept outcomes carry, each ``(written, lines)``
    after every line written by the time it was (ISO times in UTC compare as text): where an
    append of its own would have put it, so that a log read again only grows at its end, as a
    follower reading it by its length needs. A carried line also appended (an outcome written
    whose write was then taken for failed) is shown once."""
    tails = [(at or _at(lines).decode(), lines) for at, lines in tails if lines]
    if not tails:
        return log
    lines = log.splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        lines[-1] += b"\n"  # (a line cut short stays one line of its own)
    present = set(lines)
    out: list[bytes] = []
    i = 0
    for written, carried in sorted(tails, key=lambda tail: tail[0]):
        while i < len(lines) and _at(lines[i]) <= written.encode():
            out.append(lines[i])
            i += 1
        out += [
            line
            for line in carried.splitlines(keepends=True)
            if line.rstrip(b"\n") + b"\n" not in present
        ]
        if out and not out[-1].endswith(b"\n"):
            out[-1] += b"\n"
    out.extend(lines[i:])
    return b"".join(out)


def parse_lines(text: str) -> list[dict[str, Any]]:
    """Events of a transcript's text; a line cut short by a crash (or still being written) is skipped."""
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict) and "type" in event:
            events.append(event)
    return events


def _short(value: Any, width: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.rstrip()
    return text if len(text) <= width else text[: width - 1] + "…"


def render_event(event: dict[str, Any], width: int = 2000) -> str:
    """One event as plain text lines for a terminal (the CLI adds colour)."""
    at = str(event.get("at", ""))[11:19]
    kind = event.get("type")
    if kind == "attempt":
        return (
            f"{at} ── attempt {event.get('attempt')} of {event.get('taskId')} ({event.get('agentId')}), dispatch "
            f"{event.get('dispatch')}, plan v{event.get('planVersion')} · role {event.get('role')}"
            + (f" · model {event['model']}" if event.get("model") else "")
        )
    if kind == "message":
        return f"{at} {event.get('role')}: {_short(event.get('content') or '', width)}"
    if kind == "llm":
        return f"{at}   (model {event.get('model')}: {event.get('ms')} ms, {event.get('totalTokens') or 0} tokens)"
    if kind == "tool_call":
        return f"{at} → {event.get('name')}({_short(event.get('arguments'), width)})"
    if kind == "permission":
        return f"{at}   permission {event.get('effect')}: {event.get('tool')} {event.get('arguments')} — {event.get('reason')}"
    if kind == "tool_result":
        return f"{at} ← {event.get('name')} ({event.get('ms')} ms): {_short(event.get('content') or '', width)}"
    if kind == "outcome":
        parts = [f"{at} ══ {event.get('status')}"]
        if event.get("error"):
            parts.append(f"error: {event['error']}")
        if event.get("request"):
            parts.append(f"waiting: {event['request']}")
        if event.get("tokens") is not None:
            parts.append(f"{event['tokens']} tokens")
        if event.get("iterations") is not None:
            parts.append(f"{event['iterations']} iterations")
        parts.append(f"{event.get('ms')} ms")
        return " · ".join(parts)
    if kind == "in_doubt":
        then = (
            "run again (repeating it is harmless)"
            if event.get("repeated")
            else f"a person is asked (#{event.get('asked')}): {event.get('why')}"
        )
        return f"{at} ?? in doubt: {event.get('tool')} [{event.get('call')}] may have run in an attempt cut off before it ended; {then}"
    if kind == "in_doubt_decided":
        return f"{at} ?? {event.get('tool')} [{event.get('call')}]: a person answered {event.get('choice')}"
    if kind == "leader":
        detail = f" — {_short(event['detail'], width)}" if event.get("detail") else ""
        return (
            f"{at} ◆ leader on the {event.get('point')}: {event.get('verdict')} "
            f"({_short(event.get('reason') or '', width)}){detail} · by {event.get('by', 'leader')}"
        )
    return (
        f"{at} {kind}: {_short({k: v for k, v in event.items() if k not in ('type', 'at')}, width)}"
    )
