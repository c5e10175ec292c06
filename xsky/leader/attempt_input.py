"""What an attempt is given: the roles in force, the agent rendered with its dependencies'
results, its activity settings and its queue."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from xsky.artifacts import marker
from xsky.errors import Problem, WorkflowValidationError
from xsky.kinds import AgentInfo
from xsky.leader.commands import LOCAL_SECONDS, QUEUE_KINDS, SATISFIED
from xsky.leader.grants import Grants, GrantsRequest
from xsky.leader.requests import Requests
from xsky.leader.state import Granted
from xsky.leader.tasks import TaskState
from xsky.plan import dag
from xsky.plan.agent_config import activity_settings, stall_windows, tool_name
from xsky.plan.dep_context import dependency_context, wants_context
from xsky.plan.models import RoleCapabilityModel, Workflow, WorkflowAgent
from xsky.plan.variables import render, render_command, render_config
from xsky.runs import (
    AgentInput,
)
from xsky.security.mcp import is_mcp
from xsky.security.roles import BUILTIN_ROLES, effective_roles, plan_role_problems
from xsky.security.tools import EXEC_OR_NETWORK_TOOLS, WORKSPACE_TOOLS


class _Results(Mapping[str, str]):
    """Completed agents' results for rendering: inline text, or a marker for stored ones."""

    def __init__(self, tasks: Mapping[str, TaskState]):
        self._tasks = tasks
        # artifact URIs handed out as markers (the activity expands only these)
        self.issued: list[str] = []

    def __getitem__(self, agent_id: str) -> str:
        task = self._tasks[agent_id]
        if task.stored not in SATISFIED:
            raise KeyError(agent_id)
        if task.result is not None:
            return task.result
        if task.result_ref is not None:
            self.issued.append(task.result_ref.uri)
            return marker(task.result_ref)
        return ""

    def __contains__(self, agent_id: object) -> bool:
        return (
            isinstance(agent_id, str)
            and agent_id in self._tasks
            and self._tasks[agent_id].stored in SATISFIED
        )

    def __iter__(self) -> Iterator[str]:
        return (k for k, t in self._tasks.items() if t.stored in SATISFIED)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class AttemptInputs(Requests):
    """Roles and the input of an attempt."""

    # -- roles ---------------------------------------------------------------------------------

    def base_roles(self) -> dict[str, RoleCapabilityModel]:
        """The roles people gave: the run's (or built-ins) and define_role's."""
        return {**(self.input.roles or BUILTIN_ROLES), **self.state.defined_roles}

    def roles(self) -> dict[str, RoleCapabilityModel]:
        """Roles agents may take: the people's, and the plan's <role>s as far as a plan may go
        (narrowing known roles; new roles' privileged tools asked for until a person approved
        the plan: a review that timed out into "approve" leaves them asked for)."""
        base = self.base_roles()
        by_person = self.state.review == "approved"
        return {**base, **effective_roles(self.state.plan.roles, base, by_person)}

    def _plan_role_approved(self, name: str) -> bool:
        """Is ``name`` a role the plan invents, in a plan a person approved (approve_plan)?
        A review that timed out into an approval is nobody's word."""
        return (
            self.state.review == "approved"
            and name not in self.base_roles()
            and any(r.name == name for r in self.state.plan.roles)
        )

    def agent_infos(self) -> list[AgentInfo]:
        return [AgentInfo(name=r.name, description=r.description) for r in self.roles().values()]

    def checked(self, wf: Workflow) -> Workflow:
        """A new plan, if it fits this run (its agents, variables, context) and widens no role."""
        dag.ensure_valid(
            wf, list(self.roles()), variables=self.variables, context_keys=list(self.input.context)
        )
        widening = plan_role_problems(wf.roles, self.base_roles())
        if widening:
            raise WorkflowValidationError([Problem(p) for p in widening])
        return wf

    def privileged_changes(self, wf: Workflow, mcp: bool = False) -> list[str]:
        """Agents of ``wf`` that are new or changed and can run commands or reach the network;
        with ``mcp`` (patch mcp-tools-privileged), or use tools of MCP servers."""
        base = self.base_roles()
        roles = {**base, **effective_roles(wf.roles, base, approved=False)}
        risky = []
        for agent in wf.agents:
            old = self.agents.get(agent.id)
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

    # -- an attempt's input ----------------------------------------------------------------------

    def templated_command(self, agent_id: str) -> bool:
        """Does this agent's shell command get values beside it (see :meth:`render`)?"""
        config = self.agents[agent_id].config
        if not config:
            return False
        return tool_name(config) == "shell" and isinstance(config.get("command"), str)

    def runs_locally(self, agent_id: str) -> bool:
        """Cheap and side-effect free: a ``noop`` of at most LOCAL_SECONDS may run as a local
        activity on the leader's worker (no task queue round trip, no heartbeat needed)."""
        config = self.agents[agent_id].config
        if not self.options.local_tools or not config or tool_name(config) != "noop":
            return False
        seconds = config.get("seconds", 0)
        return isinstance(seconds, int | float) and 0 <= seconds <= LOCAL_SECONDS

    def wants_context(self, agent_id: str) -> bool:
        """Does this agent get its dependencies' results as input (see :mod:`xsky.plan.dep_context`)?"""
        return wants_context(self.agents[agent_id])

    def render(self, agent_id: str) -> tuple[WorkflowAgent, list[str]]:
        """The agent with its references rendered, and the artifact markers it was given.

        A templated shell command's values travel beside it as variables (data is never pasted
        into code); an agent with no input gets its dependencies' results."""
        agent = self.agents[agent_id]
        results = _Results(self.tasks)
        ctx = self.input.context
        config = agent.config
        if agent.config:
            config = render_config(agent.config, results, self.variables, ctx)
            if self.templated_command(agent_id):
                command, values = render_command(
                    agent.config["command"], results, self.variables, ctx
                )
                config = {**config, "command": command, **({"values": values} if values else {})}
        rendered = agent.model_copy(
            update={
                "task": render(agent.task, results, self.variables, ctx),
                "input": render(agent.input, results, self.variables, ctx)
                if agent.input
                else agent.input,
                "config": config,
            }
        )
        if self.wants_context(agent_id):
            given = dependency_context(agent, self.agents, self.tasks, results.issued)
            if given is not None:
                rendered = rendered.model_copy(update={"input": given})
        return rendered, list(dict.fromkeys(results.issued))

    def settings_for(self, agent_id: str) -> Any:
        return activity_settings(self.agents[agent_id].config, self.options)

    def uses_workspace(self, agent_id: str) -> bool:
        """Does this agent work in the run's workspace (files, commands, MCP servers)? Such
        agents run where the workspace lives; the others (llm, browser, http) anywhere."""
        agent = self.agents[agent_id]
        direct = tool_name(agent.config) if agent.config else None
        if direct is not None:
            return direct in WORKSPACE_TOOLS or is_mcp(direct)
        role = self.roles().get(agent.name)
        tools = set(role.allowed_tools + role.requested_tools) if role else set()
        return bool(tools & WORKSPACE_TOOLS) or any(is_mcp(t) for t in tools)

    def queue_kind(self, agent_id: str) -> str:
        name = self.agents[agent_id].name
        return name if name in QUEUE_KINDS else "llm"

    def agent_input(
        self,
        agent_id: str,
        rendered: WorkflowAgent,
        dispatch: int,
        markers: list[str],
        execution_id: str | None,
        error_attempts: int = 0,
    ) -> AgentInput:
        task = self.tasks[agent_id]
        windows = stall_windows(self.agents[agent_id].config, self.options.stall)
        # a person's decisions go to the next dispatch only; what it was given is kept, so the
        # worker can check its input against the leader's word (xsky/leader/grants.py)
        approvals = self.state.approvals.pop(task.id, [])
        if approvals:
            self.state.granted[task.id] = Granted(dispatch=dispatch, approvals=approvals)
        else:
            self.state.granted.pop(task.id, None)
        return AgentInput(
            run_id=self.run_id,
            execution_id=execution_id,
            task_id=task.id,
            agent=rendered,
            plan_version=self.state.plan_version,
            dispatch=dispatch,
            workspace=self.options.workspace,
            workspace_of=self.input.resume.workspace_of if self.input.resume else None,
            artifact_threshold=self.options.artifact_threshold,
            progress_interval=max(0.2, min(5.0, windows.nudge_after / 3)),
            answers=list(self.state.answers.get(task.id, [])),
            approvals=list(approvals),
            nudges=list(self._nudges.get(task.id, [])),
            role=self.roles().get(self.agents[agent_id].name),
            role_approved=self._plan_role_approved(self.agents[agent_id].name),
            # The input's rules (whoever started the run wrote them, approvedRules included) and
            # the answers people gave in this run travel apart, so decisions say which decided.
            permissions=self.input.permissions.model_copy(
                update={
                    "run_rules": self._run_rules(),
                    "approved_rules": list(self.state.approved_rules),
                }
            ),
            allow_hosts=list(self.options.allow_hosts),
            goal=self.state.plan.task_prompt or self.state.plan.name or None,
            markers=markers,
            error_attempts=error_attempts,
            # what this dispatch may spend (a run with a budget: xsky/leader/budget.py)
            budget_share=flight.share if (flight := self.flights.get(agent_id)) else None,
        )

    def _run_rules(self) -> list[str]:
        """The rules of the run's input (whoever started the run wrote them, approvedRules
        included); the answers people gave in this run travel apart, so decisions say which."""
        given = self.input.permissions
        return list(dict.fromkeys(given.run_rules + [a.rule for a in given.approved_rules]))

    def grants(self, req: GrantsRequest) -> Grants:
        """What the leader gave ``req``'s dispatch (the ``grants`` query a worker asks before it
        honours an approval its input carries). Read only."""
        task = self.task_by_id(req.task_id)
        granted = self.state.granted.get(req.task_id)
        approvals = granted.approvals if granted and granted.dispatch == req.dispatch else []
        name = self.agents[task.agent_id].name if task and task.agent_id in self.agents else ""
        approved = bool(name) and self._plan_role_approved(name)
        return Grants(
            approvals=list(approvals),
            run_rules=self._run_rules(),
            approved_rules=list(self.state.approved_rules),
            allow_hosts=list(self.options.allow_hosts),
            role_approved=approved,
            role=self.roles().get(name) if approved else None,
        )
