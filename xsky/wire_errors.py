"""One sentence for a message that does not fit its model: which field, what was wrong.

pydantic's own error is a dump of every problem with links; a person who typed a signal or an
update into the stock ``temporal`` CLI or the Web UI needs the field and the fix. Used by the
data converter for updates and queries (client/connect.py) and by the leader's signal
handlers, which check the payload themselves (workflows/leader/signals.py).
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from pydantic import BaseModel, ValidationError


def field_names(model: type[BaseModel]) -> list[str]:
    """The fields as they travel (camelCase aliases where a model has them)."""
    return [f.alias or name for name, f in model.model_fields.items()]


def shown(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def example(model: type[BaseModel]) -> str:
    return "{" + ", ".join(f'"{n}": …' for n in field_names(model)) + "}"


def one_sentence(model: type[BaseModel], error: ValidationError) -> str:
    """The first problem of ``error`` as a sentence naming the field and the fix."""
    problems = error.errors(include_url=False)
    if not problems:
        return f"the request does not fit {model.__name__}: send {example(model)}"
    first = problems[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    got = shown(first.get("input"))
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    if first.get("type") == "json_invalid":
        return f"the request is not valid JSON ({first.get('msg', '')}); send {example(model)}"
    if not where:
        return f"the request must be a JSON object such as {example(model)}, not {got}"
    if first.get("type") == "missing":
        given = first.get("input")
        known = set(field_names(model)) | set(model.model_fields)
        odd = [k for k in given if k not in known] if isinstance(given, dict) else []
        if odd:  # a field mistyped: say which, rather than only that the real one is missing
            close = difflib.get_close_matches(where, [str(k) for k in odd], n=1, cutoff=0.6)
            sent = f"`{close[0]}` is sent instead" if close else f"`{odd[0]}` is no field of it"
            rest = [f"`{k}`" for k in odd if not close or k != close[0]]
            also = f"; unknown too: {', '.join(rest[:4])}" if rest else ""
            return f"field `{where}` is missing ({sent}{also}); send {example(model)}"
        return f"field `{where}` is missing{more}; send {example(model)}"
    return f"field `{where}`: {first.get('msg', 'invalid')} (got {got}){more}"


def unknown_fields(model: type[BaseModel], value: Any) -> list[str]:
    """The keys of a JSON object ``value`` that are no field of ``model`` (by alias or name)."""
    if not isinstance(value, dict):
        return []
    known = set(field_names(model)) | set(model.model_fields)
    return [str(k) for k in value if k not in known]


def unknown_sentence(model: type[BaseModel], unknown: list[str]) -> str:
    """The refusal of a request that names fields ``model`` does not have, a near one named."""
    names = field_names(model)
    near = [
        f"`{close[0]}` for `{k}`"
        for k in unknown
        if (close := difflib.get_close_matches(k, names, n=1, cutoff=0.6))
    ]
    hint = f" (did you mean {', '.join(near[:3])}?)" if near else ""
    return (
        f"unknown field(s) {', '.join(f'`{k}`' for k in unknown[:5])}{hint}; it takes "
        f"{', '.join(names)}"
    )


def strict_problem(model: type[BaseModel], value: Any) -> str | None:
    """What is wrong with ``value`` as a ``model`` (a JSON object, known fields only); None: fine."""
    if not isinstance(value, dict):
        return f"the request must be a JSON object such as {example(model)}, not {shown(value)}"
    unknown = unknown_fields(model, value)
    if unknown:
        return unknown_sentence(model, unknown)
    try:
        model.model_validate(value)
    except ValidationError as e:
        return one_sentence(model, e)
    return None
