"""What each attempt of an agent's activity ended with, kept beside its checkpoint.

Temporal retries an attempt whether its code failed or its worker died; xsky tells the
two apart (issue: a lost worker is not the agent's failure). An attempt that fails
writes why here before it raises; an attempt that finds no line for the one before it
knows that one's worker was lost (killed, crashed, cut off: no heartbeat) or timed out.
The error budget (``AgentInput.error_attempts``) counts only written failures; lost
workers spend Temporal's separate allowance (``RunOptions.lost_worker_retries``), and only an
attempt that follows a written error waits the error backoff (``AgentInput.error_backoff``).

Each attempt also writes that it started, so a stale attempt — its worker was stopped (not
killed), the server gave up on it and a later attempt began elsewhere, then the worker was
resumed — sees that it is superseded and writes nothing more (its end would count against
the attempt that replaced it).

An attempt that ends with an outcome (completed, or waiting for a person) writes the outcome
beside the ledger, durably, *before* it reports it (:meth:`AttemptLedger.complete`): when the
report is lost — the server was down, the worker died a moment later — the next attempt of the
dispatch finds it (:meth:`AttemptLedger.outcome`) and returns it without running anything
again. Beside it too: the dispatch's lease (activities/agents/lease.py) and the record a direct
command's watchdog writes when the command ends (:meth:`AttemptLedger.command_record`).

What it costs: every store call is a request someone pays for on S3, so an attempt writes once
where it can. The kept outcome is its ledger line too (it names its attempt and kind:
:meth:`AttemptLedger.entries` reads it in its place), so keeping it is one write. A first attempt
of a dispatch (:attr:`Start.first`) reads nothing and writes no ``started`` line: nothing of its
dispatch can be in the store yet, and only a *later* attempt's line tells a stale one that it
was superseded — every retry still begins with its line.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from temporalio.exceptions import ApplicationError

from activities.agents.key import AgentKey
from activities.fsio import atomic_write
from activities.storage.local import LocalStore
from xsky.artifacts import run_folder, safe_component
from xsky.runs import AgentOutcome
from xsky.storage import ObjectStore

# The activity ids the leader gives a dispatch's attempts (workflows/leader/io.py), and, with
# "-r<n>", an activity of the dispatch sent again to another host (workflows/leader/hosts.py).
# The ledger line an attempt writes before a call that must not be repeated unasked.
CALLING = "calling"
_DISPATCH_ACTIVITY = re.compile(r".+-v\d+-d\d+(?:-r(\d+))?")


def reroute_of(activity_id: str) -> int | None:
    """Which activity of its dispatch this is: 0 for the one the leader scheduled, n for the
    one it sent again to another host the n-th time; None for an id the leader did not give
    (an activity scheduled by someone else: anything may have come before it)."""
    found = _DISPATCH_ACTIVITY.fullmatch(activity_id)
    return None if found is None else int(found[1] or 0)


def first_of_dispatch(attempt: int, activity_id: str) -> bool:
    """Is this the first attempt of its dispatch, with nothing of it in the store yet?

    Attempt 1 of the activity the leader scheduled for the dispatch. Not attempt 1 of an
    activity sent again to another host: an attempt of the activity before it may have kept an
    outcome, or still hold a lease."""
    return attempt == 1 and reroute_of(activity_id) == 0


def attempts_folder(run_id: str) -> str:
    """Where a run's ledgers, kept outcomes, leases and command records are."""
    return f"{run_folder(run_id)}/_attempts/"


def task_prefix(run_id: str, execution_id: str | None, task_id: str) -> str:
    """What the names of one task's ledgers, kept outcomes, leases and command records begin
    with (``<run>/_attempts/<execution>-<task>-v``): the plan version and the dispatch follow."""
    execution, task = safe_component(execution_id or "run", 40), safe_component(task_id, 60)
    return f"{attempts_folder(run_id)}{execution}-{task}-v"


