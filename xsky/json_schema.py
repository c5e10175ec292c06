"""JSON Schema validators whose regular expressions cannot stop a worker.

A schema's ``pattern`` and ``patternProperties`` come from people, planners and MCP servers;
``jsonschema`` matches them with :mod:`re`, where a pattern with nested repeats (``^(a|a)+$``)
takes time doubling with each character of the value — a 40-character answer kept a worker's
event loop busy for hours. Here they are matched with :mod:`regex` (the same syntax) under a
time limit per match and one for the whole check; a match that runs out of time is an error
that says why, not a hang.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

MATCH_SECONDS = 0.25  # one pattern against one string
CHECK_SECONDS = 2.0  # every pattern of one check


def bounded_validator(
    schema: dict[str, Any], seconds: float = CHECK_SECONDS, kind: Any = None
) -> Any:
    """A validator of ``schema`` (of ``kind``, else its draft as ``jsonschema`` picks it)
    whose patterns are matched under time limits."""
    # jsonschema and regex are imported when a schema is checked: most commands check none.
    import jsonschema
    import regex
    from jsonschema.exceptions import ValidationError

    deadline = time.monotonic() + seconds

    def search(pattern: str, text: str) -> bool | None:
        """Whether ``pattern`` is found in ``text``; None when finding out took too long."""
        left = deadline - time.monotonic()
        try:
            return (
                regex.search(pattern, text, timeout=max(0.01, min(MATCH_SECONDS, left))) is not None
            )
        except TimeoutError:
            return None

    def slow(pattern: str, text: str) -> ValidationError:
        return ValidationError(
            f"matching {text[:40]!r}{'…' if len(text) > 40 else ''} against the pattern "
            f"{pattern!r} took too long: a pattern with nested repeats (such as '(a|a)+') can "
            "take for ever — simplify the schema's pattern"
        )

    def pattern(validator: Any, patrn: str, instance: Any, _schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "string"):
            return
        found = search(patrn, instance)
        if found is None:
            yield slow(patrn, instance)
        elif not found:
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(
        validator: Any, patterns: dict[str, Any], instance: Any, _schema: Any
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in patterns.items():
            for key, value in instance.items():
                found = search(patrn, key)
                if found is None:
                    yield slow(patrn, key)
                elif found:
                    yield from validator.descend(value, subschema, path=key, schema_path=patrn)

    kind = kind or jsonschema.validators.validator_for(schema)
    bounded = jsonschema.validators.extend(
        kind, {"pattern": pattern, "patternProperties": pattern_properties}
    )
    return bounded(schema)
