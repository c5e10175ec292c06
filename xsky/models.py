"""The plan's data model, with the seed's names and fields.

The wire format keeps the seed's camelCase (``taskId``, ``taskPrompt``, ``nextAgent``)
through aliases; Python code uses snake_case attributes. Every model validates on
construction, so a ``Workflow`` that exists is well-formed at the field level; graph-level
checks (cycles, unknown ids) live in :mod:`xsky.dag`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

AgentStatus = Literal["init", "running", "done", "error"]
NodeType = Literal["normal", "parallel"]

# Agent ids appear in comma-separated `depends` lists and in `{{agent_<id>_result}}`,
# so they must not contain commas, spaces or braces.
AGENT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# Role/agent names: what `<agent name=…>` and `<role name=…>` accept.
AGENT_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
VARIABLE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")

# Characters XML 1.0 cannot carry at all, even escaped.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def xml_illegal_chars(text: str) -> list[str]:
    """The characters of ``text`` that no XML 1.0 document can hold."""
    return sorted(set(_XML_ILLEGAL.findall(text)))


def scrub_xml_illegal(text: str) -> str:
    """Replace characters XML cannot carry (e.g. a NUL in shell output) with U+FFFD."""
    return _XML_ILLEGAL.sub("\ufffd", text)


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_assignment=True,
    )

    def wire(self) -> dict[str, Any]:
        """The JSON shape with the seed's camelCase names."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


def _check_text(value: str, what: str) -> str:
    bad = xml_illegal_chars(value)
    if bad:
        shown = ", ".join(f"U+{ord(c):04X}" for c in bad)
        raise ValueError(f"{what} contains characters XML cannot carry ({shown}); remove them")
    return value


class WorkflowAgent(_Model):
    """One agent of a plan. ``name`` is the agent kind or role; ``id`` is unique in the plan."""

    id: str
    name: str
    task: str
    input: str | None = None
    config: dict[str, Any] | None = None
    depends: list[str] = Field(default_factory=list)
    status: AgentStatus = "init"
    result: str | None = None

    @field_validator("id")
    @classmethod
    def _id_shape(cls, v: str) -> str:
        if not AGENT_ID_RE.match(v):
            raise ValueError(
                f"agent id {v!r} is not valid: use 1-64 letters, digits, '_', '.' or '-', "
                "starting with a letter or digit (e.g. id=\"3\" or id=\"search\")"
            )
        return v

    @field_validator("name")
    @classmethod
    def _name_shape(cls, v: str) -> str:
        if not AGENT_NAME_RE.match(v):
            raise ValueError(
                f"agent name {v!r} is not valid: use a role or agent kind such as browser, "
                "llm, file or shell (letters, digits, '_' or '-', starting with a letter)"
            )
        return v

    @field_validator("task")
    @classmethod
    def _task_text(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("task is empty: say what the agent should do")
        return _check_text(v, "task")

    @field_validator("input")
    @classmethod
    def _input_text(cls, v: str | None) -> str | None:
        return None if v is None else _check_text(v, "input")

    @field_validator("depends")
    @classmethod
    def _depends_unique(cls, v: list[str]) -> list[str]:
        # A repeated dependency means nothing more than a single one; keep first order.
        seen: dict[str, None] = {}
        for dep in v:
            if not AGENT_ID_RE.match(dep):
                raise ValueError(f"depends entry {dep!r} is not a valid agent id")
            seen.setdefault(dep, None)
        return list(seen)

    @field_validator("result")
    @classmethod
    def _result_text(cls, v: str | None) -> str | None:
        # Results come from tools (shell output may hold NULs): keep them XML-safe.
        return None if v is None else scrub_xml_illegal(v)


class Workflow(_Model):
    """A plan: a named set of agents with dependencies."""

    name: str
    task_id: str
    task_prompt: str | None = None
    agents: list[WorkflowAgent] = Field(default_factory=list)
    modified: bool = False
    # Workflow variables the plan declares, with their default values; `--var` overrides.
    variables: dict[str, str] = Field(default_factory=dict)

    @field_validator("name", "task_id")
    @classmethod
    def _attr_text(cls, v: str) -> str:
        return _check_text(v, "workflow attribute")

    @field_validator("task_prompt")
    @classmethod
    def _prompt_text(cls, v: str | None) -> str | None:
        return None if v is None else _check_text(v, "taskPrompt")

    @field_validator("variables")
    @classmethod
    def _variable_names(cls, v: dict[str, str]) -> dict[str, str]:
        for key, value in v.items():
            if not VARIABLE_NAME_RE.match(key):
                raise ValueError(
                    f"variable name {key!r} is not valid: use letters, digits and '_', "
                    "starting with a letter or '_'"
                )
            _check_text(value, f"variable {key}")
        return v

    def agent(self, agent_id: str) -> WorkflowAgent:
        for a in self.agents:
            if a.id == agent_id:
                return a
        raise KeyError(agent_id)


class WorkflowNode(_Model):
    """A node of the seed's agent tree: one agent, or agents run in parallel, then next."""

    type: NodeType
    agent: WorkflowAgent | None = None
    agents: list[WorkflowNode] | None = None
    result: str | None = None
    next_agent: WorkflowNode | None = None
