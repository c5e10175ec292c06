"""What an attempt does with a tool call that may have run (xsky/in_doubt.py has the request).

How an attempt knows a call may have run:

- a model's calls: the checkpoint names the call that may be running (``Checkpoint.calling``)
  in the save that comes before it anyway (the one listing the turn's calls, or the one
  answering the call before it) — no write of its own;
- a direct agent's one call: when it must not be repeated unasked, a ``calling`` line in the
  dispatch's ledger, written before it (:meth:`AttemptLedger.calling`) — one write, for such
  calls only; any other call is in doubt when the attempt before it lost its worker.

A call in doubt that may be repeated runs again (with the dispatch's ``XSKY_ATTEMPT_KEY``),
said on the board and in the log. One that may not ends the attempt with a question a person
answers (``again``, ``skip``, ``done``); the agent's next dispatch acts on the answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from activities.agents.attempt import Attempt
from activities.agents.transcripts import AgentLog
from activities.tools import NeedsHuman, ToolResult
from activities.tools.shell import recorded_end
from xsky.in_doubt import CHOICES, Doubt, told
from xsky.leader.state import Answer


def repeated_note(doubt: Doubt) -> str:
    return (
        f"in doubt: {doubt.shown()} may have run in an attempt cut off before it ended; run again "
        "(repeating it is harmless; same XSKY_ATTEMPT_KEY)"
    )


def ask(
    doubt: Doubt, answers: Sequence[Answer], log: AgentLog, progress: Callable[[str], None]
) -> NeedsHuman:
    """The question that ends the attempt: the call is in doubt and only a person may say."""
    number = doubt.asked(answers) + 1
    log.event("in_doubt", call=doubt.call, tool=doubt.tool, asked=number, why=doubt.why)
    progress(f"in doubt: {doubt.shown()} may have run; asking a person ({doubt.why})")
    return NeedsHuman(
        "question",
        question=doubt.question(number),
        tool=doubt.tool,
        arguments=doubt.arguments,
        choices=list(CHOICES),
    )


async def before_direct_call(
    a: Attempt, name: str, args: dict[str, Any], log: AgentLog
) -> ToolResult | None:
    """Before a direct agent's call: None to make it (marked in the ledger first when it may
    not be repeated unasked), or the result a person's answer gives in its place. Raises
    NeedsHuman when it may have run and a person must decide."""
    if not a.gate.tracked(name):
        return None
    why = a.gate.not_repeatable(name, args, a.config)
    if why is None and a.start.calling is not None and not _ended(a, name):
        # An earlier attempt's worker judged the call must not be repeated unasked and marked
        # it begun: its word stands, whatever this worker's own rules say (two workers whose
        # settings differ, as during a rolling change, ran a payment twice without a word).
        why = "an earlier attempt's worker marked it as a call that must not run twice unasked"
    doubt = Doubt(a.key.task_id, name, name, args, why or "")
    if why is None:
        if a.start.previous is not None and not a.start.record_cleared and _lost(a.start.previous):
            log.event("in_doubt", call=name, tool=name, repeated=True)
            a.beat.progress(repeated_note(doubt))
        return None
    if a.start.calling is not None and not _ended(a, name):
        raise ask(doubt, a.answers, log, a.beat.progress)
    decided = doubt.decision(a.answers, 0)
    if decided is not None and decided[1] != "again":
        _, choice, note = decided
        log.event("in_doubt_decided", call=name, tool=name, choice=choice)
        if choice == "done":
            text = (
                note or "(marked done by a person: the call had run; its output was not recorded)"
            )
        else:
            text = "(not run again: a person chose to skip this call after it may have run; its output is unknown)"
        return ToolResult(text, {"inDoubt": choice})
    await asyncio.to_thread(a.ledger.calling, a.number, doubt.shown())
    return None


def _lost(previous: str) -> bool:
    """Did the attempt before end without a word after its call may have run: its worker lost,
    or lost while it waited for the store to keep what the call did (ledger.py says so)?"""
    return previous.startswith("worker lost") or "the artifact store at " in previous


def _ended(a: Attempt, name: str) -> bool:
    """Did the call end after all? A direct command's watchdog records its end (the shell tool
    then returns that record instead of running it)."""
    path = a.ctx.command_record
    return name == "shell" and path is not None and recorded_end(path, 1) is not None


__all__ = ["ask", "before_direct_call", "repeated_note", "told"]
