"""The plan's data model, with the seed's names and fields.

The wire format keeps the seed's camelCase (``taskId``, ``taskPrompt``, ``nextAgent``)
through aliases; Python code uses snake_case attributes. Every model validates on
construction, so a ``Workflow`` that exists is well-formed at the field level; graph-level
checks (cycles, unknown ids) live in :mod:`xsky.plan.dag`. The roles a plan defines are
:class:`xsky.security.roles.RoleCapabilityModel`: what a role is, security says.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, field_validator

from xsky.security.roles import AgentName, RoleCapabilityModel
from xsky.wire import XML_ILLEGAL_CLASS, WireModel, XmlText, scrub_xml_illegal

AgentStatus = Literal["init", "running", "done", "error"]
NodeType = Literal["normal", "parallel"]

# Agent ids appear in comma-separated `depends` lists and in `{{agent_<id>_result}}`,
# so they must not contain commas, spaces or braces. ``3[4]`` is the 4th item of forEach agent 3
# (xsky.plan.loops): the leader makes those ids when it expands the loop.
AGENT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}(?:\[[1-9][0-9]{0,4}\])?$")
VARIABLE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")

# Field shapes checked in pydantic-core (Rust regex): plans can hold 10,000 agents. An
# agent's name is a role's (AgentName, xsky.security.roles); its texts are XmlText (xsky.wire).
AgentId = Annotated[str, StringConstraints(pattern=AGENT_ID_RE.pattern)]
TaskText = Annotated[
    str,
    StringConstraints(
        pattern=f"^[^{XML_ILLEGAL_CLASS}]*[^\\s{XML_ILLEGAL_CLASS}][^{XML_ILLEGAL_CLASS}]*$"
    ),
]

# What each pattern means, for error messages a person can act on.
FIELD_HINTS = {
    "id": "an agent id uses 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit "
    '(e.g. id="3" or id="search")',
    "depends": 'depends lists agent ids separated by commas, e.g. depends="1,3"',
    "name": "an agent name is a role or agent kind such as browser, llm, file or shell (letters, "
    "digits, '_' or '-', starting with a letter)",
    "task": "the task says what the agent should do: it cannot be empty, nor hold characters XML cannot carry",
    "input": "the input cannot hold characters XML cannot carry (control characters)",
}


def plain_error(err: Mapping[str, Any]) -> str:
    """What a pydantic error says, said plainly: "must be a number", "must be at least 1" —
    not "Input should be a valid number, unable to parse string as a number"."""
    kind, ctx = str(err.get("type", "")), err.get("ctx") or {}
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "must be a whole number"
    if kind in ("float_parsing", "float_type", "finite_number"):
        return "must be a number"
    if kind in ("bool_parsing", "bool_type"):
        return "must be true or false"
    if kind in ("string_type",):
        return "must be text"
    for bound, words in (
        ("ge", "at least"),
        ("gt", "more than"),
        ("le", "at most"),
        ("lt", "less than"),
    ):
        if bound in ctx and kind.startswith(("greater", "less")):
            return f"must be {words} {ctx[bound]}"
    if kind == "literal_error" and "expected" in ctx:
        return f"must be one of {ctx['expected']}"
    if kind == "extra_forbidden":
        return "is not a setting it has"
    return str(err.get("msg", "")).removeprefix("Value error, ")


def friendly_error(loc: tuple[object, ...], pydantic_type: str, msg: str, value: object) -> str:
    """Turn a pydantic error into a sentence that says what to change."""
    field = next((str(part) for part in reversed(loc) if isinstance(part, str)), "")
    if pydantic_type == "string_pattern_mismatch":
        if loc and loc[0] == "agents" and field in FIELD_HINTS:
            said = f"{field} {value!r} is not valid: {FIELD_HINTS[field]}"
            if field == "depends" and isinstance(value, str):
                odd = next((c for c in value if not (c.isalnum() or c in "_.-")), None)
                if odd is not None:  # name what broke it: '，' looks like ',' to the eye
                    said += f" ({odd!r}, U+{ord(odd):04X}, is no separator: write ',')"
            return said
        if loc and loc[0] == "variables" and field == "[key]":
            return f"variable name {value!r} is not valid: use letters, digits and '_', starting with a letter or '_'"
        return f"{field} holds characters XML cannot carry (control characters); remove them"
    return f"{field or 'value'}: {msg.removeprefix('Value error, ')}"


StepKind = Literal["node", "forEach", "watch"]


class Step(WireModel):
    """One step of an agent's plan: Eko's ``<nodes>`` children, kept in order.

    A ``node`` is one thing to do (``text``), reading the variables ``input`` names
    (comma-separated) and storing its result under ``output``; a ``forEach`` repeats its
    ``steps`` for each item of ``items``; a ``watch`` runs its ``steps`` (Eko's
    ``<trigger>``) when ``event`` happens, again and again with ``loop``. Today the agent's
    model is given them as instructions (:func:`xsky.plan.steps.render_steps`); nothing runs
    a forEach or a watch durably yet. One model for the three, as the XML nests them freely."""

    kind: StepKind = "node"
    text: XmlText = ""
    input: XmlText | None = None
    output: XmlText | None = None
    items: XmlText | None = None
    event: XmlText | None = None
    loop: bool = False
    description: XmlText | None = None
    steps: list[Step] = Field(default_factory=list)


def unused_id(wanted: str, taken: set[str]) -> str:
    """``wanted``, or ``wanted2``, ``wanted3`` … if taken; the id returned is taken from now on
    (ids a plan grows for itself: a loop's ``3.list``, a watch's ``3.page``)."""
    agent_id, n = wanted, 2
    while agent_id in taken:
        agent_id, n = f"{wanted}{n}", n + 1
    taken.add(agent_id)
    return agent_id


class WorkflowAgent(WireModel):
    """One agent of a plan. ``name`` is the agent kind or role; ``id`` is unique in the plan."""

    id: AgentId
    name: AgentName
    task: TaskText
    input: XmlText | None = None
    config: dict[str, Any] | None = None
    depends: list[AgentId] = Field(default_factory=list)
    status: AgentStatus = "init"
    result: str | None = None
    # Its ordered steps (`<nodes>`); empty for most plans, and in histories recorded before.
    # Left out of the wire form when empty: plans without steps travel exactly as before.
    steps: list[Step] = Field(default_factory=list, exclude_if=lambda v: not v)
    # `forEach="{{agent_2_result}}"`: the agent runs once per item of that list, each item an
    # agent of its own (xsky.plan.loops); None (most agents): once.
    for_each: XmlText | None = Field(None, exclude_if=lambda v: v is None)
    # An item agent's item (`3[4]`, made by the leader from a forEach): its `{{item}}`.
    item: XmlText | None = Field(None, exclude_if=lambda v: v is None)

    @field_validator("depends")
    @classmethod
    def _depends_unique(cls, v: list[str]) -> list[str]:
        # A repeated dependency means nothing more than a single one; keep first order.
        return list(dict.fromkeys(v)) if len(v) > 1 else v

    @field_validator("result")
    @classmethod
    def _result_text(cls, v: str | None) -> str | None:
        # Results come from tools (shell output may hold NULs): keep them XML-safe.
        return None if v is None else scrub_xml_illegal(v)


VariableName = Annotated[str, StringConstraints(pattern=VARIABLE_NAME_RE.pattern)]


class Limits(WireModel):
    """Ceilings on what a run (or one agent) may spend; None: no ceiling on that. Parsed from
    and written as ``tokens=100000,usd=2.50,minutes=30,agents=200`` (:mod:`xsky.plan.budget`)."""

    tokens: int | None = Field(None, gt=0)
    usd: float | None = Field(None, gt=0, allow_inf_nan=False)
    minutes: float | None = Field(None, gt=0, allow_inf_nan=False)
    agents: int | None = Field(None, gt=0)


class Workflow(WireModel):
    """A plan: a named set of agents with dependencies."""

    name: XmlText
    task_id: XmlText
    task_prompt: XmlText | None = None
    agents: list[WorkflowAgent] = Field(default_factory=list)
    modified: bool = False
    # Workflow variables the plan declares, with their default values; `--var` overrides.
    variables: dict[VariableName, XmlText] = Field(default_factory=dict)
    # Roles the plan defines for its own agents (`<role>` elements).
    roles: list[RoleCapabilityModel] = Field(default_factory=list)
    # `<workflow budget="tokens=…">`: narrows the run's budget, never widens it.
    budget: Limits | None = None

    def agent(self, agent_id: str) -> WorkflowAgent:
        for a in self.agents:
            if a.id == agent_id:
                return a
        raise KeyError(agent_id)


class WorkflowNode(WireModel):
    """A node of the seed's agent tree: one agent, or agents run in parallel, then next."""

    type: NodeType
    agent: WorkflowAgent | None = None
    agents: list[WorkflowNode] | None = None
    result: str | None = None
    next_agent: WorkflowNode | None = None
