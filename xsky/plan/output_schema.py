"""Structured outputs: an agent's ``output`` JSON Schema, checked and applied.

An agent declares the shape of its result with ``<output>{…}</output>``, ``<output
schema="FILE"/>`` or ``<config>{"output": {…}}</config>``; all three end up as
``config["output"]`` (the XML reader loads the file). Here, pure and without I/O:

* :func:`schema_problems` — is it a JSON Schema (Draft 2020-12) at all (``validate``, the
  planner's checks);
* :func:`result_problems` — does a model's answer fit it (the agent activity feeds these
  back to the model, a bounded number of times).
"""

from __future__ import annotations

import json
from typing import Any

from xsky.errors import Problem
from xsky.json_schema import bounded_errors, bounded_validator
from xsky.plan.fields import parse_answer
from xsky.plan.models import Workflow

OUTPUT_KEY = "output"
# How often a model is shown what is wrong with its answer before the agent fails.
OUTPUT_RETRIES = 2
# Errors listed per answer: enough to fix it, not a wall of text.
MAX_LISTED = 10


def output_schema(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """The agent's output schema, or None (a non-object is reported by schema_problems)."""
    value = (config or {}).get(OUTPUT_KEY)
    return value if isinstance(value, dict) else None


def _where(path: Any) -> str:
    parts = [str(p) for p in path]
    return "/".join(parts) if parts else "(top level)"


def schema_problems(schema: Any) -> list[str]:
    """What makes ``schema`` no JSON Schema (empty when it is one)."""
    fix = 'write a JSON Schema object such as {"type": "object", "properties": {"title": {"type": "string"}}}'
    if not isinstance(schema, dict):
        return [f"the output schema must be a JSON object, not {type(schema).__name__}; {fix}"]
    # jsonschema is imported when a schema is checked: ~60 ms of every command's start-up
    # (`validate`, `status`, `list`) for plans that mostly have none.
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as e:
        return [
            f"the output schema is not a valid JSON Schema (Draft 2020-12): {e.message} "
            f"at {_where(e.absolute_path)}; {fix}"
        ]
    return []


def output_problems(workflow: Workflow) -> list[Problem]:
    """Every agent whose ``output`` is not a JSON Schema, for validate and the planner."""
    problems = []
    for i, agent in enumerate(workflow.agents):
        if agent.config is None or OUTPUT_KEY not in agent.config:
            continue
        for msg in schema_problems(agent.config[OUTPUT_KEY]):
            problems.append(Problem(f"agent {agent.id}: {msg}", agent_index=i, agent_id=agent.id))
    return problems


def result_problems(schema: dict[str, Any], text: str) -> tuple[Any, list[str]]:
    """(the parsed answer, what is wrong with it against ``schema``) — no problems: it fits."""
    value, not_json = parse_answer(text)
    if not_json is not None:
        return None, [not_json]
    from jsonschema import Draft202012Validator  # (imported when needed: see schema_problems)

    # its patterns matched under time limits: a schema's '(a|a)+' stopped the worker
    validator = bounded_validator(schema, kind=Draft202012Validator)
    errors = sorted(bounded_errors(validator, value), key=lambda e: list(map(str, e.path)))
    listed = [f"{_where(e.absolute_path)}: {e.message}" for e in errors[:MAX_LISTED]]
    if len(errors) > MAX_LISTED:
        listed.append(f"… and {len(errors) - MAX_LISTED} more")
    return value, listed


def instructions(schema: dict[str, Any]) -> str:
    """What the model is told about the shape of its final answer."""
    return (
        "Your final answer must be only a JSON value (no prose, no code fence) that validates "
        f"against this JSON Schema:\n{json.dumps(schema, ensure_ascii=False, indent=2)}"
    )


CORRECTION_HEAD = "Your answer does not match the required JSON Schema:"


def correction(problems: list[str]) -> str:
    """The message that sends an answer back to the model with what is wrong with it."""
    listed = "\n".join(f"- {p}" for p in problems)
    return f"{CORRECTION_HEAD}\n{listed}\nAnswer again with only the corrected JSON value."


def corrections(messages: list[dict[str, Any]]) -> int:
    """How many answers of this conversation were sent back (a resumed attempt counts on)."""
    return sum(
        1
        for m in messages
        if m.get("role") == "user" and str(m.get("content") or "").startswith(CORRECTION_HEAD)
    )


def failure(problems: list[str], tries: int) -> str:
    """The agent's final error once every correction was used."""
    listed = "; ".join(problems)
    return (
        f"the model's answer did not match the output schema after {tries} tries: {listed} "
        "(fix the schema or the task so the model can meet it; retrying would not help)"
    )
