"""JSON Schema validators whose regular expressions cannot stop a worker.

A schema's ``pattern`` and ``patternProperties`` come from people, planners and MCP servers;
``jsonschema`` matches them with :mod:`re`, where a pattern with nested repeats (``^(a|a)+$``)
takes time doubling with each character of the value — a 40-character answer kept a worker's
event loop busy for hours (and ``re`` holds the GIL: no thread can stop it). Here they are
matched with :mod:`regex` (the same syntax) under a time limit per match and one for the whole
check; a match that runs out of time is an error that says why, not a hang.

``pattern`` and ``patternProperties`` are checked by keywords of this module's own (an error per
value); every other place ``jsonschema`` searches with a pattern (``additionalProperties`` and
``unevaluatedProperties`` ask which keys the patterns cover) goes through the same bounded
search, and a timeout there ends the check with :class:`PatternTimeout`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

MATCH_SECONDS = 0.25  # one pattern against one string
CHECK_SECONDS = 2.0  # every pattern of one check

# The running check's deadline (monotonic seconds); None: no bounded check is running.
_DEADLINE: ContextVar[float | None] = ContextVar("xsky_schema_deadline", default=None)


class PatternTimeout(Exception):
    """A schema's pattern took too long to match (the check ends: the result says so)."""

    def __init__(self, pattern: str, text: str):
        shown = f"{text[:40]!r}{'…' if len(text) > 40 else ''}"
        super().__init__(
            f"matching {shown} against the pattern {pattern!r} took too long: a pattern with "
            "nested repeats (such as '(a|a)+') can take for ever — simplify the schema's pattern"
        )


def _search(pattern: str, text: str) -> bool:
    """``pattern`` found in ``text``, within what is left of the check's time; raises
    :class:`PatternTimeout` when it is not known in time."""
    import regex

    deadline = _DEADLINE.get()
    if deadline is None:  # outside a bounded check: as jsonschema would
        return re.search(pattern, text) is not None
    left = deadline - time.monotonic()
    if left <= 0:  # the check's time is spent: no more matching at all
        raise PatternTimeout(pattern, text)
    try:
        return regex.search(pattern, text, timeout=min(MATCH_SECONDS, left)) is not None
    except TimeoutError:
        raise PatternTimeout(pattern, text) from None


class _BoundedRe:
    """What ``jsonschema``'s modules see as ``re``: searches bounded, the rest unchanged."""

    def __getattr__(self, name: str) -> Any:
        return getattr(re, name)

    @staticmethod
    def search(pattern: str, string: str, flags: int = 0) -> Any:
        if flags:
            return re.search(pattern, string, flags)
        return True if _search(pattern, string) else None


_installed = False


def _install() -> None:
    """Route ``jsonschema``'s own pattern searches through :func:`_search` (once)."""
    global _installed
    if _installed:
        return
    import importlib

    # every module of jsonschema that searches with a schema's pattern (_format only compiles)
    for name in ("_utils", "_keywords", "_legacy_keywords"):
        try:
            module = importlib.import_module(f"jsonschema.{name}")
        except ImportError:  # a version without it
            continue
        if hasattr(module, "re"):
            setattr(module, "re", _BoundedRe())  # noqa: B010
    _installed = True


def bounded_validator(
    schema: dict[str, Any], seconds: float = CHECK_SECONDS, kind: Any = None
) -> Any:
    """A validator of ``schema`` (of ``kind``, else its draft as ``jsonschema`` picks it)
    whose patterns are matched under time limits. Iterate its errors inside
    :func:`bounded_errors` (which sets the check's deadline)."""
    import jsonschema
    from jsonschema.exceptions import ValidationError

    _install()

    def pattern(validator: Any, patrn: str, instance: Any, _schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "string"):
            return
        try:
            found = _search(patrn, instance)
        except PatternTimeout as slow:
            yield ValidationError(str(slow))
            return
        if not found:
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(
        validator: Any, patterns: dict[str, Any], instance: Any, _schema: Any
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in patterns.items():
            for key, value in instance.items():
                try:
                    found = _search(patrn, key)
                except PatternTimeout as slow:
                    yield ValidationError(str(slow))
                    continue
                if found:
                    yield from validator.descend(value, subschema, path=key, schema_path=patrn)

    kind = kind or jsonschema.validators.validator_for(schema)
    bounded = jsonschema.validators.extend(
        kind, {"pattern": pattern, "patternProperties": pattern_properties}
    )
    return bounded(schema)


def bounded_errors(validator: Any, value: Any, seconds: float = CHECK_SECONDS) -> list[Any]:
    """Every error of ``value`` against ``validator``, found within ``seconds``: a pattern that
    runs out of time is an error of its own (and, where ``jsonschema`` searches with it itself,
    ends the check with that one error)."""
    from jsonschema.exceptions import ValidationError

    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        return list(validator.iter_errors(value))
    except PatternTimeout as slow:
        return [ValidationError(str(slow))]
    finally:
        _DEADLINE.reset(token)
