"""Loading a plan file: parse, validate, and locate every problem in the file."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from xsky.errors import PlanError, Problem, UsageError, WorkflowValidationError
from xsky.kinds import TOOL_AGENT_KINDS
from xsky.plan import dag
from xsky.plan.models import RoleCapabilityModel, Workflow
from xsky.plan.xml import DEFAULT_MAX_BYTES, parse_workflow_source
from xsky.security.roles import plan_role_problems


@dataclass
class LoadedPlan:
    path: Path
    text: str
    workflow: Workflow


def read_plan_bytes(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[Path, bytes]:
    """The file's bytes, read no further than the limit (a device, a pipe or a huge file is
    refused without being read whole)."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{p}: no such file; give the path of a workflow XML file")
    if p.is_dir():
        raise UsageError(f"{p}: is a directory; give the path of a workflow XML file")
    try:
        with p.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as e:
        raise UsageError(f"{p}: cannot read it ({e.strerror})") from None
    if len(data) > max_bytes:
        size = f"{p.stat().st_size:,} bytes" if p.is_file() else "endless (not a regular file)"
        raise UsageError(
            f"{p}: {size}, over the {max_bytes:,}-byte limit of a plan; split the work into smaller "
            "plans or raise XSKY_MAX_PLAN_BYTES"
        )
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
    p, data = read_plan_bytes(path, max_bytes)
    workflow = check_plan(
        data,
        known_agents=known_agents,
        variables=variables,
        context_keys=context_keys,
        max_bytes=max_bytes,
        base_roles=base_roles,
    )
    return LoadedPlan(p, data.decode("utf-8", errors="replace"), workflow)


def check_plan(
    data: bytes,
    *,
    known_agents: Collection[str] = TOOL_AGENT_KINDS,
    variables: Collection[str] | None = (),
    context_keys: Collection[str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    base_roles: Mapping[str, RoleCapabilityModel] | None = None,
) -> Workflow:
    """Parse and validate plan bytes; every problem located at its line:col. ``variables``
    None leaves ``{{names}}`` unchecked (a replan's run supplies them)."""
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
    return parsed.workflow


__all__ = ["LoadedPlan", "PlanError", "UsageError", "check_plan", "load_plan", "read_plan_bytes"]
