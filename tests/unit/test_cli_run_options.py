"""What `run` is given besides its plan is checked before anything starts: a delegated rule
for a tool that does not exist is refused, as `permissions check` refuses that tool."""

from __future__ import annotations

import argparse

import pytest

from cli.runs_cmd import run_options
from xsky.errors import UsageError


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
