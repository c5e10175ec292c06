"""Who wrote a user turn: the rules every adapter shares, from structure only.

An adapter first tells machine input (task notifications, hook output, injected context,
compaction prompts) from the person's words; what is left is a ``user`` event whose
:data:`~xsky.skills.trajectory.UserOrigin` says how it came:

- ``model``: a subagent's task prompt (written by the parent agent);
- ``correction``: the first prompt after the person interrupted the agent or rejected a
  tool use (structural evidence only: telling a critique from a new request by its words
  is the atom splitter's job);
- ``answer``: a short reply to an agent turn that asked a question or offered options, or a
  bare menu choice (``1``, ``y``, ``p``) at any time: it stays with the turn that asked;
- ``prompt``: anything else the person typed.

The state these rules need (did the agent just ask? was it just interrupted?) lives in the
adapter's :class:`~xsky.skills.transcripts.ParseState`, so a delta edge between the
question and its answer changes nothing.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

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


def short_reply(text: str) -> bool:
    words = text.split()
    return 0 < len(words) <= _REPLY_WORDS and len(text.strip()) <= _REPLY_CHARS


def menu_choice(text: str) -> bool:
    return bool(_MENU.match(text))


def user_origin(text: str, state: ParseState) -> UserOrigin:
    """The origin of the person's turn ``text``, consuming the state that decided it."""
    correction, asked = state.correction, state.asked
    state.correction = state.asked = False
    if correction:
        return "correction"
    if (asked and short_reply(text)) or menu_choice(text):
        return "answer"
    return "prompt"


def agent_said(text: str, state: ParseState) -> None:
    """An agent's visible text: the person's next turn answers it if it asked."""
    if text.strip():
        state.asked = asks(text)


def agent_acted(state: ParseState) -> None:
    """An agent's tool call: the turn goes on, so an earlier question was not its last word."""
    state.asked = False


_SPACE = re.compile(r"\s+")
_IMAGE_LINE = re.compile(r"(?m)^\s*\[image\]\s*$")


def normal(text: str) -> str:
    """A text as compared across its copies: image placeholders out, whitespace collapsed."""
    return _SPACE.sub(" ", _IMAGE_LINE.sub("", text)).strip()


def fingerprint(text: str) -> str:
    return hashlib.sha1(normal(text).encode(), usedforsecurity=False).hexdigest()[:16]