# After a task's prefix: the name of a kept outcome.
KEPT_OUTCOME = re.compile(r"\d+-d\d+\.outcome\.json")


OUTCOME_SUFFIX = ".outcome.json"  # beside a dispatch's ledger: the outcome it kept
# Under <home>/commands: command records a local store's full or read-only disk did not take.
SPARE_FOLDER = "spare"
_MADE: set[Path] = set()  # spare folders this process has made


@dataclass(frozen=True)
class AttemptLedger:
    """One dispatch's ledger in the store (``<run>/_attempts/<name>.jsonl``) and, beside it,
    its kept outcome, its lease and its command's record: where every worker finds them."""

    store: ObjectStore
    key: str
    # The writing attempt's activity among those of its dispatch (reroute_of): an activity sent
    # again to another host counts its attempts from 1 again, so its lines say which it is, and
    # an attempt comes after another by (reroute, attempt) — as the lease orders them.
    reroute: int = 0

    @classmethod
    def of(cls, store: ObjectStore, key: AgentKey, reroute: int = 0) -> AttemptLedger:
        prefix = task_prefix(key.run_id, key.execution_id, key.task_id)
        return cls(store, f"{prefix}{key.plan_version}-d{key.dispatch}.jsonl", reroute)

    @classmethod
    def at(cls, path: Path) -> AttemptLedger:
        """A ledger file in a local folder (tests, tools)."""
        return cls(LocalStore(path.parent), path.name)

    @classmethod
    def owning(cls, store: ObjectStore, key: str) -> AttemptLedger:
        """The ledger a key of its dispatch names: itself, or the outcome kept beside it."""
        return cls(
            store,
            key.removesuffix(OUTCOME_SUFFIX) + ".jsonl" if key.endswith(OUTCOME_SUFFIX) else key,
        )

    def _beside(self, suffix: str) -> str:
        return self.key.removesuffix(".jsonl") + suffix

    @property
    def outcome_key(self) -> str:
        return self._beside(OUTCOME_SUFFIX)

    @property
    def command_key(self) -> str:
        """Where a direct command's watchdog's record of how the command ended is kept."""
        return self._beside(".command.json")

    @property
    def lease_key(self) -> str:
        return self._beside(".lease")

    def command_record(
        self, home: Path, *, fetch: bool = True, after_error: bool = False
    ) -> tuple[Path, Callable[[], None] | None]:
        """Where a direct command's watchdog writes how the command ended, and how that reaches
        the store: a local store's own file (nothing to do), or a file in the worker's ``home``,
        fetched from the object store before the command (an earlier attempt's record, on any
        machine; not by a dispatch's first attempt, ``fetch=False``) and put there after.

        With none in the store, a file already on this machine's disk is the record of an
        earlier attempt here whose worker died before it could report (one that reports
        removes its file: :meth:`forget_local_record`) — the command ended, and it is kept, so
        a retry on the same host returns it instead of running the command again. Unless the
        attempt before this one ended in an error (``after_error``): elsewhere, after that
        record, and its error cleared the store's record, so the command runs again.

        A local store's record is the store's own file; where the store's disk cannot take it
        (full, read-only) the watchdog writes it to the worker's ``home`` instead
        (:meth:`command_spare`), where a later attempt on this machine finds it.

        Its folder is made here (a local call, no store request): the watchdog writes the record
        but makes no folder, and nothing else of the dispatch may have been written yet — an
        attempt's lease comes only once it has lasted (lease.first_write_after)."""
        here = self.store.local(self.command_key)
        if here is not None:
            spare = self.command_spare(home)
            if after_error:
                spare.unlink(missing_ok=True)
            elif fetch and not here.exists() and spare.is_file():
                return spare, None  # an earlier attempt's, written where the store could not
            with contextlib.suppress(OSError):  # a read-only store: the spare place takes it
                here.parent.mkdir(parents=True, exist_ok=True)
            return here, None
        path = home / "commands" / self.command_key
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if not fetch:
                raise FileNotFoundError(self.command_key)
            data = self.store.get(self.command_key)
        except FileNotFoundError:
            if not fetch or after_error:
                path.unlink(missing_ok=True)
        else:
            atomic_write(path, data)

        def publish() -> None:
            if path.is_file():
                self.store.put(self.command_key, path.read_bytes(), sync=True)

        return path, publish

    def command_spare(self, home: Path) -> Path:
        """Where the watchdog writes a command's record when its place cannot take it (a local
        store's disk full or read-only): the worker's own disk, one folder for all (the
        watchdog makes no folder), the key quoted into one name."""
        folder = home / "commands" / SPARE_FOLDER
        if folder not in _MADE:
            folder.mkdir(parents=True, exist_ok=True)
            _MADE.add(folder)
        return folder / quote(self.command_key, safe="")

    def forget_local_record(self, home: Path) -> None:
        """The attempt has reported (its outcome kept, or its error written): with an object
        store, its command's record on this machine's disk has done its work (the store holds
        what a later attempt needs), so it goes — a worker's disk does not fill with one file
        per command. A local store's record is the store's own object: it stays."""
        # best effort: an outcome already kept must not turn into a failure here (a local
        # store's record is the store's own object and stays; its spare copy, if any, goes)
        with contextlib.suppress(OSError):
            if self.store.local(self.command_key) is None:
                (home / "commands" / self.command_key).unlink(missing_ok=True)
            else:
                self.command_spare(home).unlink(missing_ok=True)

    def has_outcome(self) -> bool:
        return self.store.exists(self.outcome_key)

    def complete(
        self, attempt: int, outcome: AgentOutcome, log: bytes = b"", conversation: bytes = b""
    ) -> None:
        """Keep ``attempt``'s outcome durably, before it is reported (a stale attempt's too:
        its work is done, and the attempt that replaced it returns it instead of redoing it).
        One write: the outcome is also the attempt's ledger line (its ``attempt`` and ``kind``),
        and it carries ``log``, the attempt's last log lines, where an append of their own
        would be a request (transcripts.LogTail.for_outcome), with when they were written:
        transcripts.read_log puts them in their place; and ``conversation``, a model agent's
        checkpoint with its final answer, where a save of its own would be a request
        (checkpoint.Checkpoints.fold: the saved checkpoint names this outcome, and its load
        reads the conversation from here)."""
        if outcome.attempt != attempt:
            outcome = outcome.model_copy(update={"attempt": attempt})
        data = outcome.model_dump_json(by_alias=True).encode()
        if log:  # (extra fields: AgentOutcome reads past them, a worker of any version too)
            written = datetime.now(UTC).isoformat(timespec="milliseconds")
            text = json.dumps(log.decode("utf-8", "replace"))
            data = data[:-1] + f',"log":{text},"logWritten":"{written}"}}'.encode()
        if not conversation:
            self.store.put(self.outcome_key, data, sync=True)
            return
        data = data[:-1] + b',"checkpoint":' + conversation + b"}"  # (Checkpoint's JSON)
        # Fenced, as the checkpoint's own save was (Checkpoints.save): only where no attempt of
        # the dispatch kept one yet — a stopped attempt's late write does not land over the
        # outcome, and conversation, of the attempt that replaced it.
        if self.store.put_if(self.outcome_key, data, None, sync=True) is None:
            try:
                there = self.store.get(self.outcome_key)
            except FileNotFoundError:
                there = None
            if there != data:  # (else its own write, landed, whose answer was lost)
                raise ApplicationError(
                    f"another attempt of this dispatch kept its outcome first ({self.key}): "
                    "this one ends without writing over it, and the next returns that one",
                    type="CheckpointMoved",
                    non_retryable=False,
                )

    def outcome(self) -> AgentOutcome | None:
        """The outcome an attempt of this dispatch ended with, if one did."""
        kept = self.kept()
        return kept[0] if kept is not None else None

    def kept(self) -> tuple[AgentOutcome, str | None] | None:
        """The kept outcome, and — when its attempt kept its conversation with it (fold) — the
        checkpoint version that conversation followed (``Checkpoint.folded_after``)."""
        try:
            text = self.store.get(self.outcome_key).decode("utf-8")
        except FileNotFoundError:
            return None
        try:
            outcome = AgentOutcome.model_validate_json(text)
        except ValueError:
            return None  # not ours (atomic writes leave no half): run as if none were there
        if '"checkpoint":' not in text:
            return outcome, None
        carried = json.loads(text).get("checkpoint")  # (Checkpoint's JSON, by its aliases)
        after = carried.get("foldedAfter") if isinstance(carried, dict) else None
        return outcome, after if isinstance(after, str) else None

    def returned(self, attempt: int, outcome: AgentOutcome) -> None:
        """``attempt`` returned the outcome an earlier attempt kept (nothing ran again)."""
        self._write(
            {
                "attempt": attempt,
                "kind": "returned",
                "reason": f"the outcome attempt {outcome.attempt} kept ({outcome.kind}); "
                "nothing ran again",
            },
            sync=False,
        )

    def entries(self) -> list[dict[str, object]]:
        """Every line of the ledger, the kept outcome's in its place (after the lines of the
        attempts up to its own)."""
        return _with_kept(self._lines(), self.outcome())

    def _lines(self) -> list[dict[str, object]]:
        lines = self.store.appended(self.key).decode("utf-8", "replace").splitlines()
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a crash mid-write
        return out

    def errors(self) -> int:
        return sum(1 for e in self._lines() if e.get("kind") == "error")

    def superseded(self, attempt: int) -> bool:
        """Has a later attempt than ``attempt`` started (this one is stale)? Every attempt but a
        dispatch's first writes its line as it starts, so the lines alone say."""
        return self._after(self._lines(), attempt)

    def _after(self, lines: list[dict[str, object]], attempt: int) -> bool:
        """Does a line of ``lines`` come from an attempt after this ledger's ``attempt``?"""
        return any(_order(e) > (self.reroute, attempt) for e in lines)

    def record(self, attempt: int, kind: str, reason: str) -> int:
        """Write how ``attempt`` ended (nothing when a later attempt has started); returns the
        errors recorded so far."""
        lines = self._lines()
        errors = sum(1 for e in lines if e.get("kind") == "error")
        if self._after(lines, attempt):  # superseded: its end is not its to write
            return errors
        self._write({"attempt": attempt, "kind": kind, "reason": reason[:300]}, sync=True)
        return errors + (kind == "error")

    def begin(
        self, attempt: int, heartbeat_timeout: float | None, last_word: str | None = None
    ) -> Start:
        """Write that ``attempt`` started; how the one before it ended. ``last_word``: the
        previous attempt's last heartbeat note — an attempt that could not write its end (a
        full store) is not taken for a lost worker. The first attempt of an activity sent again
        to another host (``reroute``): the attempt before it is the ledger's last."""
        rerouted = self.reroute > 0 and attempt == 1
        kept = self.outcome()
        before = _with_kept(self._lines(), kept)
        self._write({"attempt": attempt, "kind": "started", "reason": ""}, sync=False)
        if rerouted:
            # The attempt before it is the ledger's last, whatever its number: its end, or its
            # "started" line and no end (its worker was lost); none at all: it is the first.
            last = next((e for e in reversed(before) if e.get("kind") != CALLING), None)
            ended = None if last is None or last.get("kind") == "started" else last
            ran_before = last is not None
        else:
            ended = next(
                (
                    e
                    for e in reversed(before)
                    if _order(e) == (self.reroute, attempt - 1)
                    and e.get("kind") not in ("started", CALLING)
                ),
                None,
            )
            ran_before = attempt > 1  # (a rerouted activity's 2nd attempt or later too)
        errors = sum(1 for e in before if e.get("kind") == "error")
        # A call that must not be repeated unasked, started by an attempt that then ended
        # without an outcome (its end would have been kept): it may have run.
        # (An attempt that wrote an error after it ended with the call's failure: not in doubt.)
        failed = {_order(e) for e in before if e.get("kind") == "error"}
        calling = next(
            (
                str(e.get("reason"))
                for e in reversed(before)
                if e.get("kind") == CALLING and _order(e) not in failed
            ),
            None,
        )
        if not ran_before:
            return Start(None, False, errors, kept, calling=calling)
        if ended is not None:
            return Start(
                f"{ended.get('kind')}: {ended.get('reason')}",
                ended.get("kind") == "error",
                errors,
                kept,
                calling=calling,
                record_cleared=ended.get("kind") == "error",
            )
        if last_word is not None and "the artifact store at " in last_word:
            return Start(f"error: {last_word}", True, errors + 1, kept, calling=calling)
        beat = f" for {heartbeat_timeout:g}s" if heartbeat_timeout else ""
        return Start(
            f"worker lost: no heartbeat{beat} (killed, crashed, stopped or cut off)",
            False,
            errors,
            kept,
            calling=calling,
        )

    def calling(self, attempt: int, call: str) -> None:
        """``attempt`` is about to make ``call``, one that must not run again unasked: a later
        attempt that finds this line (and no outcome) knows it may have run. Written durably,
        before the call; only such calls are (an ordinary one costs no write)."""
        self._write({"attempt": attempt, "kind": CALLING, "reason": call[:300]}, sync=True)

    def _write(self, entry: dict[str, object], *, sync: bool) -> None:
        if self.reroute:  # (left out for the first activity: its lines read as before)
            entry = {**entry, "reroute": self.reroute}
        self.store.append(self.key, (json.dumps(entry) + "\n").encode(), sync=sync)


