"""Finished agent conversations as JSONL transcripts, so our own agents feed the skill pipeline.

``$XSKY_HOME/transcripts/<run>/<agent>-d<dispatch>-<key>.jsonl``: a ``session`` line, a
``message`` line per chat message (OpenAI shape), an ``outcome`` line. Written once per
finished attempt, atomically (a temporary name the watcher ignores, then a rename), so
the watcher never sees half a conversation. The format is read back by
``xsky/skills/transcripts/xsky_agent.py``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import re
import threading
import time
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from activities.agents.key import AgentKey
from activities.agents.ledger import KEPT_OUTCOME, attempts_folder, task_prefix
from activities.fsio import atomic_write
from activities.tools import cap_text
from xsky.agent_log import transcript_key, with_tails
from xsky.artifacts import run_folder, safe_component
from xsky.leader.tasks import task_id_for
from xsky.plan.models import RoleCapabilityModel
from xsky.runs import DecisionRecord
from xsky.storage import ObjectStore

log = logging.getLogger("xsky.agent_log")


def transcript_path(root: Path, agent: AgentKey, key: str) -> Path:
    name = f"{safe_component(agent.agent_id, 60)}-d{agent.dispatch}-{safe_component(key, 40)}.jsonl"
    return root / run_folder(agent.run_id) / name


def write_transcript(
    root: Path,
    agent: AgentKey,
    role: RoleCapabilityModel,
    model: str,
    key: str,
    messages: list[dict[str, Any]],
    status: str,
    error: str | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    now = datetime.now(UTC).isoformat()
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "runId": agent.run_id,
            "agentId": agent.agent_id,
            "taskId": agent.task_id,
            "dispatch": agent.dispatch,
            "role": role.name,
            "model": model,
            "timestamp": now,
            **(extra or {}),
        }
    ]
    lines += [{"type": "message", "message": m} for m in messages]
    lines.append({"type": "outcome", "status": status, "error": error, "timestamp": now})
    path = transcript_path(root, agent, key)
    text = "".join(json.dumps(line, ensure_ascii=False, default=str) + "\n" for line in lines)
    atomic_write(path, text, sync=False)
    return path


# -- the agent log: every agent's conversation, as it happens, in the artifact store ---------------

# Tool results and messages longer than this are cut in the log (the checkpoint keeps them whole).
LOG_TEXT_CHARS = 20_000


def append_event(store: ObjectStore, key: str, kind: str, **fields: Any) -> None:
    """One event at the end of an agent's log, at once (redacted; best effort: a full disk
    loses the line, never the work). An attempt's own lines go through its :class:`LogTail`."""
    data = log_line(key, kind, **fields)
    if data is not None:
        _written(store, key, data)


# Fields of log lines that the product fills with its own names and numbers.
_NAMES = frozenset(
    {"runId", "agentId", "taskId", "dispatch", "attempt", "planVersion", "role", "model", "id"}
    | {"ms", "promptTokens", "completionTokens", "totalTokens", "iteration", "step", "tokens"}
    | {"iterations", "pendingCalls", "status", "effect", "by", "asked", "repeated"}
)


def log_line(key: str, kind: str, **fields: Any) -> bytes | None:
    """An event as a line of the log ``key``, redacted (None: it cannot be written)."""
    from xsky.security.redact import redact_value

    line: dict[str, Any] = {
        "type": kind,
        "at": datetime.now(UTC).isoformat(timespec="milliseconds"),
    }
    # What the product itself names (ids, counters, the role, the model) is not searched for
    # credentials: every other field — arguments, content, results, errors — is.
    line.update({k: v if k in _NAMES else redact_value(v) for k, v in fields.items()})
    try:
        return (json.dumps(line, ensure_ascii=False, default=str) + "\n").encode()
    except Exception as e:  # noqa: BLE001 - a log line is best effort
        log.warning("could not write the agent log %s: %s", key, e)
        return None


