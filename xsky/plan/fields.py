"""``{{agent_N_result.field}}``: one field of an agent's JSON result.

Apart from :mod:`xsky.plan.output_schema` because the leader renders references in
workflow code, which should not import a JSON Schema library it never uses.
"""

from __future__ import annotations

import json
import re
from typing import Any

# An answer wrapped in a Markdown code fence (models do it even in JSON mode).
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*?)\n?```$", re.S)


def parse_answer(text: str) -> tuple[Any, str | None]:
    """The JSON value of a model's answer (a code fence around it is allowed), or why not."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        return json.loads(body), None
    except json.JSONDecodeError as e:
        return None, f"the answer is not valid JSON ({e.msg} at line {e.lineno} column {e.colno})"
    except RecursionError:  # an answer a page or a tool made: never a leader stuck on it
        return None, "the answer is JSON nested deeper than it can be read"


def field_value(result: str, agent_id: str, path: str) -> str:
    """``{{agent_<id>_result.<path>}}``: the value at ``path`` (dots; list indexes as numbers)
    of agent ``agent_id``'s JSON result, as text (strings as they are, the rest as JSON)."""
    ref = f"{{{{agent_{agent_id}_result.{path}}}}}"
    value, not_json = parse_answer(result)
    if not_json is not None:
        raise ValueError(
            f"{ref}: agent {agent_id}'s result is not JSON, so it has no fields ({not_json}); "
            f"give agent {agent_id} an <output> schema, or use {{{{agent_{agent_id}_result}}}}"
        )
    at: list[str] = []
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            where = ".".join(at) or "the result"
            if isinstance(value, dict):
                have = f"its fields: {', '.join(sorted(map(str, value))) or 'none'}"
            elif isinstance(value, list):
                have = f"it is a list of {len(value)} items; index it with a number from 0"
            else:
                have = f"it is a {type(value).__name__}, not an object"
            raise ValueError(f"{ref}: {where} has no field {part!r} ({have})")
        at.append(part)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
