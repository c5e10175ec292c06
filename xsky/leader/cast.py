"""The run's cast: the roles its agents may take, and which plans it may run.

People give roles (the run's, or the built-ins, and ``define_role``'s); a plan may have been
written by a model, so its ``<role>``s only narrow the people's, and a role it invents keeps its
privileged tools asked for until a person approved that plan (approve_plan: a review that timed
out into "approve" is nobody's word). A new plan must fit the run — its agents, variables and
context — and widen no role; an automatic replan that gives new hands shell, Python, network or
MCP tools waits for review."""

from __future__ import annotations

from collections.abc import Mapping

from xsky.errors import Problem, WorkflowValidationError
from xsky.kinds import AgentInfo
from xsky.leader.state import PlanState
from xsky.plan import dag
from xsky.plan.agent_config import tool_name
from xsky.plan.models import RoleCapabilityModel, Workflow, WorkflowAgent
from xsky.runs import RunInput
from xsky.security.mcp import is_mcp
from xsky.security.roles import BUILTIN_ROLES, effective_roles, plan_role_problems
from xsky.security.tools import EXEC_OR_NETWORK_TOOLS


class Cast:
    """Roles in force and the checks a new plan passes."""

    def __init__(self, plan: PlanState, inp: RunInput) -> None:
        self.plan = plan
        self.input = inp

    def base_roles(self) -> dict[str, RoleCapabilityModel]:
        """The roles people gave: the run's (or built-ins) and define_role's."""
        return {**(self.input.roles or BUILTIN_ROLES), **self.plan.defined_roles}

    def roles(self) -> dict[str, RoleCapabilityModel]:
        """Roles agents may take: the people's, and the plan's <role>s as far as a plan may go
        (narrowing known roles; new roles' privileged tools asked for until a person approved
        the plan: a review that timed out into "approve" leaves them asked for)."""
        base = self.base_roles()
        by_person = self.plan.review == "approved"
        return {**base, **effective_roles(self.plan.plan.roles, base, by_person)}

    def plan_role_approved(self, name: str) -> bool:
        """Is ``name`` a role the plan invents, in a plan a person approved (approve_plan)?
        A review that timed out into an approval is nobody's word."""
        return (
            self.plan.review == "approved"
            and name not in self.base_roles()
            and any(r.name == name for r in self.plan.plan.roles)
        )

    def agent_infos(self) -> list[AgentInfo]:
        return [AgentInfo(name=r.name, description=r.description) for r in self.roles().values()]

    def define(self, role: RoleCapabilityModel) -> bool:
        """A role for this run (define_role); True when it replaced one of that name."""
        existed = role.name in self.roles()
        self.plan.defined_roles[role.name] = role
        return existed

    def checked(self, wf: Workflow, variables: Mapping[str, str]) -> Workflow:
        """A new plan, if it fits this run (its agents, variables, context) and widens no role."""
        dag.ensure_valid(
            wf, list(self.roles()), variables=variables, context_keys=list(self.input.context)
        )
        widening = plan_role_problems(wf.roles, self.base_roles())
        if widening:
            raise WorkflowValidationError([Problem(p) for p in widening])
        return wf

    def privileged_changes(
        self, wf: Workflow, agents: Mapping[str, WorkflowAgent], mcp: bool = False
    ) -> list[str]:
        """Agents of ``wf`` that are new or changed (from ``agents``, the plan in force) and can
        run commands or reach the network; with ``mcp`` (patch mcp-tools-privileged), or use
        tools of MCP servers."""
        base = self.base_roles()
        roles = {**base, **effective_roles(wf.roles, base, approved=False)}
        risky = []
        for agent in wf.agents:
            old = agents.get(agent.id)
            if old is not None and old.name == agent.name and old.config == agent.config:
                continue
            role = roles.get(agent.name)
            tools = set(role.allowed_tools + role.requested_tools) if role else set()
            direct = tool_name(agent.config) if agent.config else None
            if tools & EXEC_OR_NETWORK_TOOLS or direct in EXEC_OR_NETWORK_TOOLS:
                risky.append(agent.id)
            elif mcp and (any(is_mcp(t) for t in tools) or (direct is not None and is_mcp(direct))):
                risky.append(agent.id)
        return risky
