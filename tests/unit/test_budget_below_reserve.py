"""A run's token limit below what a model agent reserves to start (its cap, else the run's
reserve, 4,096 by default): `run --budget tokens=4000` started, and the run waited at once on
"the next agent needs 4,096"; the start warned only that the leader's checks would be skipped.
`run` says before it starts which agents can never start, and how to mend it."""

from __future__ import annotations

from cli.runs_cmd import unstartable_warning
from xsky.plan.budget import Limits, RunBudget
from xsky.plan.xml import parse_workflow

PLAN = parse_workflow(
    '<workflow name="b">'
    '<agent name="llm" id="1"><task>a</task><input>x</input></agent>'
    '<agent name="llm" id="2"><task>b</task><input>x</input>'
    '<config>{"budget": {"tokens": 1000}}</config></agent>'
    '<agent name="shell" id="3"><task>c</task><config>{"tool": "shell", "command": "true"}</config></agent>'
    "</workflow>"
)


def test_a_limit_below_an_agents_reserve_is_said_with_the_agents_that_cannot_start() -> None:
    said = unstartable_warning(RunBudget(run=Limits(tokens=4000)), PLAN)
    assert said is not None
    # T-2 has a cap of its own (1,000) that fits; T-3 is a direct tool (it spends nothing)
    assert "less than what 1 model agent(s) (T-1) reserve to start — up to 4,096 tokens" in said
    assert "give --budget tokens=4096 or more, a smaller --budget-reserve" in said
    assert unstartable_warning(RunBudget(run=Limits(tokens=4000), reserve=2000), PLAN) is None
    assert unstartable_warning(RunBudget(run=Limits(tokens=5000)), PLAN) is None
    assert unstartable_warning(RunBudget(run=Limits(usd=1)), PLAN) is None  # no token limit
    capped = RunBudget(run=Limits(tokens=800), per_agent=Limits(tokens=500))
    assert unstartable_warning(capped, PLAN) is None


def test_an_agent_cap_above_the_reserve_starts_with_the_reserve_and_is_not_said() -> None:
    # The leader admits a capped agent with the least of its cap and the reserve: a cap of
    # 50,000 under a run of 20,000 starts with 4,096 — the warning said it could never start.
    roomy = RunBudget(run=Limits(tokens=20000), per_agent=Limits(tokens=50000))
    assert unstartable_warning(roomy, PLAN) is None
    tight = RunBudget(run=Limits(tokens=3000), per_agent=Limits(tokens=50000))
    said = unstartable_warning(tight, PLAN)
    assert said is not None and "up to 4,096 tokens" in said
