"""Why a task's attempts ended: read from the attempt ledgers the agents' activity writes
into the artifact store (activities/agents/ledger.py), one file per dispatch.

A ledger holds a line for every attempt that began and for every one that ended in an
error or a timeout; an attempt with no end whose dispatch went on to a later attempt lost
its worker (killed, crashed, stopped, cut off: its heartbeats stopped). The board's own
notes (``TaskView.retries``) are the fallback where the store is not readable (workers on
other machines)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from activities.agents.ledger import AttemptLedger, attempts_folder, task_prefix
from xsky.leader.tasks import TaskView
from xsky.storage import ObjectStore

# After the task's prefix: a dispatch's ledger, or the outcome its first attempt kept (which
# wrote no ledger line of its own: activities/agents/ledger.py).
_FILE = re.compile(r"(\d+)-d(\d+)\.(jsonl|outcome\.json)")
# Ledger kinds of an attempt that ended with an outcome it kept (activities/agents/ledger.py).
OUTCOMES = frozenset({"completed", "question", "needs_approval"})
# What an earlier dispatch that ended on one of these did: the task was dispatched again.
_ASKED = {
    "question": "it asked a person a question; dispatched again with the answer",
    "needs_approval": "a tool call waited for a person's approval; dispatched again once decided",
}


@dataclass(frozen=True)
class AttemptEnd:
    """How one attempt of a task ended: ``error``, ``timeout``, ``worker lost`` — or, for an
    earlier dispatch, ``question`` or ``needs_approval`` (it waited for a person)."""

    dispatch: int
    attempt: int  # Temporal's attempt number inside its dispatch
    kind: str
    reason: str

    def line(self, dispatches: int) -> str:
        if self.kind in _ASKED:  # a whole dispatch that waited for a person
            return f"dispatch {self.dispatch}: {self.kind}: {self.reason}"
        where = f" (dispatch {self.dispatch})" if dispatches > 1 else ""
        return f"attempt {self.attempt}{where}: {self.kind}: {self.reason}"


def attempt_ends(
    store: ObjectStore, run_id: str, first_run_id: str | None, task: TaskView
) -> list[AttemptEnd] | None:
    """Every ended attempt of ``task``, dispatch by dispatch; None when no ledger of the run
    is readable here (then the board's notes are all there is)."""
    try:
        if not store.keys(attempts_folder(run_id)):
            return None
        prefix = task_prefix(run_id, first_run_id, task.id)
        keys = store.keys(prefix)
    except Exception:  # noqa: BLE001 - a store this process cannot reach: the board's notes
        return None
    ledgers: dict[int, list[AttemptLedger]] = {}
    seen: set[str] = set()
    for key in keys:
        found = _FILE.fullmatch(key[len(prefix) :])
        if found:
            ledger = AttemptLedger.owning(store, key)
            if ledger.key not in seen:  # its entries hold its kept outcome too
                seen.add(ledger.key)
                ledgers.setdefault(int(found[2]), []).append(ledger)
    if task.activity_attempt > 1:  # lost workers write nothing: the dispatch may have no file
        ledgers.setdefault(task.attempt, [])
    ends: list[AttemptEnd] = []
    for dispatch in sorted(ledgers):
        recorded: dict[int, AttemptEnd] = {}
        started = 0  # the latest attempt that wrote it began: every one before it ended
        for ledger in ledgers[dispatch]:
            for entry in ledger.entries():
                number, kind = entry.get("attempt"), str(entry.get("kind"))
                if not isinstance(number, int):
                    continue
                if kind == "started":
                    started = max(started, number)
                else:
                    recorded[number] = AttemptEnd(dispatch, number, kind, str(entry.get("reason")))
        # the current dispatch went on to attempt N: the ones before it all ended
        current = task.activity_attempt if dispatch == task.attempt else 0
        # An attempt that kept an outcome explains nothing unless a later one followed it (its
        # report was lost, and the later one returned what it kept).
        for number in [n for n, e in recorded.items() if e.kind in OUTCOMES]:
            kind = recorded[number].kind
            if number >= max(started, current) and dispatch != task.attempt and kind in _ASKED:
                # An earlier dispatch that ended asking a person: why there was another.
                recorded[number] = AttemptEnd(dispatch, number, kind, _ASKED[kind])
            elif number >= max(started, current):
                del recorded[number]
            else:
                recorded[number] = AttemptEnd(
                    dispatch,
                    number,
                    recorded[number].kind,
                    "its report did not reach the server; the next attempt returned the outcome it kept",
                )
        last = max([*recorded, started - 1, current - 1], default=0)
        for number in range(1, last + 1):
            ends.append(
                recorded.get(number)
                or AttemptEnd(
                    dispatch,
                    number,
                    "worker lost",
                    "no heartbeat (killed, crashed, stopped or cut off)",
                )
            )
    return ends


def retry_lines(task: TaskView, ends: list[AttemptEnd] | None) -> list[str]:
    """One line per ended attempt of a task that was tried more than once: from its ledgers,
    else from the board's notes (``attempt 3 after worker lost: …``)."""
    if ends:
        dispatches = len({e.dispatch for e in ends})
        return [e.line(dispatches) for e in ends]
    return list(task.retries)
