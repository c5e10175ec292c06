"""Loading a plan file: parse, validate, and locate every problem in the file."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from xsky import dag
from xsky.errors import PlanError, Problem, UsageError, WorkflowValidationError
from xsky.kinds import TOOL_AGENT_KINDS
from xsky.models import RoleCapabilityModel, Workflow
from xsky.roles import plan_role_problems
from xsky.xml import DEFAULT_MAX_BYTES, parse_workflow_source


@dataclass
class LoadedPlan:
    path: Path
    text: str
    workflow: Workflow


def read_plan_bytes(path: str | Path) -> tuple[Path, bytes]:
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{p}: no such file; give the path of a workflow XML file")
    if p.is_dir():
        raise UsageError(f"{p}: is a directory; give the path of a workflow XML file")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise UsageError(f"{p}: cannot read it ({e.strerror})") from None
    return p, data


def load_plan(
    path: str | Path,
    *,
    known_agents: Collection[str] = TOOL_AGENT_KINDS,
    variables: Collection[str] = (),
    context_keys: Collection[str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    base_roles: Mapping[str, RoleCapabilityModel] | None = None,
) -> LoadedPlan:
    """Parse and validate; raise :class:`PlanError` whose problems carry line:col in the file.

    With ``base_roles`` (built-ins and settings), a ``<role>`` that would widen one is refused.
    """
    p, data = read_plan_bytes(path)
    parsed = parse_workflow_source(data, max_bytes=max_bytes)
    problems = dag.validate(
        parsed.workflow, known_agents, variables=variables, context_keys=context_keys
    )
    if base_roles is not None:
        problems += [
            Problem(message) for message in plan_role_problems(parsed.workflow.roles, base_roles)
        ]
    if problems:
        located: list[Problem] = []
        for prob in problems:
            if prob.agent_index is not None:
                located.append(prob.located(*parsed.agent_position(prob.agent_index)))
            else:
                located.append(prob.located(1, 1))
        raise WorkflowValidationError(located)
    return LoadedPlan(p, data.decode("utf-8", errors="replace"), parsed.workflow)


__all__ = ["LoadedPlan", "PlanError", "UsageError", "load_plan", "read_plan_bytes"]
