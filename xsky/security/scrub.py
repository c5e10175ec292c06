"""Secrets' own values out of text: each value the worker handed out as a secret, and the
encodings that carry it into text unchanged, replaced by a marker naming its variable.

:mod:`xsky.security.redact` finds credentials by their shape, in transcripts nobody vouched
for. This module knows the values themselves — the worker's secrets and what ``${VAR}``
references resolved to for MCP servers — so a server that prints its token to stderr, echoes
it in a tool's result or puts it in a tool's description never carries it past the worker:
``[secret ${GITHUB_TOKEN}]`` takes its place. It is pure: the values live in
:mod:`activities.sandbox.secrets`, which applies it.

The forms matched: the value as it is, URL-encoded (``%2F`` and ``+`` for a space), escaped
as in a JSON string, and in base64 (standard and URL-safe) when it has at least
:data:`MIN_ENCODED` characters — also inside a longer base64 text, at any of the three byte
alignments (``Basic base64(user:token)``), which leaves the characters around it shared with
its neighbours in place. Values shorter than :data:`MIN_LENGTH` are words and numbers more
often than secrets: replacing them everywhere would mangle text, so they are not matched.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

from pydantic import BaseModel

MIN_LENGTH = 6
MIN_ENCODED = 8


def marker(name: str) -> str:
    """What a secret's value becomes in text: its variable's name, never its value."""
    return f"[secret ${{{name}}}]"


def forms(value: str) -> list[str]:
    """The texts that carry ``value`` (itself first; none for a value too short to match)."""
    if len(value) < MIN_LENGTH:
        return []
    found = [value, quote(value, safe=""), quote_plus(value, safe=""), json.dumps(value)[1:-1]]
    raw = value.encode()
    if len(value) >= MIN_ENCODED:
        for alphabet in (base64.b64encode, base64.urlsafe_b64encode):
            found.append(alphabet(raw).decode())  # on its own, with its padding
            found += [_inner(alphabet, raw, offset) for offset in range(3)]
    return list(dict.fromkeys(f for f in found if len(f) >= MIN_LENGTH))


def _inner(alphabet: Any, raw: bytes, offset: int) -> str:
    """The base64 characters that only ``raw``'s bits make, when ``offset`` bytes come before
    it (mod 3) and any bytes after: the part found wherever it sits in a longer encoding."""
    text = alphabet(b"\0" * offset + raw).decode().rstrip("=")
    start = -(-offset * 8 // 6)  # the first character holding no bit of the bytes before
    end = (offset + len(raw)) * 8 // 6  # past the last character holding no bit of those after
    return text[start:end]


class Scrubber:
    """The secrets' values one process knows, and the text with them replaced.

    Values are added as they are handed out (from any thread: a log line may be scrubbed
    while an activity adds a value); a value added twice keeps its first name.
    """

    def __init__(self, values: Iterable[tuple[str, str]] = ()) -> None:
        # The pattern of every form, and each form's variable: swapped as one, so a reader in
        # another thread never sees a pattern without its names.
        self._state: tuple[re.Pattern[str] | None, dict[str, str]] = (None, {})
        self._lock = threading.Lock()
        for name, value in values:
            self.add(name, value)

    def __bool__(self) -> bool:
        return self._state[0] is not None

    def add(self, name: str, value: str) -> None:
        new = [f for f in forms(value) if f not in self._state[1]]
        if not new:
            return
        with self._lock:
            names = dict(self._state[1])
            for form in new:
                names.setdefault(form, name)
            # Longest first: the alternation tries its branches in order, so a whole encoding
            # wins over a part of it.
            ordered = sorted(names, key=len, reverse=True)
            self._state = (re.compile("|".join(map(re.escape, ordered))), names)

    def scrub(self, text: str) -> str:
        """``text`` with every known value (in each of its forms) replaced by its marker."""
        pattern, names = self._state
        if pattern is None or not text:
            return text
        return pattern.sub(lambda m: marker(names[m.group(0)]), text)

    def scrub_value(self, value: Any) -> Any:
        """Every string inside ``value`` scrubbed: dict keys and values, lists, tuples, and the
        fields of pydantic models (copied, not changed in place); anything else as it is."""
        if self._state[0] is None:
            return value
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {self.scrub_value(k): self.scrub_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.scrub_value(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.scrub_value(v) for v in value)
        if isinstance(value, BaseModel):
            fields = type(value).model_fields
            return value.model_copy(update={f: self.scrub_value(getattr(value, f)) for f in fields})
        return value