def _written(store: ObjectStore, key: str, data: bytes) -> None:
    """Lines appended to a log. On an object store the write is a network call: it goes to a
    writer thread, so the agent's event loop (and its heartbeats) never waits for it."""
    if store.shared:
        _LOG_WRITER.put(store, key, data)
    else:
        _append(store, key, data)


def _append(store: ObjectStore, key: str, data: bytes) -> None:
    try:
        store.append(key, data)
    except Exception as e:  # noqa: BLE001 - a log line is best effort, whatever the store says
        log.warning("could not write the agent log %s in %s: %s", key, store.where, e)


class LogWriter:
    """Agent-log lines for an object store, written by a few daemon threads: a log always by
    the same thread, so its lines stay in the order written. Each write is one append (an
    attempt's batch of lines, :class:`LogTail`). Best effort, as the lines are: a backlog over
    ``limit`` writes drops new ones (counted in the worker's log), and a process that exits
    does not wait for the store (``flush`` gives a graceful shutdown a bounded wait)."""

    def __init__(self, threads: int = 8, limit: int = 50_000):
        self.limit = limit
        self.queues: list[queue.SimpleQueue[tuple[ObjectStore, str, bytes]]] = []
        self.pending = 0
        self._pending_by_key: dict[str, int] = {}  # the writes of each log not yet done
        self.dropped = 0
        self._lock = threading.Lock()
        self._started = False
        self._threads = threads

    def _start(self) -> None:
        for i in range(self._threads):
            q: queue.SimpleQueue[tuple[ObjectStore, str, bytes]] = queue.SimpleQueue()
            self.queues.append(q)
            threading.Thread(target=self._run, args=(q,), name=f"xsky-log-{i}", daemon=True).start()
        self._started = True

    def put(self, store: ObjectStore, key: str, data: bytes) -> None:
        with self._lock:
            if not self._started:
                self._start()
            if self.pending >= self.limit:
                self.dropped += 1
                if self.dropped in (1, 100, 10_000):
                    log.warning("agent log lines dropped (the store is behind): %d", self.dropped)
                return
            self.pending += 1
            self._pending_by_key[key] = self._pending_by_key.get(key, 0) + 1
        self.queues[zlib.crc32(key.encode()) % len(self.queues)].put((store, key, data))

    def busy(self, key: str) -> bool:
        """Are lines of the log ``key`` still on their way?"""
        with self._lock:
            return key in self._pending_by_key

    def _run(self, q: queue.SimpleQueue[tuple[ObjectStore, str, bytes]]) -> None:
        while True:
            store, key, data = q.get()
            try:
                _append(store, key, data)
            finally:
                with self._lock:
                    self.pending -= 1
                    left = self._pending_by_key.pop(key, 1) - 1
                    if left:
                        self._pending_by_key[key] = left

    def flush(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the lines already given; were they all written?"""
        end = time.monotonic() + timeout
        while self.pending and time.monotonic() < end:
            time.sleep(0.05)
        return not self.pending


_LOG_WRITER = LogWriter()


def flush_logs(timeout: float = 5.0) -> bool:
    """At a worker's shutdown: the agent-log lines still on their way, for up to ``timeout``."""
    return _LOG_WRITER.flush(timeout)


# A line waits at most this long before it is written (``starter.py log --follow`` shows a
# working agent's lines this much later at most); an attempt's end writes what is left.
FLUSH_SECONDS = 2.0


class LogTail:
    """An attempt's agent-log lines on their way to the store, written in batches: at most one
    append every :data:`FLUSH_SECONDS` while the attempt works, and one at its end
    (:meth:`flush`, called by the activity whatever the end) — every append is a request on
    S3, and an instant agent's lines take one. The lines keep the order they were given in
    (an object store's appends go through :class:`LogWriter`, one thread per log). Outside a
    running event loop a line is written at once."""

    def __init__(self, store: ObjectStore | None, key: str):
        self.store = store  # None: an agent that keeps no log (:data:`UNLOGGED`)
        self.key = key
        self._lines: list[bytes] = []
        # The attempt's log once its first line is written (:class:`AgentLog`): an attempt
        # stopped before it says how it ended says "stopped" through it.
        self.attempt_log: AgentLog | None = None
        self._timer: asyncio.TimerHandle | None = None

    @property
    def keeps(self) -> bool:
        return self.store is not None

    def add(self, data: bytes) -> None:
        if self.store is None:
            return
        self._lines.append(data)
        if self._timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._timer = loop.call_later(FLUSH_SECONDS, self.flush)

    def for_outcome(self) -> bytes:
        """The lines held, taken to travel in the attempt's kept outcome (its one write at the
        end: AttemptLedger.complete) — on an object store, where the append they would take is
        a request paid for. On a local disk they are appended as ever: an append costs no
        request there, and the log stays one file a person can read or follow. Nor while an
        earlier batch of the log is still on its way: it would land after them, and a reader
        following the log by its length would see it grow in the middle."""
        if self.store is None or self.store.local(self.key) is not None:
            return b""
        if _LOG_WRITER.busy(self.key):
            return b""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        data, self._lines = b"".join(self._lines), []
        return data

    def put_back(self, data: bytes) -> None:
        """Lines :meth:`for_outcome` took, when the outcome could not be kept: they are written
        as any other (before the lines added since)."""
        if data:
            self._lines.insert(0, data)

    def flush(self) -> None:
        """Write the lines held, in one append (best effort, as every log line)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._lines or self.store is None:
            return
        data, self._lines = b"".join(self._lines), []
        _written(self.store, self.key, data)


def read_log(
    store: ObjectStore,
    run_id: str,
    agent_id: str,
    execution_id: str | None,
    seen: dict[str, tuple[str, bytes]],
) -> bytes:
    """An agent's log as written so far (b"" for none): what was appended to it and, on an
    object store, the last lines its attempts' kept outcomes carry (:meth:`LogTail.for_outcome`),
    each where it was written. ``execution_id``: the run's first execution, which names its
    task's kept outcomes (None when it is not known: every kept outcome of the run is listed to
    find its task's); ``seen``: the carried lines read so far, by outcome (a follower reads each
    kept outcome once, and lists them once a read)."""
    key = transcript_key(run_id, agent_id)
    data = store.appended(key)
    if store.local(key) is not None:
        return data
    names = _kept_outcomes(store, run_id, agent_id, execution_id)
    for name in names:
        if name not in seen:
            seen[name] = _carried(store, name)
    return with_tails(data, [seen[name] for name in names])


def has_log(store: ObjectStore, run_id: str, agent_id: str, execution_id: str | None) -> bool:
    """Has the agent written a log (appended lines, or on an object store a kept outcome that
    may carry its lines)? A listing or two, not a read of the log."""
    key = transcript_key(run_id, agent_id)
    if store.keys(key):
        return True
    return store.local(key) is None and bool(_kept_outcomes(store, run_id, agent_id, execution_id))


# A Temporal run id (what names a run's first execution in a ledger's name), or the name a
# ledger without one goes by: what stands before a task's id in the names of its files.
_EXECUTION = r"(?:run|[0-9A-Fa-f-]{36})"


def _kept_outcomes(
    store: ObjectStore, run_id: str, agent_id: str, execution_id: str | None
) -> list[str]:
    """The names of the agent's task's kept outcomes: by the task's prefix, or without the
    run's first execution every kept outcome of the run is listed to find its task's."""
    task_id = task_id_for(agent_id)
    if execution_id is not None:
        prefix = task_prefix(run_id, execution_id, task_id)
        return [n for n in store.keys(prefix) if KEPT_OUTCOME.fullmatch(n[len(prefix) :])]
    folder = attempts_folder(run_id)
    task = re.escape(safe_component(task_id, 60))
    ours = re.compile(rf"{_EXECUTION}-{task}-v{KEPT_OUTCOME.pattern}")
    return [n for n in store.keys(folder) if ours.fullmatch(n[len(folder) :])]


def _carried(store: ObjectStore, name: str) -> tuple[str, bytes]:
    """The lines a kept outcome carries, and when they were written (("", b"") for none)."""
    try:
        kept = json.loads(store.get(name))
    except (FileNotFoundError, ValueError):
        return "", b""  # removed meanwhile, or not ours
    if not isinstance(kept, dict) or not isinstance(kept.get("log"), str):
        return "", b""
    return str(kept.get("logWritten") or ""), kept["log"].encode()


class AgentLog:
    """Appends one agent's events to ``<artifacts>/<run>/<agent>/transcript.jsonl`` as they happen
    (through the attempt's :class:`LogTail`: in batches), so ``starter.py log … --follow`` shows
    an agent at work. Every attempt starts with an ``attempt`` line; secrets are redacted before
    anything is written. Writing is best effort: a full disk loses log lines, never the agent's
    work."""

    def __init__(
        self,
        tail: LogTail,
        key: AgentKey,
        attempt: int,
        role: str,
        model: str | None,
        decisions: list[DecisionRecord],
    ):
        self.tail = tail
        self.started = time.monotonic()
        self.ended = False  # its outcome line is written
        # The attempt's permission decisions, as its gate makes them (Gate.decisions): each is
        # written once, before the result or the outcome that follows it.
        self._decisions = decisions
        self.decisions_seen = 0
        self.event(
            "attempt",
            runId=key.run_id,
            agentId=key.agent_id,
            taskId=key.task_id,
            dispatch=key.dispatch,
            attempt=attempt,
            planVersion=key.plan_version,
            role=role,
            model=model,
        )
        tail.attempt_log = self

    def event(self, kind: str, **fields: Any) -> None:
        if not self.tail.keeps:
            return  # not even the line's making
        data = log_line(self.tail.key, kind, **fields)
        if data is not None:
            self.tail.add(data)

    def message(self, message: dict[str, Any]) -> None:
        content = message.get("content")
        if isinstance(content, str):
            content = cap_text(content, LOG_TEXT_CHARS, "message")[0]
        self.event("message", role=message.get("role"), content=content)

    def llm(self, model: str, seconds: float, usage: Any) -> None:
        self.event(
            "llm",
            model=model,
            ms=round(seconds * 1000, 1),
            promptTokens=getattr(usage, "prompt_tokens", None),
            completionTokens=getattr(usage, "completion_tokens", None),
            totalTokens=getattr(usage, "total_tokens", None),
        )

    def tool_call(self, call_id: str, name: str, arguments: Any) -> None:
        self.event("tool_call", id=call_id, name=name, arguments=arguments)

    def decisions(self) -> None:
        """The permission decisions made since the last call of this (the gate keeps them all)."""
        for d in self._decisions[self.decisions_seen :]:
            self.event(
                "permission",
                tool=d.tool,
                arguments=d.arguments,
                effect=d.effect,
                reason=d.reason,
                by=getattr(d, "by", "auto"),
            )
        self.decisions_seen = len(self._decisions)

    def tool_result(self, call_id: str, name: str, content: str, seconds: float) -> None:
        self.decisions()
        cut = cap_text(content, LOG_TEXT_CHARS, "tool output")[0]
        self.event("tool_result", id=call_id, name=name, ms=round(seconds * 1000, 1), content=cut)

    def outcome(
        self,
        status: str,
        *,
        error: str | None = None,
        tokens: int | None = None,
        iterations: int | None = None,
        result: str | None = None,
        request: str | None = None,
    ) -> None:
        self.decisions()
        self.ended = True
        self.event(
            "outcome",
            status=status,
            error=error,
            tokens=tokens,
            iterations=iterations,
            ms=round((time.monotonic() - self.started) * 1000, 1),
            result=None if result is None else result[:2000],
            request=request,
        )
