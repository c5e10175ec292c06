"""What an attempt is given: the agent rendered with its dependencies' results, its role, what
people told it (answers, approvals, nudges), its share of the budget, its activity settings and
its queue — and, for the worker that checks an input against it, what a dispatch was given."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from xsky.artifacts import marker
from xsky.kinds import queue_kind
from xsky.leader.board import TaskBoard
from xsky.leader.briefs import Briefs
from xsky.leader.budget import Budget
from xsky.leader.cast import Cast
from xsky.leader.commands import LOCAL_SECONDS, SATISFIED
from xsky.leader.dep_context import dependency_context, unread_dependencies, wants_context
from xsky.leader.grants import Grants, GrantsRequest
from xsky.leader.plans import PlanBook
from xsky.leader.tasks import TaskState
from xsky.plan.agent_config import RetryOptions, config_problems, stall_windows, tool_name
from xsky.plan.loops import LoopError
from xsky.plan.models import WorkflowAgent
from xsky.plan.variables import (
    fields_share_a_value,
    item_values,
    pastes_raw_item,
    render,
    render_command,
    render_config,
)
from xsky.runs import AgentInput, RunInput, RunOptions
from xsky.security.mcp import is_mcp
from xsky.security.permissions import ApprovedRule, PermissionSettings
from xsky.security.tools import WORKSPACE_TOOLS


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


@dataclass(frozen=True)
class ActivitySettings:
    start_to_close: float
    heartbeat: float
    retry: RetryOptions


def activity_settings(config: dict[str, Any] | None, options: RunOptions) -> ActivitySettings:
    """Per-agent timeouts and retries: the agent's config over the run's defaults."""
    problems = config_problems(config)
    if problems:
        raise ValueError("; ".join(problems))
    cfg = config or {}
    retry = options.retry
    if "retry" in cfg:
        retry = RetryOptions.model_validate(
            {**options.retry.model_dump(by_alias=True), **cfg["retry"]}
        )
    return ActivitySettings(
        start_to_close=float(cfg.get("startToCloseTimeout", options.start_to_close_timeout)),
        heartbeat=float(cfg.get("heartbeatTimeout", options.heartbeat_timeout)),
        retry=retry,
    )


class AttemptInputs:
    """The input of an agent's attempt, made from the board, the plan, the cast, the briefs and
    the budget."""

    def __init__(
        self,
        inp: RunInput,
        run_id: str,
        board: TaskBoard,
        plans: PlanBook,
        cast: Cast,
        briefs: Briefs,
        budget: Budget,
        variables: Mapping[str, str],
    ) -> None:
        self.input = inp
        self.options = inp.options
        self.run_id = run_id
        self.board = board
        self.plans = plans
        self.cast = cast
        self.briefs = briefs
        self.budget = budget
        self.variables = variables
        # the workflow's patch question (LeaderCore.configure), asked only where it matters
        self.patched: Callable[[str], bool] = lambda patch_id: True
        # the permissions attempts are given, and the approved rules they were made with
        self._given: tuple[list[ApprovedRule], PermissionSettings] | None = None

    def templated_command(self, agent_id: str) -> bool:
        """Does this agent's shell command get values beside it (see :meth:`render`)?"""
        config = self.board.agents[agent_id].config
        if not config:
            return False
        return tool_name(config) == "shell" and isinstance(config.get("command"), str)

    def runs_locally(self, agent_id: str) -> bool:
        """Cheap and side-effect free: a ``noop`` of at most LOCAL_SECONDS may run as a local
        activity on the leader's worker (no task queue round trip, no heartbeat needed)."""
        config = self.board.agents[agent_id].config
        if not self.options.local_tools or not config or tool_name(config) != "noop":
            return False
        seconds = config.get("seconds", 0)
        return isinstance(seconds, int | float) and 0 <= seconds <= LOCAL_SECONDS

    def wants_context(self, agent_id: str) -> bool:
        """Does this agent get its dependencies' results as input (see :mod:`xsky.leader.dep_context`)?"""
        return wants_context(self.board.agents[agent_id])

    def render(self, agent_id: str) -> tuple[WorkflowAgent, list[str]]:
        """The agent with its references rendered, and the artifact markers it was given.

        A templated shell command's values travel beside it as variables (data is never pasted
        into code); an agent with no input gets its dependencies' results."""
        agent = self.board.agents[agent_id]
        results = _Results(self.board.tasks)
        ctx = self.input.context
        # A forEach item's {{item}}: a value like a variable's (never pasted into a command)
        values = (
            {**self.variables, **item_values(agent)} if agent.item is not None else self.variables
        )
        config = agent.config
        if agent.config:
            config = render_config(agent.config, results, values, ctx)
            if self.templated_command(agent_id):
                code = agent.config["command"]
                # {{raw:item}} is given as data since v0.11.11 (it pasted an item — a result,
                # a page's text — as code); asked only of a command that names it
                before = pastes_raw_item(code) and not self.patched("raw-item-given-as-data")
                # each field of a result its own variable since v0.12.3 (they shared the
                # first one's); asked only of a command that names two fields of one result
                by_field = not fields_share_a_value(code) or self.patched("shell-values-by-field")
                command, shell_values = render_command(
                    code, results, values, ctx, before, by_field=by_field
                )
                config = {
                    **config,
                    "command": command,
                    **({"values": shell_values} if shell_values else {}),
                }
        rendered = agent.model_copy(
            update={
                "task": render(agent.task, results, values, ctx),
                "input": render(agent.input, results, values, ctx) if agent.input else agent.input,
                "config": config,
            }
        )
        if self.wants_context(agent_id):
            given = dependency_context(agent, self.board.agents, self.board.tasks, results.issued)
            if given is not None:
                rendered = rendered.model_copy(update={"input": given})
        elif (unread := unread_dependencies(agent)) and self.patched(
            "eko-inputs-keep-dependencies"
        ):
            given = dependency_context(
                agent, self.board.agents, self.board.tasks, results.issued, only=unread
            )
            if given is not None:  # its named values, and what it depends on, as Eko shows it
                rendered = rendered.model_copy(update={"input": f"{rendered.input}\n\n{given}"})
        return rendered, list(dict.fromkeys(results.issued))

    def loop_list(self, agent_id: str) -> str:
        """The text of the list forEach agent ``agent_id`` runs over (its ``forEach``
        rendered); :class:`LoopError` when that is a result kept only in the artifact store,
        which the leader does not read."""
        agent = self.board.agents[agent_id]
        assert agent.for_each is not None
        results = _Results(self.board.tasks)
        text = render(agent.for_each, results, self.variables, self.input.context)
        if results.issued:
            raise LoopError(
                f"forEach of agent {agent_id}: the list {agent.for_each.strip()} is over the "
                f"{self.options.artifact_threshold:,}-byte artifact threshold, and the leader reads "
                "a list inline only; raise the run's artifact threshold (XSKY_ARTIFACT_THRESHOLD) "
                "or have the list's agent return a shorter list"
            )
        return text

    def settings_for(self, agent_id: str) -> Any:
        settings = activity_settings(self.board.agents[agent_id].config, self.options)
        task = self.board.tasks.get(agent_id)
        if task is not None and task.timeout is not None:  # a person's (set_task_timeout)
            return replace(settings, start_to_close=task.timeout)
        return settings

    def uses_workspace(self, agent_id: str) -> bool:
        """Does this agent work in the run's workspace (files, commands, MCP servers)? Such
        agents run where the workspace lives; the others (llm, browser, http) anywhere."""
        agent = self.board.agents[agent_id]
        direct = tool_name(agent.config) if agent.config else None
        if direct is not None:
            return direct in WORKSPACE_TOOLS or is_mcp(direct)
        role = self.cast.roles().get(agent.name)
        tools = set(role.allowed_tools + role.requested_tools) if role else set()
        return bool(tools & WORKSPACE_TOOLS) or any(is_mcp(t) for t in tools)

    def queue_kind(self, agent_id: str) -> str:
        return queue_kind(self.board.agents[agent_id].name)

    def agent_input(
        self,
        agent_id: str,
        rendered: WorkflowAgent,
        dispatch: int,
        markers: list[str],
        execution_id: str | None,
        error_attempts: int = 0,
    ) -> AgentInput:
        task = self.board.tasks[agent_id]
        name = self.board.agents[agent_id].name
        windows = stall_windows(self.board.agents[agent_id].config, self.options.stall)
        # a person's decisions go to the next dispatch only (remembered as given to it)
        approvals = self.briefs.hand_over(task.id, dispatch)
        plan = self.plans.plan
        return AgentInput(
            run_id=self.run_id,
            execution_id=execution_id,
            task_id=task.id,
            agent=rendered,
            plan_version=self.plans.version,
            dispatch=dispatch,
            workspace=self.options.workspace,
            workspace_of=self.input.resume.workspace_of if self.input.resume else None,
            workspace_from=self.input.resume.workspace_from if self.input.resume else None,
            artifact_threshold=self.options.artifact_threshold,
            progress_interval=max(0.2, min(5.0, windows.nudge_after / 3)),
            answers=self.briefs.answers_for(task.id),
            approvals=list(approvals),
            nudges=self.briefs.nudges_for(task.id),
            role=self.cast.roles().get(name),
            role_approved=self.cast.plan_role_approved(name),
            # The input's rules (whoever started the run wrote them, approvedRules included) and
            # the answers people gave in this run travel apart, so decisions say which decided.
            permissions=self._permissions(),
            allow_hosts=list(self.options.allow_hosts),
            goal=plan.task_prompt or plan.name or None,
            markers=markers,
            error_attempts=error_attempts,
            resume=task.fresh != dispatch,  # reset_task --fresh: this dispatch from scratch
            # what this dispatch may spend (a run with a budget: xsky/leader/budget.py)
            budget_share=flight.share if (flight := self.budget.flights.get(agent_id)) else None,
        )

    def _permissions(self) -> PermissionSettings:
        """The permissions an attempt is given: the input's, with its rules and the rules people
        approved in this run apart. The same for every attempt until people approve another
        rule, so made once for each list of approved rules (an attempt's input is sent, never
        changed: attempts may share it)."""
        approved = self.briefs.state.approved_rules
        if self._given is None or self._given[0] != approved:
            permissions = self.input.permissions.model_copy(
                update={"run_rules": self._run_rules(), "approved_rules": list(approved)}
            )
            self._given = (list(approved), permissions)
        return self._given[1]

    def _run_rules(self) -> list[str]:
        """The rules of the run's input (whoever started the run wrote them, approvedRules
        included); the answers people gave in this run travel apart, so decisions say which."""
        given = self.input.permissions
        return list(dict.fromkeys(given.run_rules + [a.rule for a in given.approved_rules]))

    def grants(self, req: GrantsRequest) -> Grants:
        """What the leader gave ``req``'s dispatch (the ``grants`` query a worker asks before it
        honours an approval its input carries). Read only."""
        task = self.board.task_by_id(req.task_id)
        agent = self.board.agents.get(task.agent_id) if task is not None else None
        name = agent.name if agent is not None else ""
        approved = bool(name) and self.cast.plan_role_approved(name)
        return Grants(
            approvals=self.briefs.given(req.task_id, req.dispatch),
            run_rules=self._run_rules(),
            approved_rules=list(self.briefs.state.approved_rules),
            allow_hosts=list(self.options.allow_hosts),
            role_approved=approved,
            role=self.cast.roles().get(name) if approved else None,
        )
