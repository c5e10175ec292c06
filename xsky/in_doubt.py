"""A tool call that may have run: the request a person answers, and what the answer means.

An attempt that finds a call started and not ended (its worker died during it) cannot know
whether the call did its work. When the call must not run again unasked
(:func:`xsky.security.idempotence.not_repeatable`), the attempt ends with a question whose
answers are fixed (:data:`~xsky.security.idempotence.CHOICES`): ``again`` runs it again,
``skip`` goes on without it, ``done`` (or ``done: what it returned``) takes it as done. The
leader refuses any other answer (``HumanRequest.choices``).

The question's text names the call and how many times it has been in doubt (``[call c-7,
#2]``): the agent finds a person's answer by it on its next dispatch, and an answer given for
an earlier doubt about the same call is never taken for a new one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xsky.leader.state import Answer
from xsky.security.idempotence import CHOICES, choice_of

_MARK = re.compile(r"\[call (?P<call>[^,\]]+), #(?P<n>\d+)\]")


@dataclass(frozen=True)
class Doubt:
    """One call in doubt: which (``call``: the model's call id, or the direct agent's tool),
    what it is, why it may not simply run again, and the answers people gave about it."""

    task_id: str
    call: str
    tool: str
    arguments: dict[str, Any]
    why: str

    def shown(self) -> str:
        """The call as a person reads it: a command as written, else tool(arguments)."""
        command = self.arguments.get("command")
        if self.tool == "shell" and isinstance(command, str):
            return f"`{command if len(command) <= 120 else command[:119] + '…'}`"
        args = json.dumps(self.arguments, ensure_ascii=False, default=str)
        return f"{self.tool}({args if len(args) <= 120 else args[:119] + '…'})"

    def question(self, number: int) -> str:
        return (
            f"{self.task_id}: {self.shown()} may have run: its worker died during the call "
            f"[call {self.call}, #{number}]. It is not repeated without your say ({self.why}). "
            "Answer again to run it again, skip to go on without it, or done (or done: what it "
            "returned) if it ran."
        )

    def answers(self, given: Sequence[Answer]) -> list[tuple[int, Answer]]:
        """The answers about this call, by the number of the doubt they answered, in order."""
        found = []
        for answer in given:
            mark = _MARK.search(answer.question)
            if (
                mark is not None
                and mark["call"] == self.call
                and answer.question.startswith(f"{self.task_id}: ")
            ):
                found.append((int(mark["n"]), answer))
        return sorted(found, key=lambda pair: pair[0])

    def asked(self, given: Sequence[Answer]) -> int:
        """How many doubts about this call people have answered so far."""
        return max((n for n, _ in self.answers(given)), default=0)

    def decision(self, given: Sequence[Answer], after: int) -> tuple[int, str, str] | None:
        """The latest answer about this call given for a doubt numbered above ``after`` (the
        last one acted on), as (its number, choice, note); None when there is none."""
        newer = [(n, a) for n, a in self.answers(given) if n > after]
        if not newer:
            return None
        n, answer = newer[-1]
        choice, note = choice_of(answer.answer)
        return (n, choice, note) if choice else None


def is_doubt(question: str) -> bool:
    """Is this a question about a call in doubt (:meth:`Doubt.question`)?"""
    return _MARK.search(question) is not None


def told(choice: str, note: str) -> str:
    """What an agent's model is told of a call a person decided not to run again."""
    if choice == "skip":
        return (
            "SKIPPED: this call may have run before (its worker died during it) and a person "
            "chose not to run it again. Its result is unknown; go on without it, and do not "
            "call it again."
        )
    return (
        "DONE: this call had run before its worker died during it, a person says"
        + (f"; what it returned: {note}" if note else "; its output was not recorded")
        + ". Do not call it again."
    )


__all__ = ["CHOICES", "Doubt", "is_doubt", "told"]
