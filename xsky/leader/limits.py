"""How much of what people and agents send a run keeps: caps on every text in its state.

Everything a run keeps is in its state, carried by every continue-as-new and handed (in part)
to every attempt: a text that could grow without bound — three nudges of 1.5 MiB made one
activity's input 4.7 MB, and the run's every workflow task then failed for good — is capped
here. A person's text over its cap is refused with the cap in the message (an update's
validator says it; a signal's refusal is on the board and in the permission log), and an
agent's (its progress notes, its questions, its errors) is cut with a mark. What must stay
whole — a plan's text, a tool call a person approves, which must match the call exactly —
reaches an attempt by reference when it is large (workflows/leader_bounds.py).
"""

from __future__ import annotations

NUDGE_CHARS = 8 * 1024  # one nudge
NUDGES_PER_TASK = 20  # nudges a task keeps (each goes to every later attempt of it)
ANSWER_CHARS = 64 * 1024  # a person's answer to a question or an escalation
PAUSE_REASON_CHARS = 1000
REPLAN_PROMPT_CHARS = 16 * 1024  # what a person asks the planner to change
SKIP_RESULT_CHARS = 64 * 1024  # a skipped task's result, handed to its dependents inline
ROLE_TEXT_CHARS = 64 * 1024  # a role's description or system prompt (define_role)
QUESTION_CHARS = 8 * 1024  # an agent's question to a person
ERROR_CHARS = 4000  # a task's error on the board
NOTE_CHARS = 500  # an agent's progress note, how its previous attempt ended
PAYLOAD_CHARS = 200  # of a refused message, shown in the permission log
# An attempt's input (its JSON): larger ones go to the artifact store and travel as a
# reference (Temporal warns at 256 KiB and refuses payloads over 2 MiB).
INPUT_BUDGET = 256 * 1024


def over(what: str, text: str, cap: int, fix: str) -> str | None:
    """The refusal for ``text`` longer than ``cap`` characters (None when it fits)."""
    if len(text) <= cap:
        return None
    return f"the {what} is {len(text):,} characters, over the cap of {cap:,}; {fix}"


def cut(text: str, cap: int) -> str:
    """``text``, cut to ``cap`` characters with a mark saying how much went."""
    if len(text) <= cap:
        return text
    return text[: max(0, cap - 40)] + f" … [{len(text) - cap + 40:,} characters cut]"
