"""Who wrote a user turn: the rules every adapter shares, from structure only.

An adapter first tells machine input (task notifications, hook output, injected context,
compaction prompts) from the person's words; what is left is a ``user`` event whose
:data:`~xsky.skills.trajectory.UserOrigin` says how it came:

- ``model``: a subagent's task prompt (written by the parent agent);
- ``correction``: the first prompt after the person rejected a tool use;
- ``after_interrupt``: the first prompt after the person interrupted the agent (structural
  evidence only: telling a refinement from a new goal typed at once by its words is the
  atom splitter's job);
- ``answer``: a short reply that approves, refuses or picks from what an agent turn asked or
  offered, or a bare menu choice (``1``, ``y``, ``p``) at any time: it stays with the turn
  that asked;
- ``prompt``: anything else the person typed.

The state these rules need (did the agent just ask? was it just interrupted?) lives in the
adapter's :class:`~xsky.skills.transcripts.ParseState`, so a delta edge between the
question and its answer changes nothing.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from xsky.security.redact import redact
from xsky.skills.trajectory import UserOrigin

if TYPE_CHECKING:
    from xsky.skills.transcripts import ParseState

# A bare menu choice or yes/no: never a task of its own, asked or not.
_MENU = re.compile(r"(?i)^\s*(?:[a-z]|\d{1,2}|y|n|yes|no|yep|nope|ok|okay|k)\s*[.)!]?\s*$")
_REPLY_WORDS = 4  # a reply this short to a question is its answer ("go ahead", "option 2")
_REPLY_CHARS = 40
# How an agent offers a choice: an enumerated list, a (y/n), an invitation to pick.
_OPTION_LINE = re.compile(
    r"(?m)^\s*(?:\(?[a-h1-9]\)|[1-9][.)]|\*\*(?:option\s+)?[a-h1-9][.):]?\*\*|[-*]\s+\*\*[a-h1-9][.):])"
)
_INVITES = re.compile(
    r"(?i)\b(?:would you like|do you want|shall i|should i|which (?:one|option|approach|do you)|"
    r"let me know (?:which|if|whether)|want me to|\(y/n\)|\[y/n\]|pick one|choose one)"
)
_TAIL = 800  # only the end of an agent turn asks what comes next


def asks(text: str) -> bool:
    """Whether an agent's text ends its turn with a question or a choice of options."""
    tail = text.rstrip()[-_TAIL:]
    if not tail:
        return False
    if tail.endswith("?") or _INVITES.search(tail):
        return True
    last_lines = [line for line in tail.splitlines() if line.strip()][-3:]
    if any(line.rstrip().endswith("?") for line in last_lines):
        return True
    return len(_OPTION_LINE.findall(tail)) >= 2


# How a reply to a question starts: an approval, a refusal, a pick.
_REPLY = re.compile(
    r"(?i)^(?:yes|yeah|yep|yup|sure|ok(?:ay)?|go|proceed|continue|do it|please|no|nope|not|"
    r"don'?t|both|neither|all|none|option|first|second|third|last|same|the|lgtm|sounds good|"
    r"looks good|approved?|agreed?|correct|right|exactly|[a-h1-9][.):]?)\b"
)
_WORDS = re.compile(r"[a-z0-9][a-z0-9_.\-]+")
_QUESTION_CHARS = 400  # of the agent's question, kept to recognise a reply that picks from it


def short_reply(text: str) -> bool:
    words = text.split()
    return 0 < len(words) <= _REPLY_WORDS and len(text.strip()) <= _REPLY_CHARS


def menu_choice(text: str) -> bool:
    return bool(_MENU.match(text))


def answers(text: str, question: str) -> bool:
    """Whether a short reply answers the question: it approves, refuses or picks, or every word
    of it is among the question's ("Postgres" to "Postgres or SQLite?"). A short new ask
    ("run the tests" to "Anything else?") does not."""
    if not question or not short_reply(text):
        return False
    if _REPLY.match(text.strip()):
        return True
    words = [w for w in _WORDS.findall(text.lower()) if len(w) > 2]
    return bool(words) and all(w in question for w in words)


def user_origin(text: str, state: ParseState) -> UserOrigin:
    """The origin of the person's turn ``text``, consuming the state that decided it."""
    correction, question, interrupted = state.correction, state.question, state.interrupted
    state.correction, state.question, state.interrupted = False, "", False
    if correction:
        return "correction"
    if menu_choice(text):
        state.count_not_intent("menu-letter")
        return "answer"
    if interrupted:
        return "after_interrupt"
    if answers(text, question):
        return "answer"
    return "prompt"


def agent_said(text: str, state: ParseState) -> None:
    """An agent's visible text: the person's next turn answers it if it asked."""
    if text.strip():
        asked = asks(text)
        state.question = redact(text.rstrip()[-_QUESTION_CHARS:]).lower() if asked else ""


def agent_acted(state: ParseState) -> None:
    """An agent's tool call: the turn goes on, so an earlier question was not its last word."""
    state.question = ""


_SPACE = re.compile(r"\s+")
_IMAGE_LINE = re.compile(r"(?m)^\s*\[image\]\s*$")


def normal(text: str) -> str:
    """A text as compared across its copies: image placeholders out, whitespace collapsed."""
    return _SPACE.sub(" ", _IMAGE_LINE.sub("", text)).strip()


def fingerprint(text: str) -> str:
    return hashlib.sha1(normal(text).encode(), usedforsecurity=False).hexdigest()[:16]