@dataclass(frozen=True)
class Start:
    """What an attempt learns from the ledger as it starts."""

    previous: str | None  # how the attempt before it ended (None for a first attempt)
    after_error: bool  # that attempt ended in an error: this one waits the error backoff
    errors: int  # attempts of this dispatch that ended in an error so far
    kept: AgentOutcome | None = None  # the outcome an earlier attempt kept, if one did
    # The dispatch's first attempt: nothing of its dispatch can be in the store yet (nothing
    # was read, and nothing needs to be: no kept outcome, lease, command record or checkpoint).
    fresh: bool = False
    # A call an earlier attempt of the dispatch began and never reported (see
    # :meth:`AttemptLedger.calling`): how it was shown; None when there is none.
    calling: str | None = None
    # That attempt wrote its error, and with it cleared its command's record: a record left on
    # this machine's disk is older than that error (not one a worker lost waiting for the
    # store left, which counts as an error too but wrote none: its record stands).
    record_cleared: bool = False

    @classmethod
    def first(cls) -> Start:
        """A dispatch's first attempt: nothing before it, nothing read (see the module)."""
        return cls(None, False, 0, fresh=True)


def _number(entry: dict[str, object]) -> int:
    n = entry.get("attempt")
    return n if isinstance(n, int) else 0


def _order(entry: dict[str, object]) -> tuple[int, int]:
    """Where a line's attempt comes among the dispatch's: (reroute, attempt)."""
    r = entry.get("reroute")
    return (r if isinstance(r, int) else 0, _number(entry))


def _with_kept(
    lines: list[dict[str, object]], kept: AgentOutcome | None
) -> list[dict[str, object]]:
    """The ledger's lines with the kept outcome's own line in its place: before the first line
    of a later attempt (a ledger written before the outcome was its line has it already)."""
    if kept is None or any(
        _number(e) == kept.attempt and e.get("kind") == kept.kind for e in lines
    ):
        return lines
    entry: dict[str, object] = {"attempt": kept.attempt, "kind": kept.kind, "reason": ""}
    at = next((i for i, e in enumerate(lines) if _number(e) > kept.attempt), len(lines))
    return [*lines[:at], entry, *lines[at:]]
