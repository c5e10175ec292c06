"""What `run` is given besides its plan is checked before anything starts: a delegated rule
for a tool that does not exist is refused, as `permissions check` refuses that tool; a role
budget for a role that does not exist is refused, one for a role no agent has yet warned of."""

from __future__ import annotations

import argparse

import pytest

from cli.runs_cmd import role_budget_warnings, run_options
from xsky.errors import UsageError
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import RunOptions
from xsky.security.roles import BUILTIN_ROLES


def _options(*delegate: str) -> argparse.Namespace:
    return argparse.Namespace(delegate=list(delegate), allow_host=[], role_budget=[])


@pytest.mark.parametrize(
    ("rule", "said"),
    [
        ("shel(ls)", "--delegate 'shel(ls)': unknown tool 'shel' — did you mean shell?"),
        ("Shell", "--delegate 'Shell': unknown tool 'Shell' — did you mean shell?"),
        ("bogus", "--delegate 'bogus': unknown tool 'bogus'; tools: browser_navigate,"),
    ],
)
def test_a_rule_for_a_tool_that_does_not_exist_is_refused(rule: str, said: str) -> None:
    # (it was taken, and covered nothing: the run started with nothing delegated)
    with pytest.raises(UsageError) as refused:
        run_options(_options(rule))
    assert str(refused.value).startswith(said)


@pytest.mark.parametrize(
    "rule", ["shell(make test:*)", "file_*", "*", "mcp__fs", "mcp__fs__read_file", "http_get"]
)
def test_rules_for_tools_that_exist_are_taken(rule: str) -> None:
    assert run_options(_options(rule)).delegate == [rule]


def _plan() -> Workflow:
    agents = [
        WorkflowAgent(id="1", name="shell", task="a", config={"tool": "shell", "command": "ls"}),
        WorkflowAgent(id="2", name="llm", task="b", depends_on=["1"]),
    ]
    return Workflow(name="p", task_id="p", agents=agents)


def _role_budgets(*given: str) -> RunOptions:
    return run_options(argparse.Namespace(delegate=[], allow_host=[], role_budget=list(given)))


def test_a_role_budget_for_a_role_that_does_not_exist_is_refused() -> None:
    # (it was taken silently, and capped nothing)
    with pytest.raises(UsageError) as refused:
        role_budget_warnings(_role_budgets("nosuchrole:tokens=5"), _plan(), set(BUILTIN_ROLES))
    assert str(refused.value) == (
        "--role-budget nosuchrole: no role is named 'nosuchrole'; the plan's agents are "
        "shell, llm; nothing was started"
    )
    with pytest.raises(UsageError) as refused:
        role_budget_warnings(_role_budgets("shel:tokens=5"), _plan(), set(BUILTIN_ROLES))
    assert "--role-budget shel: no role is named 'shel' — did you mean shell?" in str(refused.value)


def test_a_role_no_agent_has_yet_is_a_warning_and_one_an_agent_has_is_quiet() -> None:
    said = role_budget_warnings(
        _role_budgets("verify:tokens=5", "llm:tokens=9"), _plan(), set(BUILTIN_ROLES)
    )
    assert said == [
        "--role-budget verify: no agent of this plan has that role (the plan's agents are "
        "shell, llm); it caps only agents a replan gives it"
    ]
